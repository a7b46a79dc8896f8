#include "conflux/passes/fuse_attention.hpp"

#include "conflux/ir/builtin_ops.hpp"
#include "conflux/ops/attention.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "passes/attention_grouped_heads.hpp"
#include "passes/scalar_factors.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace conflux {

namespace {

using op::elementwise_kind;

using passes_detail::elementwise_kind_of;
using passes_detail::single_use;

using passes_detail::scalar_literal;
using passes_detail::scaled_by_scalar;

bool is_float_convert(instruction_ref ins) {
    const auto* e = ins->get_operator().get_if<op::elementwise>();
    return e != nullptr && e->kind == elementwise_kind::convert && is_floating(e->target) &&
           is_floating(ins->inputs()[0]->get_shape().type());
}

// A literal (seen through broadcasts and float converts) whose every value is zero.
bool is_zero_constant(instruction_ref ins) {
    while (ins->get_operator().get_if<op::broadcast>() != nullptr || is_float_convert(ins))
        ins = ins->inputs()[0];
    const auto* lit = ins->get_operator().get_if<op::literal>();
    if (lit == nullptr) return false;
    const auto values = to_vector<double>(lit->value);
    return std::all_of(values.begin(), values.end(), [](double v) { return v == 0; });
}

// A dot operand with scalar factors peeled off (each a single-use mul/div by a scalar literal),
// also from under a single-use transpose (simplify moves transposes past elementwise ops, so
// nn.MultiheadAttention's q * scale arrives as transpose(q * scale)): the transpose is then
// made again of the unscaled value.
instruction_ref peel_scale(module& m, instruction_ref x, double& scale) {
    while (single_use(x)) {
        if (auto s = scaled_by_scalar(x)) {
            scale *= s->second;
            x = s->first;
            continue;
        }
        if (x->get_operator().get_if<op::transpose>() == nullptr) break;
        const instruction_ref inner = x->inputs()[0];
        auto s = single_use(inner) ? scaled_by_scalar(inner) : std::nullopt;
        if (!s) break;
        scale *= s->second;
        x = m.insert_instruction(x, x->get_operator(), {s->first});
    }
    return x;
}

struct match {
    instruction_ref q = nullptr, kt = nullptr, v = nullptr, bias = nullptr;
    instruction_ref result = nullptr; // the second dot
    double scale = 1;
    bool zero_nan_rows = false;
};

// From softmax `s` forward: an optional safe-softmax guard (where(isnan(p), 0, p)) and float
// converts, then the dot taking the probabilities as its left operand.
std::optional<match> forward_from_softmax(instruction_ref s) {
    match mt;
    instruction_ref p = s;
    for (;;) {
        const auto& users = p->outputs();
        if (users.size() == 2) {
            // where(isnan(p), 0, p)
            instruction_ref isnan = nullptr, where = nullptr;
            for (instruction_ref u : users) {
                if (elementwise_kind_of(u) == elementwise_kind::isnan) isnan = u;
                if (elementwise_kind_of(u) == elementwise_kind::where) where = u;
            }
            if (isnan == nullptr || where == nullptr || !single_use(isnan) ||
                where->inputs()[0] != isnan || where->inputs()[2] != p)
                return std::nullopt;
            const auto zero = scalar_literal(where->inputs()[1]);
            if (!zero || *zero != 0) return std::nullopt;
            mt.zero_nan_rows = true;
            p = where;
            continue;
        }
        if (users.size() != 1) return std::nullopt;
        instruction_ref u = users[0];
        if (is_float_convert(u)) {
            p = u;
            continue;
        }
        if (u->get_operator().get_if<op::dot>() != nullptr && u->inputs()[0] == p &&
            u->inputs()[1] != p) {
            mt.result = u;
            mt.v = u->inputs()[1];
            return mt;
        }
        return std::nullopt;
    }
}

// From softmax `s` back to the scores' dot: scalar factors and float converts, and at most one
// added bias (below every factor: a factor applied after the bias would scale it too).
bool backward_from_softmax(module& m, instruction_ref s, match& mt) {
    instruction_ref x = s->inputs()[0];
    bool seen_bias = false, seen_factor = false;
    while (single_use(x)) {
        if (x->get_operator().get_if<op::dot>() != nullptr) {
            double scale = mt.scale;
            mt.q = peel_scale(m, x->inputs()[0], scale);
            mt.kt = peel_scale(m, x->inputs()[1], scale);
            mt.scale = scale;
            return true;
        }
        if (is_float_convert(x)) {
            x = x->inputs()[0];
            continue;
        }
        if (auto f = scaled_by_scalar(x)) {
            if (!seen_bias) seen_factor = true;
            mt.scale *= f->second;
            x = f->first;
            continue;
        }
        if (elementwise_kind_of(x) == elementwise_kind::add && !seen_bias && !seen_factor) {
            // The operand that leads back to the dot continues; the other is the bias.
            auto leads_to_dot = [](instruction_ref y) {
                for (int hops = 0; hops < 8 && single_use(y); ++hops) {
                    if (y->get_operator().get_if<op::dot>() != nullptr) return true;
                    if (is_float_convert(y)) {
                        y = y->inputs()[0];
                    } else if (auto f = scaled_by_scalar(y)) {
                        y = f->first;
                    } else {
                        return false;
                    }
                }
                return false;
            };
            const auto a = x->inputs()[0], b = x->inputs()[1];
            const bool from_a = leads_to_dot(a);
            if (!from_a && !leads_to_dot(b)) return false;
            mt.bias = from_a ? b : a;
            // An all-zero constant bias (an all-true mask, as Hugging Face builds one for
            // unpadded inputs) adds nothing; reading it would cost as much as the scores.
            if (is_zero_constant(mt.bias)) mt.bias = nullptr;
            x = from_a ? a : b;
            seen_bias = true;
            continue;
        }
        return false;
    }
    return false;
}

// Single-use transposes of the attention's result that keep Dv innermost become its out_perm,
// so the kernel stores rows of Dv contiguous elements where the transpose puts them: the heads
// merged back (transpose to [batch, Sq, heads, Dv], then a reshape) need no copy kernel.
instruction_ref absorb_output_transposes(module& m, instruction_ref att) {
    while (single_use(att)) {
        const instruction_ref user = att->outputs().front();
        const auto* t = user->get_operator().get_if<op::transpose>();
        if (t == nullptr) return att;
        auto a = *att->get_operator().get_if<op::attention>();
        const std::size_t rank = t->permutation.size();
        std::vector<std::int64_t> composed(rank);
        for (std::size_t i = 0; i < rank; ++i) {
            const auto from = static_cast<std::size_t>(t->permutation[i]);
            composed[i] = a.out_perm.empty() ? static_cast<std::int64_t>(from) : a.out_perm[from];
        }
        if (static_cast<std::size_t>(composed.back()) != rank - 1) return att;
        bool identity = true;
        for (std::size_t i = 0; i < rank; ++i)
            identity = identity && static_cast<std::size_t>(composed[i]) == i;
        a.out_perm = identity ? std::vector<std::int64_t>{} : composed;
        const std::vector<instruction_ref> inputs = att->inputs();
        const instruction_ref written = m.insert_instruction(user, a, inputs);
        m.replace_all_uses(user, written);
        m.remove_instruction(user);
        m.remove_instruction(att);
        att = written;
    }
    return att;
}

} // namespace

