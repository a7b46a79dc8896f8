// From: @3 = convolution{channels_last}(x, @w)       x [N,H,W,C], @w literal [K,R,S,C], C small
// To:   @p = pad{end of the channel axis: C' - C}(x)                     [N,H,W,C'], a copy
//       @3 = convolution{channels_last}(@p, @w')     @w' literal [K,R,S,C'], zeros past C
// C' * element size is the next multiple of 8 bytes. Only ungrouped convolutions (a grouped
// one's groups would each need their own zero channels) whose channels are narrower than one
// 16-byte vector: wider odd counts already load mostly whole vectors, and padding them copies a
// large input for little.
#include "conflux/passes/pad_conv_channels.hpp"

#include "conflux/ir/literal_value.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"

namespace conflux {

namespace {

constexpr std::size_t vector_bytes = 8;   // the padded pixel: one 8-byte load (or two 4-byte)
constexpr std::size_t widest_padded = 16; // pixels this wide or wider are left alone

// Pads the last axis of a value of shape `s` by `extra` zeros.
op::pad channel_pad(const shape& s, std::size_t extra) {
    op::pad p;
    p.pads.assign(2 * s.rank(), 0);
    p.pads.back() = static_cast<std::int64_t>(extra);
    return p;
}

} // namespace

void pad_conv_channels::apply(module& m) const {
    std::vector<instruction_ref> convs;
    for (auto& ins : m) {
        const auto* c = ins.get_operator().get_if<op::convolution>();
        if (!c || !c->channels_last || c->group != 1 || ins.inputs().size() != 2) continue;
        const shape& x = ins.inputs()[0]->get_shape();
        const std::size_t row = x.lens().back() * size_of(x.type());
        if (row % vector_bytes == 0 || row >= widest_padded) continue;
        if (x.elements() * size_of(x.type()) < min_input_bytes) continue;
        if (literal_value(ins.inputs()[1]) == nullptr) continue; // weights computed at run time
        convs.push_back(&ins);
    }
    for (auto* ins : convs) {
        instruction_ref x = ins->inputs()[0], w = ins->inputs()[1];
        const std::size_t channels = x->get_shape().lens().back();
        const std::size_t bytes = size_of(x->get_shape().type());
        const std::size_t per_vector = vector_bytes / bytes;
        const std::size_t extra = (channels + per_vector - 1) / per_vector * per_vector - channels;
        const argument& weights = *literal_value(w);
        const op::pad pad_w = channel_pad(weights.get_shape(), extra);
        // The weights' padding is computed here, by the pad op's own evaluation.
        const argument padded_weights =
            pad_w.eval(pad_w.compute_shape({weights.get_shape()}), {weights});
        auto* px = m.insert_instruction(ins, channel_pad(x->get_shape(), extra), {x});
        auto* pw = m.insert_instruction(ins, op::literal{padded_weights}, {});
        auto* y = m.insert_instruction(ins, ins->get_operator(), {px, pw});
        m.replace_all_uses(ins, y);
        m.remove_instruction(ins);
    }
}

} // namespace conflux
