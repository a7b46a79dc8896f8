// Walking several operands of equal lens but arbitrary strides in lockstep. Reference kernels
// call the per-element work once per run (a stretch along the innermost axis with one stride),
// so a dense tensor costs one call, not one multi-index computation per element.
#pragma once

#include "conflux/ir/shape.hpp"

#include <cstddef>
#include <numeric>
#include <vector>

namespace conflux::op::detail {

struct loop_space {
    dims lens;                 // iteration axes, outermost first
    std::vector<dims> strides; // per operand, per iteration axis
    std::size_t elements = 0;
};

// `order` lists the logical axes outermost first (empty: row-major). Axes of len 1 are dropped
// and neighbours that are contiguous in every operand are merged, so operands that share a
// dense layout collapse to a single axis.
inline loop_space make_loop_space(const std::vector<const shape*>& operands,
                                  std::vector<std::size_t> order = {}) {
    loop_space s;
    const dims& lens = operands.front()->lens();
    s.elements = operands.front()->elements();
    s.strides.resize(operands.size());
    if (order.empty()) {
        order.resize(lens.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
    }
    for (auto axis : order) {
        if (lens[axis] == 1) continue;
        bool merge = !s.lens.empty();
        for (std::size_t k = 0; merge && k < operands.size(); ++k)
            merge = s.strides[k].back() == operands[k]->strides()[axis] * lens[axis];
        if (merge) {
            s.lens.back() *= lens[axis];
            for (std::size_t k = 0; k < operands.size(); ++k)
                s.strides[k].back() = operands[k]->strides()[axis];
        } else {
            s.lens.push_back(lens[axis]);
            for (std::size_t k = 0; k < operands.size(); ++k)
                s.strides[k].push_back(operands[k]->strides()[axis]);
        }
    }
    // A scalar or all-ones shape is still one element to visit.
    if (s.lens.empty()) {
        s.lens.push_back(1);
        for (auto& st : s.strides)
            st.push_back(0);
    }
    return s;
}

// Calls f(offset, done, count, stride) for the runs that cover iteration positions
// [start, start + n) of operand `op`: `count` elements starting at element offset `offset`,
// `stride` apart, being positions start + done .. start + done + count - 1.
template <class F>
void for_each_run(const loop_space& s, std::size_t op, std::size_t start, std::size_t n, F&& f) {
    const dims& lens = s.lens;
    const dims& st = s.strides[op];
    const std::size_t r = lens.size();
    const std::size_t inner = lens[r - 1];
    const std::size_t inner_stride = st[r - 1];
    if (r == 1) {
        f(start * inner_stride, std::size_t{0}, n, inner_stride);
        return;
    }
    dims idx(r);
    std::size_t offset = 0;
    for (std::size_t k = r, rem = start; k-- > 0;) {
        idx[k] = rem % lens[k];
        rem /= lens[k];
        offset += idx[k] * st[k];
    }
    std::size_t done = 0;
    while (done < n) {
        std::size_t count = std::min(n - done, inner - idx[r - 1]);
        f(offset, done, count, inner_stride);
        done += count;
        idx[r - 1] += count;
        offset += count * inner_stride;
        if (idx[r - 1] < inner || done >= n) continue;
        offset -= inner * inner_stride;
        idx[r - 1] = 0;
        for (std::size_t k = r - 1; k-- > 0;) {
            offset += st[k];
            if (++idx[k] < lens[k]) break;
            offset -= lens[k] * st[k];
            idx[k] = 0;
        }
    }
}

} // namespace conflux::op::detail
