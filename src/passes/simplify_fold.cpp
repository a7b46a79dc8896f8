// Simplify, constants: instructions computed entirely from literals become literals (an
// elementwise op of broadcast literals a broadcast of its distinct values), a batch
// normalisation after a convolution with constant weights is folded into those weights, and
// any other one with constant statistics becomes a per-channel multiply-add.
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/views.hpp"
#include "passes/simplify_rewrites.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

namespace conflux::simplify_detail {

// From: @2 = add(@0, @1)          (@0, @1 literals)
// To:   @2 = @literal             (the sum, in standard layout)
// A plain broadcast of a literal stays: it is a free view of a small constant, and folding it
// would materialise the large result.
bool find_constant(module& m, instruction_ref ins, const fold_options& o) {
    if (ins->get_operator().traits().builtin || !ins->module_inputs().empty() ||
        ins->inputs().empty() || ins->get_operator().traits().replicates)
        return false;
    const auto& s = ins->get_shape();
    if (s.is_tuple()) return false;
    std::vector<argument> args;
    std::size_t largest_input = 0;
    for (auto* in : ins->inputs()) {
        const auto* v = literal_value(in);
        if (!v) return false;
        args.push_back(*v);
        largest_input = std::max(largest_input, v->get_shape().elements());
    }
    // A large result is left to the runtime only when it would grow the constants: one no
    // larger than an input (the --fp16 conversion of a 30k-word embedding table, a transposed
    // weight) is folded, or every run would convert it again.
    if (s.elements() > o.max_fold_elements && s.elements() > largest_input) return false;
    argument value;
    try {
        value = ins->get_operator().eval(s, args, {}, eval_context{}).contiguous();
    } catch (const user_error&) {
        // A constant that cannot be evaluated (say, a gather out of range) is reported when the
        // program runs, with its inputs named, not as a compile failure here.
        return false;
    }
    replace(m, ins, m.insert_instruction(ins, op::literal{std::move(value)}, {}));
    return true;
}

// From: @4 = where(broadcast(@mask), broadcast(@zero), broadcast(@ninf))   [32,1,197,197]
// To:   @4 = broadcast(@literal)                 the where of @mask's 197 values, [1,1,197,1]
//       (a plain literal when every element differs)
// An elementwise op of broadcast constants is computed once per distinct value, on the axes
// some input varies along: Hugging Face's all-true attention mask made an additive bias this
// way, 1.2M elements written and read again per layer that find_constant would not fold.
bool find_constant_of_broadcasts(module& m, instruction_ref ins, const fold_options& o) {
    if (!is_elementwise(ins) || ins->inputs().empty()) return false;
    const dims& lens = ins->get_shape().lens();
    std::vector<argument> views;
    bool any_broadcast = false;
    std::size_t largest_literal = 0;
    for (auto* in : ins->inputs()) {
        std::vector<instruction_ref> chain;
        auto* base = in;
        while (base->name() == "broadcast") {
            chain.push_back(base);
            base = base->inputs()[0];
        }
        const auto* v = literal_value(base);
        if (!v) return false;
        any_broadcast |= !chain.empty();
        largest_literal = std::max(largest_literal, v->get_shape().elements());
        argument view = *v;
        for (auto it = chain.rbegin(); it != chain.rend(); ++it)
            view = (*it)->get_operator().eval((*it)->get_shape(), {view}, {}, eval_context{});
        views.push_back(view);
    }
    if (!any_broadcast) return false;
    dims reduced(lens.size(), 1);
    for (std::size_t d = 0; d < lens.size(); ++d)
        for (const auto& v : views)
            if (v.get_shape().strides()[d] != 0) reduced[d] = lens[d];
    const std::size_t count = shape{dtype::f32, reduced}.elements();
    // find_constant's size rule, on the distinct values.
    if (count > o.max_fold_elements && count > largest_literal) return false;
    std::vector<shape> reduced_shapes;
    for (auto& v : views) {
        v = v.view(shape{v.get_shape().type(), reduced, v.get_shape().strides()});
        reduced_shapes.push_back(v.get_shape());
    }
    argument value;
    try {
        const shape out = ins->get_operator().compute_shape(reduced_shapes);
        value = ins->get_operator().eval(out, views, {}, eval_context{}).contiguous();
    } catch (const user_error&) {
        return false; // as in find_constant: reported when the program runs
    }
    auto* folded = m.insert_instruction(ins, op::literal{std::move(value)}, {});
    if (folded->get_shape().lens() != lens)
        folded = m.insert_instruction(ins, op::broadcast{lens}, {folded});
    replace(m, ins, folded);
    return true;
}

namespace {

// A batch norm with constant statistics as the per-channel map y = x * scale + shift:
// scale = gamma / sqrt(var + eps), shift = beta - mean * scale.
struct channel_affine {
    std::vector<double> scale, shift;
};

std::optional<channel_affine> constant_batch_norm(instruction_ref ins) {
    const auto* bn = ins->get_operator().get_if<op::batch_norm>();
    if (!bn) return std::nullopt;
    std::vector<std::vector<double>> params;
    for (std::size_t i = 1; i < 5; ++i) {
        const auto* p = literal_value(ins->inputs()[i]);
        if (!p) return std::nullopt;
        params.push_back(to_vector<double>(*p));
    }
    const auto& [gamma, beta, mean, var] = std::tie(params[0], params[1], params[2], params[3]);
    channel_affine a{std::vector<double>(gamma.size()), std::vector<double>(gamma.size())};
    for (std::size_t c = 0; c < gamma.size(); ++c) {
        a.scale[c] = gamma[c] / std::sqrt(var[c] + double(bn->epsilon));
        a.shift[c] = beta[c] - mean[c] * a.scale[c];
    }
    return a;
}

// [C, 1, ...] (rank of `lens` minus one) broadcast to `lens`: a per-channel constant of NCHW
// data.
instruction_ref per_channel(module& m, instruction_ref before, dtype t, const dims& lens,
                            const std::vector<double>& values) {
    dims channel_lens(lens.size() - 1, 1);
    channel_lens[0] = values.size();
    auto* lit = m.insert_instruction(before, op::literal{from_vector(t, channel_lens, values)}, {});
    return m.insert_instruction(before, op::broadcast{lens}, {lit});
}

} // namespace

// From: @3 = convolution(x, @w)
//       @4 = batch_normalization(@3, @scale, @bias, @mean, @var)     (all literals)
// To:   @3 = convolution(x, @w')          w'[k] = w[k] * s[k],  s = scale / sqrt(var + eps)
//       @4 = add(@3, broadcast(@b'))      b' = bias - mean * s, lens [K, 1, ...]
// Only when the convolution has no other user: others need the unscaled output.
bool find_conv_batch_norm(module& m, instruction_ref ins) {
    if (ins->get_operator().get_if<op::batch_norm>() == nullptr) return false;
    auto* conv_ins = ins->inputs()[0];
    const auto* conv = conv_ins->get_operator().get_if<op::convolution>();
    // A channels-last output has its channels last, not on the axis batch norm scales.
    if (!conv || conv->channels_last || conv_ins->outputs().size() != 1) return false;
    const auto* w = literal_value(conv_ins->inputs()[1]);
    if (!w) return false;
    const auto affine = constant_batch_norm(ins);
    if (!affine) return false;

    const dims& wl = w->get_shape().lens();
    const std::size_t filters = wl[0];
    const std::size_t per_filter = w->get_shape().elements() / filters;
    auto wv = to_vector<double>(*w);
    for (std::size_t k = 0; k < filters; ++k)
        for (std::size_t i = 0; i < per_filter; ++i)
            wv[k * per_filter + i] *= affine->scale[k];
    const dtype t = w->get_shape().type();
    auto* new_w = m.insert_instruction(ins, op::literal{from_vector(t, wl, wv)}, {});
    auto* new_conv = m.insert_instruction(ins, *conv, {conv_ins->inputs()[0], new_w});
    auto* bias = per_channel(m, ins, t, conv_ins->get_shape().lens(), affine->shift);
    replace(m, ins,
            m.insert_instruction(ins, op::make_elementwise(op::elementwise_kind::add),
                                 {new_conv, bias}));
    return true;
}

// From: @4 = batch_normalization(x, @scale, @bias, @mean, @var)     (all literals, x not a
//                                                                     convolution of its own)
// To:   @4 = add(mul(x, broadcast(@s)), broadcast(@b'))   s, b' as above, lens [C, 1, ...]
// Inference's batch norm is an affine map per channel; as two elementwise ops it fuses with the
// ReLU after it and with whatever produced x, and transposes move through it. DenseNet normalises
// each concatenation of its features before a 1x1 convolution: as its own f32 kernel between
// f16<->f32 conversions that was three launches and a transposed copy per layer.
bool find_batch_norm_affine(module& m, instruction_ref ins) {
    const auto affine = constant_batch_norm(ins);
    if (!affine) return false;
    auto* x = ins->inputs()[0];
    const dims& lens = x->get_shape().lens();
    const dtype t = x->get_shape().type();
    auto* scaled = m.insert_instruction(ins, op::make_elementwise(op::elementwise_kind::mul),
                                        {x, per_channel(m, ins, t, lens, affine->scale)});
    replace(m, ins,
            m.insert_instruction(ins, op::make_elementwise(op::elementwise_kind::add),
                                 {scaled, per_channel(m, ins, t, lens, affine->shift)}));
    return true;
}

} // namespace conflux::simplify_detail
