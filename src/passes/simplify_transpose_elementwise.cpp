// Simplify, transposes through elementwise ops: moving a transpose from the inputs of an
// elementwise op to its output lets it meet (and cancel) the inverse transpose downstream. This
// is what removes the transposes layout_nhwc leaves between convolutions joined by bias/relu.
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/views.hpp"
#include "passes/simplify_rewrites.hpp"

namespace conflux::simplify_detail {

// From: @3 = add(transpose{P}(a), broadcast{L}(@c))
//       @4 = relu(@3)
// To:   @3 = transpose{P}(add(a, broadcast{L'}(@c')))    c' = c (rank-padded) transposed by P^-1
//       @4 = relu(@3)        -> next sweep: transpose{P}(relu(add(...)))
// Every input that is not a literal or a broadcast literal must be a transpose by the same P,
// or a broadcast (of the same rank) of one: squeeze-and-excitation's x * s, whose per-channel
// scale s comes from a convolution too and is broadcast over the image; without it the product
// is written NCHW and the projection after it reads channels with the image's stride. Constant
// inputs are transposed the other way by folding.
namespace {

const op::transpose* broadcast_transpose(instruction_ref in) {
    if (in->get_operator().get_if<op::broadcast>() == nullptr) return nullptr;
    auto* x = in->inputs()[0];
    if (x->get_shape().rank() != in->get_shape().rank()) return nullptr;
    return x->get_operator().get_if<op::transpose>();
}

} // namespace

bool find_transpose_through_elementwise(module& m, instruction_ref ins) {
    if (!is_elementwise(ins)) return false;
    const std::vector<std::int64_t>* perm = nullptr;
    bool direct = false; // at least one input is the transpose itself, not a broadcast of one
    for (auto* in : ins->inputs()) {
        if (literal_value(in) || broadcast_literal(in)) continue;
        const auto* t = in->get_operator().get_if<op::transpose>();
        direct = direct || t != nullptr;
        if (!t) t = broadcast_transpose(in);
        if (!t || (perm && *perm != t->permutation)) return false;
        perm = &t->permutation;
    }
    // Only broadcasts of transposes: moving them buys nothing and the rewrite would loop.
    if (!direct) return false;
    const auto p = *perm; // keep a copy: the transposes may be replaced below
    const auto inv = invert(p);
    const dims& out = ins->get_shape().lens();
    dims untransposed(out.size());
    for (std::size_t j = 0; j < out.size(); ++j)
        untransposed[j] = out[static_cast<std::size_t>(inv[j])];

    std::vector<instruction_ref> inputs;
    for (auto* in : ins->inputs()) {
        if (const auto* v = literal_value(in)) {
            inputs.push_back(m.insert_instruction(ins, op::literal{transpose_value(*v, inv)}, {}));
        } else if (const auto* c = broadcast_literal(in)) {
            // Broadcasting aligns right: pad the constant with leading unit axes to the full rank
            // first, so that transposing it moves each of its axes to where it belongs.
            const auto small = c->contiguous();
            dims padded(out.size() - small.get_shape().rank(), 1);
            padded.insert(padded.end(), small.get_shape().lens().begin(),
                          small.get_shape().lens().end());
            auto value = transpose_value(small.view(shape{small.get_shape().type(), padded}), inv);
            auto* lit = m.insert_instruction(ins, op::literal{std::move(value)}, {});
            inputs.push_back(m.insert_instruction(ins, op::broadcast{untransposed}, {lit}));
        } else if (in->get_operator().get_if<op::transpose>() == nullptr) {
            // broadcast{L}(transpose{P}(y)) = transpose{P}(broadcast{L by P^-1}(y))
            inputs.push_back(m.insert_instruction(ins, op::broadcast{untransposed},
                                                  {in->inputs()[0]->inputs()[0]}));
        } else {
            inputs.push_back(in->inputs()[0]);
        }
    }
    auto* moved = m.insert_instruction(ins, ins->get_operator(), std::move(inputs));
    replace(m, ins, m.insert_instruction(ins, op::transpose{p}, {moved}));
    return true;
}

// From: @5 = concat{axis a}(transpose{P}(x), transpose{P}(y))
// To:   @5 = transpose{P}(concat{axis P[a]}(x, y))
// DenseNet concatenates the channels-last outputs of its convolutions along NCHW's channel axis;
// with the transpose moved past the concat it goes on through the batch norm and ReLU after it
// and cancels against the next convolution's, so the concat is written channels-last and the
// 1x1 convolution reading it does not gather channels an image plane apart.
bool find_transpose_through_concat(module& m, instruction_ref ins) {
    const auto* cat = ins->get_operator().get_if<op::concat>();
    if (!cat || ins->inputs().empty()) return false;
    const auto* first = ins->inputs().front()->get_operator().get_if<op::transpose>();
    if (!first) return false;
    const auto p = first->permutation;
    std::vector<instruction_ref> inputs;
    for (auto* in : ins->inputs()) {
        const auto* t = in->get_operator().get_if<op::transpose>();
        if (!t || t->permutation != p) return false;
        inputs.push_back(in->inputs()[0]);
    }
    const auto axis = p[static_cast<std::size_t>(cat->axis)];
    auto* moved = m.insert_instruction(ins, op::concat{axis}, std::move(inputs));
    replace(m, ins, m.insert_instruction(ins, op::transpose{p}, {moved}));
    return true;
}

} // namespace conflux::simplify_detail
