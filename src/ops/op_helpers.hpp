// Small helpers the op implementations share, and the layers above them that compute with lens
// (the importer, the CUDA code generators).
#pragma once

#include "conflux/ir/shape.hpp"
#include "conflux/util/errors.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace conflux::op {

// NaN test of a value of any element type (integers are never NaN): max/min and pooling let a
// NaN win, as ONNX's reference does.
template <class T> bool is_nan(T v) {
    if constexpr (std::is_floating_point_v<T>)
        return std::isnan(v);
    else
        return false;
}

// Product of lens[begin, end).
inline std::size_t product(const dims& lens, std::size_t begin, std::size_t end) {
    std::size_t n = 1;
    for (std::size_t i = begin; i < end; ++i)
        n *= lens[i];
    return n;
}
inline std::size_t product(const dims& lens) {
    return product(lens, 0, lens.size());
}

// lens seen as [outer, n, inner] around `axis`: element (o, j, i) of a row-major tensor is at
// (o * n + j) * inner + i.
struct axis_split {
    std::size_t outer = 1;
    std::size_t n = 1;
    std::size_t inner = 1;
};
inline axis_split split_at_axis(const dims& lens, std::size_t axis) {
    return {product(lens, 0, axis), lens.at(axis), product(lens, axis + 1, lens.size())};
}

inline void check_axis(const std::string& op, std::int64_t axis, std::size_t rank) {
    CONFLUX_USER_CHECK(axis >= 0 && std::size_t(axis) < rank, op, ": axis ", axis,
                       " out of range for rank ", rank, " (axes must be normalised to [0, rank))");
}

} // namespace conflux::op
