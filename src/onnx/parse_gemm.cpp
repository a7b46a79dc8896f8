// MatMul and Gemm -> op::dot, with transposes as views and alpha/beta/C as elementwise work
// after the anchor (so the gemm fusion can take them as epilogue).
#include "onnx/node_context.hpp"

#include "conflux/ops/dot.hpp"
#include "conflux/ops/views.hpp"

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;
using K = op::elementwise_kind;

outputs build_matmul(node_context& c) {
    auto a = c.input(0);
    auto b = c.input(1);
    const bool a_vector = a->get_shape().rank() == 1;
    const bool b_vector = b->get_shape().rank() == 1;
    if (a->get_shape().rank() == 0 || b->get_shape().rank() == 0)
        c.fail("operands must have rank 1 or more, got ", to_string(a->get_shape()), " and ",
               to_string(b->get_shape()));
    // numpy matmul: a 1-D A is a row vector, a 1-D B a column vector; the added axis goes away
    // again afterwards.
    if (a_vector) a = c.add(op::unsqueeze{{0}}, {a});
    if (b_vector) b = c.add(op::unsqueeze{{1}}, {b});
    auto y = c.add(op::dot{}, {a, b});
    auto rank = std::int64_t(y->get_shape().rank());
    std::vector<std::int64_t> squeeze;
    if (a_vector) squeeze.push_back(rank - 2);
    if (b_vector) squeeze.push_back(rank - 1);
    if (!squeeze.empty()) y = c.add(op::squeeze{squeeze}, {y});
    return {y};
}

outputs build_gemm(node_context& c) {
    auto a = c.input(0);
    auto b = c.input(1);
    if (a->get_shape().rank() != 2 || b->get_shape().rank() != 2)
        c.fail("A and B must be 2-D, got ", to_string(a->get_shape()), " and ",
               to_string(b->get_shape()));
    if (c.attr_int("transA", 0) != 0) a = c.add(op::transpose{{1, 0}}, {a});
    if (c.attr_int("transB", 0) != 0) b = c.add(op::transpose{{1, 0}}, {b});
    const float alpha = c.attr_float("alpha", 1.0f);
    const float beta = c.attr_float("beta", 1.0f);
    const dtype type = a->get_shape().type();

    auto y = c.add(op::dot{}, {a, b});
    if (alpha != 1.0f) y = c.elementwise(K::mul, {y, c.scalar(type, alpha)});
    if (c.has_input(2) && beta != 0.0f) {
        auto bias = c.input(2);
        if (beta != 1.0f) bias = c.elementwise(K::mul, {bias, c.scalar(type, beta)});
        // C broadcasts to [M, N] (unidirectionally).
        const auto& lens = y->get_shape().lens();
        if (op::broadcast_lens("Gemm", {lens, bias->get_shape().lens()}) != lens)
            c.fail("C ", to_string(bias->get_shape()), " does not broadcast to the result ",
                   to_string(y->get_shape()));
        y = c.add(op::make_elementwise(K::add), {y, c.broadcast_to(bias, lens)});
    }
    return {y};
}

} // namespace

void add_gemm_ops(op_table& t) {
    t["MatMul"] = {2, 2, build_matmul};
    t["Gemm"] = {2, 3, build_gemm};
}

} // namespace conflux::onnx
