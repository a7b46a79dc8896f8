// The exporters' GELU, x * 0.5 * (1 + erf(x / sqrt 2)) in five ops (Div, Erf, Add, Mul, Mul, in
// whichever order and association the model wrote it), becomes one gelu op. Fused, the chain
// cost as much as the matrix product before it in ViT's MLP (issue 16: the bias + GELU epilogue
// took the FFN-up GEMM from 0.064 to 0.105 ms at batch 32), and in f16 it rounded after each op.
#include "conflux/ops/elementwise.hpp"
#include "passes/scalar_factors.hpp"
#include "passes/simplify_rewrites.hpp"

#include <cmath>
#include <vector>

namespace conflux::simplify_detail {

namespace {

using op::elementwise_kind;
using passes_detail::elementwise_kind_of;
using passes_detail::scalar_literal;
using passes_detail::scaled_by_scalar;

// Constants stored in f16 or bf16 keep about three digits.
bool close_to(double value, double expected) {
    return std::abs(value - expected) <= 2e-3 * std::abs(expected);
}

// The factors of a product: the operands of `ins` through nested single-use multiplications
// and divisions by a scalar; the scalar factors multiplied into `scalar`.
void collect_factors(instruction_ref ins, bool root, std::vector<instruction_ref>& factors,
                     double& scalar) {
    const auto kind = elementwise_kind_of(ins);
    const bool inner = root || ins->outputs().size() == 1;
    if (inner && kind == elementwise_kind::mul) {
        for (instruction_ref in : ins->inputs())
            collect_factors(in, false, factors, scalar);
        return;
    }
    if (inner && kind == elementwise_kind::div) {
        if (auto d = scalar_literal(ins->inputs()[1]); d && *d != 0) {
            scalar /= *d;
            collect_factors(ins->inputs()[0], false, factors, scalar);
            return;
        }
    }
    if (auto c = scalar_literal(ins)) {
        scalar *= *c;
        return;
    }
    factors.push_back(ins);
}

// 1 + erf(x * c) with c = 1 / sqrt 2, every op used once: x.
instruction_ref erf_term_argument(instruction_ref h) {
    if (h->outputs().size() != 1 || elementwise_kind_of(h) != elementwise_kind::add) return nullptr;
    for (std::size_t i = 0; i < 2; ++i) {
        const auto one = scalar_literal(h->inputs()[1 - i]);
        const instruction_ref e = h->inputs()[i];
        if (!one || *one != 1 || e->outputs().size() != 1 ||
            elementwise_kind_of(e) != elementwise_kind::erf)
            continue;
        const instruction_ref s = e->inputs()[0];
        const auto scaled = scaled_by_scalar(s);
        if (s->outputs().size() == 1 && scaled && close_to(scaled->second, 1 / std::sqrt(2.0)))
            return scaled->first;
    }
    return nullptr;
}

} // namespace

bool find_gelu(module& m, instruction_ref ins) {
    const auto kind = elementwise_kind_of(ins);
    if (kind != elementwise_kind::mul && kind != elementwise_kind::div) return false;
    std::vector<instruction_ref> factors;
    double scalar = 1;
    collect_factors(ins, true, factors, scalar);
    if (factors.size() != 2 || !close_to(scalar, 0.5)) return false;
    for (std::size_t i = 0; i < 2; ++i) {
        const instruction_ref x = factors[1 - i];
        if (erf_term_argument(factors[i]) != x) continue;
        const auto gelu =
            m.insert_instruction(ins, op::make_elementwise(elementwise_kind::gelu), {x});
        replace(m, ins, gelu);
        return true;
    }
    return false;
}

} // namespace conflux::simplify_detail
