// cumsum: one thread per row along the axis, scanning it sequentially as the reference does, in
// float for f16/bf16/f32, double for f64 and wrapping long long for integers (cx_reduce_add), so
// every result is the reference's, integers exactly.
#include "cuda/codegen/generator.hpp"

#include "conflux/ops/scan.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"

namespace conflux::cuda {

namespace {

kernel_source generate_cumsum(const kernel_request& r) {
    const auto& op = text::single_operand_op<op::cumsum>(r, "generate_cumsum");
    const shape& x = r.inputs[0];
    const shape& y = r.outputs[0];
    if (y.elements() == 0) return text::empty_kernel(r);
    const auto axis = std::size_t(op.axis);
    const std::size_t n = x.lens()[axis];

    const text::axis_rows rows = text::rows_along(x, axis);

    const std::string c = compute_type(x.type());
    const std::string in = "    ";
    const std::string in2 = "        ";
    std::string body = text::thread_per_element(rows.count, in) + rows.decompose_row(in);
    body += rows.start("x_row", x, in) + rows.start("y_row", y, in);
    body += in + c + " acc = " + compute_literal(x.type(), 0) + ";\n";
    body += in + "for (cx_index t = 0; t < " + text::integer_literal(n) + "; ++t) {\n";
    body += in2 + "const cx_index j = " +
            (op.reverse ? text::integer_literal(n - 1) + " - t" : std::string("t")) + ";\n";
    const std::string x_at = "in0 + x_row + " + text::offset({"j"}, {n}, {x.strides()[axis]});
    const std::string y_at = "out0 + y_row + " + text::offset({"j"}, {n}, {y.strides()[axis]});
    const std::string add = in2 + "acc = cx_reduce_add(acc, cx_load(" + x_at + "));\n";
    const std::string store = in2 + "cx_store(" + y_at + ", acc);\n";
    body += op.exclusive ? store + add : add + store;
    body += in + "}\n";
    return text::make_kernel(r, body, text::linear_launch(rows.count, text::elementwise_block));
}

} // namespace

void add_scan_generators() {
    add_generator("cumsum", generate_cumsum);
}

} // namespace conflux::cuda
