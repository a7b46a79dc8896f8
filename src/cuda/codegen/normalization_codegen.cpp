// layer_normalization: one row (the axes from `axis` on) per block, or per thread for short
// rows; two passes for mean and variance, as the reference does (E[x^2] - E[x]^2 cancels badly),
// then a third that writes. Statistics in float (double for f64).
#include "cuda/codegen/generator.hpp"

#include "conflux/ops/normalization.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"

namespace conflux::cuda {

namespace {

kernel_source generate_layer_norm(const kernel_request& r) {
    const auto* op = r.op->get_if<op::layer_norm>();
    CONFLUX_ASSERT(op != nullptr, "generate_layer_norm for ", r.op->name());
    CONFLUX_ASSERT((r.inputs.size() == 2 || r.inputs.size() == 3) && r.outputs.size() == 1,
                   r.op->name(), ": x, scale, optional bias and one output expected");
    const shape& x = r.inputs[0];
    const shape& y = r.outputs[0];
    CONFLUX_ASSERT(y.lens() == x.lens(), r.op->name(), ": output ", to_string(y),
                   " does not match input ", to_string(x));
    if (y.elements() == 0) return text::empty_kernel(r);

    const std::size_t rank = x.rank();
    const auto signed_rank = std::int64_t(rank);
    const auto axis = std::size_t(op->axis < 0 ? op->axis + signed_rank : op->axis);
    CONFLUX_ASSERT(axis < rank, r.op->name(), ": axis ", op->axis, " for rank ", rank);
    const dims outer_lens(x.lens().begin(), x.lens().begin() + std::ptrdiff_t(axis));
    const dims row_lens(x.lens().begin() + std::ptrdiff_t(axis), x.lens().end());
    std::size_t rows = 1, row_length = 1;
    for (auto l : outer_lens)
        rows *= l;
    for (auto l : row_lens)
        row_length *= l;

    const std::vector<std::string> names = text::names("a", rank);
    const std::vector<std::string> outer_names(names.begin(), names.begin() + std::ptrdiff_t(axis));
    const std::vector<std::string> row_names(names.begin() + std::ptrdiff_t(axis), names.end());
    // Offset in `s` (x or y) of the coordinates of axes [begin, end).
    auto offset_in = [&](const shape& s, std::size_t begin, std::size_t end) {
        const dims lens(x.lens().begin() + std::ptrdiff_t(begin),
                        x.lens().begin() + std::ptrdiff_t(end));
        const dims strides(s.strides().begin() + std::ptrdiff_t(begin),
                           s.strides().begin() + std::ptrdiff_t(end));
        const std::vector<std::string> index(names.begin() + std::ptrdiff_t(begin),
                                             names.begin() + std::ptrdiff_t(end));
        return text::offset(index, lens, strides);
    };
    // scale and bias are right-aligned to x's trailing axes; their len-1 axes broadcast.
    auto parameter_offset = [&](const shape& p) {
        CONFLUX_ASSERT(p.rank() <= row_lens.size(), r.op->name(), ": parameter ", to_string(p));
        const std::vector<std::string> index(names.end() - std::ptrdiff_t(p.rank()), names.end());
        return text::offset(index, p.lens(), p.strides());
    };

    const std::vector<std::size_t> row_axes = [&] {
        std::vector<std::size_t> a;
        for (std::size_t i = axis; i < rank; ++i)
            a.push_back(i);
        return a;
    }();
    const text::row_mapping mapping =
        text::choose_row_mapping(rows, row_length, text::fastest_axis_in(x, row_axes));
    const std::string c = compute_type(x.type());
    const std::string in = "    ";
    const std::string in2 = "        ";
    auto element_loop = [&](const std::string& body) {
        return in + "for (cx_index j = first; j < " + text::integer_literal(row_length) +
               "; j += step) {\n" + text::decompose("j", row_lens, row_names, in2) + in2 +
               "const " + c + " v = cx_load(in0 + x_row + " + offset_in(x, axis, rank) + ");\n" +
               body + in + "}\n";
    };
    const std::string count = "static_cast<" + c + ">(" + text::integer_literal(row_length) + ")";

    std::string body = mapping.prologue(in);
    body += text::decompose("row", outer_lens, outer_names, in);
    body += in + "const cx_index x_row = " + offset_in(x, 0, axis) + ";\n";
    body += in + "const cx_index y_row = " + offset_in(y, 0, axis) + ";\n";
    body += in + c + " sum = " + compute_literal(x.type(), 0) + ";\n";
    body += element_loop(in2 + "sum = sum + v;\n");
    body += in + "sum = " + mapping.combine("sum", "cx_op_add()") + ";\n";
    body += in + "const " + c + " mean = sum / " + count + ";\n";
    body += in + c + " squares = " + compute_literal(x.type(), 0) + ";\n";
    body += element_loop(in2 + "const " + c + " d = v - mean;\n" + in2 +
                         "squares = squares + d * d;\n");
    body += in + "squares = " + mapping.combine("squares", "cx_op_add()") + ";\n";
    body += in + "const " + c + " variance = squares / " + count + ";\n";
    body += in + "const " + c + " inv = " + compute_literal(x.type(), 1) +
            " / cx_reduce_sqrt(variance + " + compute_literal(x.type(), double(op->epsilon)) +
            ");\n";
    const std::string scale = "cx_load(in1 + " + parameter_offset(r.inputs[1]) + ")";
    // Without a bias the reference adds zeros, which turns -0 into +0; so does this.
    const std::string bias = r.inputs.size() > 2
                                 ? "cx_load(in2 + " + parameter_offset(r.inputs[2]) + ")"
                                 : compute_literal(x.type(), 0);
    body += element_loop(in2 + "cx_store(out0 + y_row + " + offset_in(y, axis, rank) +
                         ", (v - mean) * inv * " + scale + " + " + bias + ");\n");
    return text::make_kernel(r, body, mapping.launch());
}

} // namespace

void add_normalization_generators() {
    add_generator("layer_normalization", generate_layer_norm);
}

} // namespace conflux::cuda
