// The exporters' GELU, x * 0.5 * (1 + erf(x / sqrt 2)) in five ops (Div, Erf, Add, Mul, Mul, in
// whichever order and association the model wrote it), becomes one gelu op; so does the tanh
// approximation GPT-2 writes in nine, x * 0.5 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Fused, the erf chain cost as much as the matrix product before it in ViT's MLP (issue 16: the
// bias + GELU epilogue took the FFN-up GEMM from 0.064 to 0.105 ms at batch 32), and in f16 it
// rounded after each op.
#include "conflux/ops/elementwise.hpp"
#include "passes/scalar_factors.hpp"
#include "passes/simplify_rewrites.hpp"

#include <cmath>
#include <optional>
#include <vector>

namespace conflux::simplify_detail {

namespace {

using op::elementwise_kind;
using passes_detail::elementwise_kind_of;
using passes_detail::scalar_literal;
using passes_detail::scaled_by_scalar;
using passes_detail::single_use;

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

// pow(x, 3), x * x * x in either association: x.
instruction_ref cube_root_of(instruction_ref c) {
    if (!single_use(c)) return nullptr;
    const auto kind = elementwise_kind_of(c);
    if (kind == elementwise_kind::pow) {
        const auto e = scalar_literal(c->inputs()[1]);
        return e && *e == 3 ? c->inputs()[0] : nullptr;
    }
    if (kind != elementwise_kind::mul) return nullptr;
    for (std::size_t i = 0; i < 2; ++i) {
        const instruction_ref sq = c->inputs()[i], x = c->inputs()[1 - i];
        if (single_use(sq) && elementwise_kind_of(sq) == elementwise_kind::mul &&
            sq->inputs()[0] == x && sq->inputs()[1] == x)
            return x;
    }
    return nullptr;
}

// x + 0.044715 x^3, every op used once: x.
instruction_ref tanh_polynomial_argument(instruction_ref p) {
    if (!single_use(p) || elementwise_kind_of(p) != elementwise_kind::add) return nullptr;
    for (std::size_t i = 0; i < 2; ++i) {
        const instruction_ref x = p->inputs()[i], term = p->inputs()[1 - i];
        const auto scaled = single_use(term) ? scaled_by_scalar(term) : std::nullopt;
        if (scaled && close_to(scaled->second, 0.044715) && cube_root_of(scaled->first) == x)
            return x;
    }
    return nullptr;
}

struct gelu_term {
    instruction_ref x = nullptr;
    bool tanh_form = false;
};

// 1 + erf(x / sqrt 2), or 1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)) (GPT-2's NewGELU), every
// op used once.
gelu_term gelu_term_of(instruction_ref h) {
    if (!single_use(h) || elementwise_kind_of(h) != elementwise_kind::add) return {};
    for (std::size_t i = 0; i < 2; ++i) {
        const auto one = scalar_literal(h->inputs()[1 - i]);
        const instruction_ref f = h->inputs()[i];
        if (!one || *one != 1 || !single_use(f)) continue;
        const auto kind = elementwise_kind_of(f);
        if (kind != elementwise_kind::erf && kind != elementwise_kind::tanh) continue;
        const instruction_ref s = f->inputs()[0];
        const auto scaled = single_use(s) ? scaled_by_scalar(s) : std::nullopt;
        if (!scaled) continue;
        if (kind == elementwise_kind::erf && close_to(scaled->second, 1 / std::sqrt(2.0)))
            return {scaled->first, false};
        if (kind == elementwise_kind::tanh &&
            close_to(scaled->second, std::sqrt(2 / 3.14159265358979323846))) {
            if (auto x = tanh_polynomial_argument(scaled->first)) return {x, true};
        }
    }
    return {};
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
        const gelu_term term = gelu_term_of(factors[i]);
        if (term.x != x) continue;
        const auto gelu = m.insert_instruction(
            ins, op::make_elementwise(elementwise_kind::gelu, term.tanh_form ? 1.0f : 0.0f), {x});
        replace(m, ins, gelu);
        return true;
    }
    return false;
}

} // namespace conflux::simplify_detail
