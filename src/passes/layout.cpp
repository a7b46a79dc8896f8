// Layout: every convolution (1-D, 2-D and 3-D) runs channels-last. From:
//   @2 = convolution(x, w)                                   x [N,C,H,W], w [K,C/g,R,S]
// To:
//   @a = transpose{[0,2,3,1]}(x)                             [N,H,W,C]
//   @b = transpose{[0,2,3,1]}(w)                             [K,R,S,C/g], folded by simplify
//   @c = convolution{channels_last: true}(@a, @b)            [N,P,Q,K]
//   @2 = transpose{[0,3,1,2]}(@c)                            [N,K,P,Q]: users see NCHW again
// Simplify (run after) folds the weight transpose and cancels the output transpose of one
// convolution against the input transpose of the next, through elementwise ops between them.
#include "conflux/passes/layout.hpp"

#include "conflux/ops/convolution.hpp"
#include "conflux/ops/views.hpp"
#include "passes/simplify_rewrites.hpp"

namespace conflux {

namespace {

std::vector<std::int64_t> channels_last_perm(std::size_t rank) {
    std::vector<std::int64_t> p{0};
    for (std::size_t i = 2; i < rank; ++i)
        p.push_back(static_cast<std::int64_t>(i));
    p.push_back(1);
    return p;
}

std::vector<std::int64_t> channels_first_perm(std::size_t rank) {
    std::vector<std::int64_t> p{0, static_cast<std::int64_t>(rank - 1)};
    for (std::size_t i = 1; i + 1 < rank; ++i)
        p.push_back(static_cast<std::int64_t>(i));
    return p;
}

} // namespace

void layout_nhwc::apply(module& m) const {
    std::vector<instruction_ref> convs;
    for (auto& ins : m)
        if (const auto* c = ins.get_operator().get_if<op::convolution>(); c && !c->channels_last)
            convs.push_back(&ins);
    for (auto* ins : convs) {
        const std::size_t rank = ins->get_shape().rank();
        auto conv = *ins->get_operator().get_if<op::convolution>();
        conv.channels_last = true;
        const op::transpose to_last{channels_last_perm(rank)};
        const op::transpose to_first{channels_first_perm(rank)};
        auto* x = m.insert_instruction(ins, to_last, {ins->inputs()[0]});
        auto* w = m.insert_instruction(ins, to_last, {ins->inputs()[1]});
        auto* y = m.insert_instruction(ins, conv, {x, w});
        // The users see the same lens; only the strides differ (an NHWC result seen as NCHW),
        // which replace() propagates to users whose layout follows their input's.
        simplify_detail::replace(m, ins, m.insert_instruction(ins, to_first, {y}));
        m.remove_instruction(ins);
    }
}

} // namespace conflux
