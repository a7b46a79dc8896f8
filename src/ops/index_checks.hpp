// The checks of the gathers and scatters on the integer indices they read (private to src/ops).
#pragma once

#include "conflux/ir/shape.hpp"
#include "conflux/util/errors.hpp"

#include <cstdint>
#include <string>

namespace conflux::op {

inline void check_indices_type(const std::string& op, const shape& indices) {
    CONFLUX_USER_CHECK(is_integral(indices.type()) && indices.type() != dtype::boolean, op,
                       ": indices must have an integer type, got ", to_string(indices.type()));
}

// Index i of axis `axis`, of length len, mapped into [0, len): negative ones count from the end
// once; anything outside [-len, len) is a user error.
inline std::size_t normalised_index(const std::string& op, std::int64_t i, std::size_t len,
                                    std::size_t axis) {
    const auto n = std::int64_t(len);
    CONFLUX_USER_CHECK(i >= -n && i < n, op, ": index ", i, " out of range [", -n, ", ", n,
                       ") for axis ", axis, " of length ", len);
    return std::size_t(i < 0 ? i + n : i);
}

} // namespace conflux::op