void fuse_attention::apply(module& m) const {
    std::vector<instruction_ref> softmaxes;
    for (instruction& ins : m) {
        const auto* s = ins.get_operator().get_if<op::softmax>();
        if (s != nullptr && !s->log &&
            static_cast<std::size_t>(s->axis) + 1 == ins.get_shape().rank())
            softmaxes.push_back(&ins);
    }
    for (instruction_ref s : softmaxes) {
        auto mt = forward_from_softmax(s);
        if (!mt || !backward_from_softmax(m, s, *mt)) continue;
        const dtype t = mt->q->get_shape().type();
        if (mt->kt->get_shape().type() != t || mt->v->get_shape().type() != t) continue;
        const op::attention a{static_cast<float>(mt->scale), mt->zero_nan_rows};
        std::vector<instruction_ref> inputs{mt->q, mt->kt, mt->v};
        if (mt->bias) inputs.push_back(mt->bias);
        std::vector<shape> in_shapes;
        for (instruction_ref i : inputs)
            in_shapes.push_back(i->get_shape());
        // Shapes the op does not take (batch axes that broadcast, a bias of other lens) stay.
        std::optional<shape> out;
        try {
            out = a.compute_shape(in_shapes);
        } catch (const user_error&) {
            continue;
        }
        if (out->lens() != mt->result->get_shape().lens() ||
            out->type() != mt->result->get_shape().type())
            continue;
        if (obstacle) {
            const std::string why = obstacle(in_shapes);
            if (!why.empty()) {
                if (note)
                    note("attention q " + to_string(in_shapes[0]) + " kt " +
                         to_string(in_shapes[1]) + " v " + to_string(in_shapes[2]) +
                         ": unfused (dot, softmax, dot): " + why);
                continue;
            }
        }
        m.replace_instruction(mt->result, a, inputs);
        passes_detail::group_repeated_heads(m, absorb_output_transposes(m, mt->result), obstacle);
    }
}

} // namespace conflux
