#include "conflux/passes/split_reduction.hpp"

#include "conflux/ops/reduce.hpp"

#include <algorithm>
#include <optional>

namespace conflux {

namespace {

bool splits_exactly(op::reduce_kind kind, dtype t) {
    switch (kind) {
    case op::reduce_kind::mean:
    case op::reduce_kind::max:
    case op::reduce_kind::min:
        return is_floating(t);
    case op::reduce_kind::sum:
        return t == dtype::f32 || t == dtype::f64;
    default:
        return false;
    }
}

// The axes the first reduction takes (a non-empty proper subset of the reduced axes of len > 1,
// innermost by stride), or none when the reduction is not worth splitting.
std::vector<std::int64_t> inner_axes(const split_reduction& opts, const op::reduce& r,
                                     const shape& x, std::size_t outputs) {
    std::vector<std::size_t> reduced;
    std::size_t row_length = 1;
    for (auto a : r.axes) {
        const auto axis = static_cast<std::size_t>(a);
        if (x.lens()[axis] <= 1) continue;
        reduced.push_back(axis);
        row_length *= x.lens()[axis];
    }
    if (reduced.size() < 2 || outputs >= opts.max_outputs || outputs == 0 ||
        row_length < opts.min_row_length)
        return {};
    // The fastest axis (smallest non-zero stride of len > 1) must be kept: then the first
    // reduction's neighbouring outputs are neighbouring addresses.
    std::optional<std::size_t> fastest;
    for (std::size_t i = 0; i < x.rank(); ++i) {
        if (x.lens()[i] <= 1 || x.strides()[i] == 0) continue;
        if (!fastest || x.strides()[i] < x.strides()[*fastest]) fastest = i;
    }
    if (!fastest || std::find(reduced.begin(), reduced.end(), *fastest) != reduced.end()) return {};
    std::stable_sort(reduced.begin(), reduced.end(),
                     [&](std::size_t a, std::size_t b) { return x.strides()[a] < x.strides()[b]; });
    std::size_t take = 1, inner_length = x.lens()[reduced[0]];
    for (std::size_t j = 2; j < reduced.size(); ++j) {
        inner_length *= x.lens()[reduced[j - 1]];
        if (outputs * (row_length / inner_length) < opts.target_outputs) break;
        take = j;
    }
    std::vector<std::int64_t> axes(reduced.begin(), reduced.begin() + std::ptrdiff_t(take));
    std::sort(axes.begin(), axes.end());
    return axes;
}

} // namespace

void split_reduction::apply(module& m) const {
    std::vector<instruction_ref> reductions;
    for (auto& ins : m)
        if (ins.get_operator().get_if<op::reduce>() != nullptr) reductions.push_back(&ins);
    for (auto ins : reductions) {
        const auto r = *ins->get_operator().get_if<op::reduce>();
        const shape& x = ins->inputs()[0]->get_shape();
        if (!splits_exactly(r.kind, x.type())) continue;
        const auto axes = inner_axes(*this, r, x, ins->get_shape().elements());
        if (axes.empty()) continue;
        auto partial =
            m.insert_instruction(ins, op::reduce{r.kind, axes, true, false}, {ins->inputs()[0]});
        // The same axes again: those of the first step have len 1 now, so the divisor of a mean
        // is what is left, and keepdims is the original's.
        m.replace_instruction(ins, r, {partial});
    }
}

} // namespace conflux
