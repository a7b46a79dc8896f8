// top_k: one thread per row along the axis, selecting k times. Pass p takes the element ranked
// first among those ranked after pass p - 1's pick; cx_top_k_before is a strict total order on
// (value, index), so every pick is the reference's, ties and NaNs included, with no per-row
// memory. O(k * n) per row: correct first, for the small k of the models that use it.
#include "cuda/codegen/generator.hpp"

#include "conflux/ops/top_k.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"

namespace conflux::cuda {

namespace {

kernel_source generate_top_k(const kernel_request& r) {
    const auto* op = r.op->get_if<op::top_k>();
    CONFLUX_ASSERT(op != nullptr, "generate_top_k for ", r.op->name());
    CONFLUX_ASSERT(r.inputs.size() == 1 && r.outputs.size() == 2, r.op->name(),
                   ": one input and two outputs (values, indices) expected");
    const shape& x = r.inputs[0];
    const shape expected = op->compute_shape({x});
    for (std::size_t o = 0; o < 2; ++o)
        CONFLUX_ASSERT(r.outputs[o].lens() == expected.sub_shapes()[o].lens() &&
                           r.outputs[o].type() == expected.sub_shapes()[o].type(),
                       r.op->name(), ": output ", o, " is ", to_string(r.outputs[o]));
    const shape& values = r.outputs[0];
    const shape& indices = r.outputs[1];
    if (values.elements() == 0) return text::empty_kernel(r);
    const auto axis = std::size_t(op->axis);
    const std::size_t n = x.lens()[axis];

    const text::axis_rows rows = text::rows_along(x, axis);

    const std::string c = compute_type(x.type());
    const std::string before =
        std::string("cx_top_k_before<") + (op->largest ? "true" : "false") + ">";
    const std::string x_at = "x_row + " + text::offset({"j"}, {n}, {x.strides()[axis]});
    const std::string in = "    ";
    const std::string in2 = "        ";
    const std::string in3 = "            ";
    std::string body = text::thread_per_element(rows.count, in) + rows.decompose_row(in);
    body += rows.start("x_row", x, in) + rows.start("v_row", values, in) +
            rows.start("i_row", indices, in);
    body += in + c + " last = " + compute_literal(x.type(), 0) + ";\n";
    body += in + "long long last_index = -1;\n";
    body += in + "for (cx_index p = 0; p < " + text::integer_literal(op->k) + "; ++p) {\n";
    body += in2 + c + " best = " + compute_literal(x.type(), 0) + ";\n";
    body += in2 + "long long best_index = -1;\n";
    body += in2 + "for (cx_index j = 0; j < " + text::integer_literal(n) + "; ++j) {\n";
    body += in3 + "const " + c + " v = cx_load(in0 + " + x_at + ");\n";
    body += in3 + "if (last_index >= 0 && !" + before + "(last, last_index, v, j)) continue;\n";
    body += in3 + "if (best_index < 0 || " + before + "(v, j, best, best_index)) {\n";
    body += in3 + "    best = v;\n";
    body += in3 + "    best_index = j;\n";
    body += in3 + "}\n";
    body += in2 + "}\n";
    // k <= n, so every pass finds an element; the value is copied as stored, bit for bit.
    body += in2 + "const cx_index j = static_cast<cx_index>(best_index);\n";
    body += in2 + "out0[v_row + " + text::offset({"p"}, {op->k}, {values.strides()[axis]}) +
            "] = in0[" + x_at + "];\n";
    body += in2 + "out1[i_row + " + text::offset({"p"}, {op->k}, {indices.strides()[axis]}) +
            "] = best_index;\n";
    body += in2 + "last = best;\n";
    body += in2 + "last_index = best_index;\n";
    body += in + "}\n";
    return text::make_kernel(r, body, text::linear_launch(rows.count, text::elementwise_block));
}

} // namespace

void add_top_k_generators() {
    add_generator("top_k", generate_top_k);
}

} // namespace conflux::cuda
