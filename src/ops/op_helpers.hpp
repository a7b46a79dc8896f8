// Small helpers the op implementations share (private to src/ops).
#pragma once

#include "conflux/ir/shape.hpp"
#include "conflux/util/errors.hpp"

#include <cstdint>
#include <string>

namespace conflux::op {

// Product of lens[begin, end).
inline std::size_t product(const dims& lens, std::size_t begin, std::size_t end) {
    std::size_t n = 1;
    for (std::size_t i = begin; i < end; ++i)
        n *= lens[i];
    return n;
}

inline void check_axis(const std::string& op, std::int64_t axis, std::size_t rank) {
    CONFLUX_USER_CHECK(axis >= 0 && std::size_t(axis) < rank, op, ": axis ", axis,
                       " out of range for rank ", rank, " (axes must be normalised to [0, rank))");
}

} // namespace conflux::op
