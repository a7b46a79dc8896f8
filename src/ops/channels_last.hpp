// Axis orders of channels-last ops (convolution, pooling with channels_last set): their data is
// [N, spatial..., C] where ONNX's is [N, C, spatial...]. Such an op is evaluated as its ONNX form
// over a permuted view of its inputs (the reference reads through strides, so nothing is copied)
// and only its result is reordered. layout_nhwc uses the same orders for its transposes.
#pragma once

#include "conflux/ir/shape.hpp"

#include <vector>

namespace conflux::op {

// Output axis i is input axis perm[i].
inline std::vector<std::size_t> to_channels_first(std::size_t rank) {
    std::vector<std::size_t> p{0, rank - 1};
    for (std::size_t i = 1; i + 1 < rank; ++i)
        p.push_back(i);
    return p;
}

inline std::vector<std::size_t> to_channels_last(std::size_t rank) {
    std::vector<std::size_t> p{0};
    for (std::size_t i = 2; i < rank; ++i)
        p.push_back(i);
    p.push_back(1);
    return p;
}

// The same memory with its axes reordered (a view; nothing is copied).
inline shape permuted(const shape& s, const std::vector<std::size_t>& perm) {
    if (s.rank() != perm.size()) return s; // rank errors are reported by the shape checks
    dims lens, strides;
    for (auto p : perm) {
        lens.push_back(s.lens()[p]);
        strides.push_back(s.strides()[p]);
    }
    return {s.type(), lens, strides};
}

} // namespace conflux::op
