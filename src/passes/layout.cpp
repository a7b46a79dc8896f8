// Layout: every convolution (1-D, 2-D and 3-D) runs channels-last. From:
//   @2 = convolution(x, w)                                   x [N,C,H,W], w [K,C/g,R,S]
// To:
//   @a = transpose{[0,2,3,1]}(x)                             [N,H,W,C]
//   @b = transpose{[0,2,3,1]}(w)                             [K,R,S,C/g], folded by simplify
//   @c = convolution{channels_last: true}(@a, @b)            [N,P,Q,K]
//   @2 = transpose{[0,3,1,2]}(@c)                            [N,K,P,Q]: users see NCHW again
// Simplify (run after) folds the weight transpose and cancels the output transpose of one
// convolution against the input transpose of the next, through elementwise ops between them.
//
// A pooling whose input is already channels-last data seen as NCHW (a convolution's result, or
// elementwise ops of one) is rewritten the same way, so the stem's max pool reads and writes
// NHWC (coalesced over channels) and the convolutions after it read its result directly. A
// pooling of NCHW data is left alone: rewriting it would add two real copies.
#include "conflux/passes/layout.hpp"

#include "conflux/ops/convolution.hpp"
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/views.hpp"
#include "ops/channels_last.hpp"
#include "passes/simplify_rewrites.hpp"

namespace conflux {

namespace {

// The axis orders as transpose permutations.
std::vector<std::int64_t> permutation(const std::vector<std::size_t>& order) {
    return {order.begin(), order.end()};
}

// NHWC memory seen through NCHW lens: packed, channels fastest (and not also standard, as a
// tensor with one channel or 1x1 spatial extent would be).
bool is_channels_last_data(const shape& s) {
    return s.rank() >= 3 && s.rank() <= 5 && s.packed() && !s.standard() && s.strides()[1] == 1;
}

// Replaces ins (with NCHW operands and result) by its channels-last form between transposes.
void wrap_channels_last(module& m, instruction_ref ins, const operation& channels_last_op,
                        std::size_t transposed_inputs) {
    const std::size_t rank = ins->get_shape().rank();
    const op::transpose to_last{permutation(op::to_channels_last(rank))};
    const op::transpose to_first{permutation(op::to_channels_first(rank))};
    std::vector<instruction_ref> inputs;
    for (std::size_t i = 0; i < transposed_inputs; ++i)
        inputs.push_back(m.insert_instruction(ins, to_last, {ins->inputs()[i]}));
    auto* y = m.insert_instruction(ins, channels_last_op, inputs);
    // The users see the same lens; only the strides differ (an NHWC result seen as NCHW),
    // which replace() propagates to users whose layout follows their input's.
    simplify_detail::replace(m, ins, m.insert_instruction(ins, to_first, {y}));
    m.remove_instruction(ins);
}

} // namespace

void layout_nhwc::apply(module& m) const {
    std::vector<instruction_ref> convs;
    for (auto& ins : m)
        if (const auto* c = ins.get_operator().get_if<op::convolution>(); c && !c->channels_last)
            convs.push_back(&ins);
    for (auto* ins : convs) {
        auto conv = *ins->get_operator().get_if<op::convolution>();
        conv.channels_last = true;
        wrap_channels_last(m, ins, conv, 2);
    }
    // After the convolutions, so their results' NHWC strides have reached the poolings' inputs.
    std::vector<instruction_ref> pools;
    for (auto& ins : m)
        if (const auto* p = ins.get_operator().get_if<op::pooling>();
            p && !p->channels_last && is_channels_last_data(ins.inputs()[0]->get_shape()))
            pools.push_back(&ins);
    for (auto* ins : pools) {
        auto pool = *ins->get_operator().get_if<op::pooling>();
        pool.channels_last = true;
        wrap_channels_last(m, ins, pool, 1);
    }
}

} // namespace conflux
