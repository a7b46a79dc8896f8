// layer_normalization. Rows that are dense in memory (f16, bf16, f32; scale and bias dense too),
// as every transformer's and ConvNeXt's channels-last norm is: kernels/layer_norm.cuh, a group
// of threads per row holding it in registers, vector loads. Any other row: one row (the axes
// from `axis` on) per block, or per thread for short rows; two passes for mean and variance, as
// the reference does (E[x^2] - E[x]^2 cancels badly), then a third that writes. Statistics in
// float (double for f64). RMS normalisation (not centred) skips the mean's pass.
#include "cuda/codegen/generator.hpp"

#include "conflux/ops/normalization.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"

#include <algorithm>
#include <optional>

namespace conflux::cuda {

namespace {

// Whether the axes from `axis` on are one dense block of s (len-1 axes aside).
bool dense_from(const shape& s, std::size_t axis) {
    std::size_t expected = 1;
    for (std::size_t i = s.rank(); i-- > axis;) {
        if (s.lens()[i] == 1) continue;
        if (s.strides()[i] != expected) return false;
        expected *= s.lens()[i];
    }
    return true;
}

std::size_t pow2_at_least(std::size_t n) {
    std::size_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

// The kernel for dense rows (layer_norm.cuh), or nothing when the rows are not dense or too long
// to stay in registers.
std::optional<kernel_source> dense_rows_kernel(const kernel_request& r, const op::layer_norm& op,
                                               std::size_t axis, std::size_t rows,
                                               std::size_t row_length) {
    const shape &x = r.inputs[0], &y = r.outputs[0];
    const dtype t = x.type();
    if (t != dtype::f16 && t != dtype::bf16 && t != dtype::f32) return std::nullopt;
    if (y.type() != t || !dense_from(x, axis) || !dense_from(y, axis)) return std::nullopt;
    const dtype pt = r.inputs[1].type(); // the op allows f32 parameters beside 16-bit x
    for (std::size_t i = 1; i < r.inputs.size(); ++i) {
        const shape& p = r.inputs[i];
        if (p.type() != pt || p.elements() != row_length || !dense_from(p, 0)) return std::nullopt;
    }
    // Elements per load: 16 bytes where the row length, the rows' strides and the inputs'
    // offsets allow.
    std::size_t vec = 16 / size_of(t);
    auto strides_allow = [&](const shape& s) {
        for (std::size_t i = 0; i < axis; ++i)
            if (s.lens()[i] > 1 && s.strides()[i] % vec != 0) return false;
        return true;
    };
    auto offsets_allow = [&] {
        for (std::size_t i = 0; i < r.inputs.size(); ++i)
            if (!input_aligned_to(r, i, vec)) return false;
        return true;
    };
    while (vec > 1 &&
           (row_length % vec != 0 || !strides_allow(x) || !strides_allow(y) || !offsets_allow()))
        vec /= 2;
    // A group of threads per row, about four vectors each; a row of more than 128 vectors gets
    // a block, and one that would need more than 32 values per thread the general kernel.
    const std::size_t vectors = row_length / vec;
    const std::size_t threads = std::min<std::size_t>(pow2_at_least((vectors + 3) / 4), 1024);
    const std::size_t chunks = (vectors + threads - 1) / threads;
    if (chunks * vec > 32) return std::nullopt;
    // Small problems get small blocks so that more SMs have work.
    const std::size_t block =
        threads > 32 ? threads
                     : (rows * threads >= 256 * 264 ? 256 : std::max<std::size_t>(64, threads));
    const std::size_t groups = threads > 32 ? 1 : block / threads;
    const std::size_t blocks = (rows + groups - 1) / groups;
    if (blocks > 0x7fffffffu) return std::nullopt;

    const dims outer_lens(x.lens().begin(), x.lens().begin() + std::ptrdiff_t(axis));
    const std::vector<std::string> names = text::names("a", axis);
    auto row_start = [&](const std::string& name, const shape& s) {
        const dims strides(s.strides().begin(), s.strides().begin() + std::ptrdiff_t(axis));
        std::string f = "    const auto " + name + " = [](long long row) -> long long {\n";
        if (axis > 0) {
            f += text::decompose("row", outer_lens, names, "        ");
            f += "        return " + text::offset(names, outer_lens, strides) + ";\n";
        } else {
            f += "        return 0;\n";
        }
        return f + "    };\n";
    };
    const bool has_bias = r.inputs.size() > 2;
    std::string body = row_start("x_row", x) + row_start("y_row", y);
    body += "    cx_layer_norm<" + storage_type(t) + ", " + storage_type(pt) + ", " +
            std::to_string(row_length) + ", " + std::to_string(vec) + ", " +
            std::to_string(threads) + ", " + std::to_string(block) + ", " +
            (has_bias ? "true" : "false") + ", " + (op.centered ? "true" : "false") +
            ">(in0, in1, " + (has_bias ? "in2" : "nullptr") + ", out0, " +
            compute_literal(dtype::f32, double(op.epsilon)) + ", " + text::integer_literal(rows) +
            ", x_row, y_row);\n";
    launch_dims l;
    l.grid = {unsigned(blocks), 1, 1};
    l.block = {unsigned(block), 1, 1};
    return text::make_kernel(r, body, l, {"types.cuh", "reduce.cuh", "layer_norm.cuh"});
}

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

    if (auto k = dense_rows_kernel(r, *op, axis, rows, row_length)) return *k;

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
    // Not centred (RMS normalisation): the mean is 0.
    if (op->centered) {
        body += element_loop(in2 + "sum = sum + v;\n");
        body += in + "sum = " + mapping.combine("sum", "cx_op_add()") + ";\n";
    }
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
