// The exporters' RMS normalisation (LLaMA's and T5's RMSNorm, in the ops PyTorch writes for
//   w * (x * rsqrt(mean(x^2, -1, keepdim) + eps)),
// rsqrt as Reciprocal(Sqrt) or Div(1, Sqrt), x^2 as Pow(x, 2) or x * x) becomes one
// layer_normalization that is not centred. As written it was four launches per norm in f16
// (the square converted to f32, the mean, the rsqrt, the products), 17 of them per LLaMA run;
// as one op it is the layer-norm kernel, each row read once.
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "passes/scalar_factors.hpp"
#include "passes/simplify_rewrites.hpp"

#include <optional>
#include <vector>

namespace conflux::simplify_detail {

namespace {

using op::elementwise_kind;
using passes_detail::elementwise_kind_of;
using passes_detail::scalar_literal;
using passes_detail::single_use;

instruction_ref through_broadcast(instruction_ref ins) {
    return ins->get_operator().get_if<op::broadcast>() != nullptr && single_use(ins)
               ? ins->inputs()[0]
               : ins;
}

struct rms_match {
    std::size_t axis = 0;
    double epsilon = 0;
};

// sqrt(mean(x^2 over the trailing axes, keepdims) + eps), every op used once: the axis and eps.
std::optional<rms_match> root_mean_square_of(instruction_ref s, instruction_ref x) {
    if (!single_use(s) || elementwise_kind_of(s) != elementwise_kind::sqrt) return std::nullopt;
    const instruction_ref a = s->inputs()[0];
    if (!single_use(a) || elementwise_kind_of(a) != elementwise_kind::add) return std::nullopt;
    for (std::size_t i = 0; i < 2; ++i) {
        const auto eps = scalar_literal(a->inputs()[1 - i]);
        const instruction_ref mean = through_broadcast(a->inputs()[i]);
        const auto* r = mean->get_operator().get_if<op::reduce>();
        if (!eps || !r || !single_use(mean) || r->kind != op::reduce_kind::mean || !r->keepdims ||
            r->axes.empty())
            continue;
        const std::size_t rank = x->get_shape().rank();
        const auto first = static_cast<std::size_t>(r->axes.front());
        bool trailing =
            r->axes.back() == static_cast<std::int64_t>(rank - 1) && r->axes.size() == rank - first;
        if (!trailing) continue;
        const instruction_ref sq = mean->inputs()[0];
        if (!single_use(sq)) continue;
        const auto kind = elementwise_kind_of(sq);
        const bool squares_x =
            (kind == elementwise_kind::pow && sq->inputs()[0] == x &&
             scalar_literal(sq->inputs()[1]) == 2.0) ||
            (kind == elementwise_kind::mul && sq->inputs()[0] == x && sq->inputs()[1] == x);
        if (squares_x) return rms_match{first, *eps};
    }
    return std::nullopt;
}

// x * (1 / rms), (1 / rms) * x, x * reciprocal(rms) or x / rms: x and the match.
std::optional<std::pair<instruction_ref, rms_match>> normalised(instruction_ref ins) {
    const auto kind = elementwise_kind_of(ins);
    if (!kind || ins->inputs().size() != 2) return std::nullopt;
    if (*kind == elementwise_kind::div) {
        const instruction_ref x = ins->inputs()[0];
        if (auto m = root_mean_square_of(through_broadcast(ins->inputs()[1]), x))
            return std::pair{x, *m};
        return std::nullopt;
    }
    if (*kind != elementwise_kind::mul) return std::nullopt;
    for (std::size_t i = 0; i < 2; ++i) {
        const instruction_ref x = ins->inputs()[1 - i];
        const instruction_ref inv = through_broadcast(ins->inputs()[i]);
        if (!single_use(inv)) continue;
        const auto inv_kind = elementwise_kind_of(inv);
        instruction_ref s = nullptr;
        if (inv_kind == elementwise_kind::reciprocal)
            s = inv->inputs()[0];
        else if (inv_kind == elementwise_kind::div && scalar_literal(inv->inputs()[0]) == 1.0)
            s = inv->inputs()[1];
        if (!s) continue;
        if (auto m = root_mean_square_of(s, x)) return std::pair{x, *m};
    }
    return std::nullopt;
}

// The weight of `w * n` or `n * w` when it varies only along the normalised axes: the value it
// broadcasts (rank at most that of those axes), else nullptr.
instruction_ref weight_of(instruction_ref product, instruction_ref n, std::size_t axis) {
    if (elementwise_kind_of(product) != elementwise_kind::mul) return nullptr;
    const instruction_ref other =
        product->inputs()[0] == n ? product->inputs()[1] : product->inputs()[0];
    if (other == n) return nullptr;
    const instruction_ref w = through_broadcast(other);
    const std::size_t rank = n->get_shape().rank();
    if (w == other || w->get_shape().rank() > rank - axis) return nullptr;
    if (w->get_shape().type() != n->get_shape().type()) return nullptr;
    return w;
}

} // namespace

bool find_rms_norm(module& m, instruction_ref ins) {
    const auto match = normalised(ins);
    if (!match) return false;
    const auto [x, rms] = *match;
    const shape& xs = x->get_shape();
    if (!is_floating(xs.type())) return false;
    const dims normalised_lens(xs.lens().begin() + std::ptrdiff_t(rms.axis), xs.lens().end());
    instruction_ref result = ins, scale = nullptr;
    if (single_use(ins)) {
        if (auto* w = weight_of(ins->outputs().front(), ins, rms.axis)) {
            scale = w;
            result = ins->outputs().front();
        }
    }
    if (!scale) {
        const std::vector<double> ones(shape{xs.type(), normalised_lens}.elements(), 1.0);
        scale = m.insert_instruction(
            result, op::literal{from_vector(xs.type(), normalised_lens, ones)}, {});
    }
    const op::layer_norm norm{static_cast<std::int64_t>(rms.axis), static_cast<float>(rms.epsilon),
                              false};
    replace(m, result, m.insert_instruction(result, norm, {x, scale}));
    return true;
}

} // namespace conflux::simplify_detail
