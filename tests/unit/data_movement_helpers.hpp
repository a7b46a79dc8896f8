// Operands and results of the data-movement op tests (gathers, scatters, concat, pad).
#pragma once

#include "conflux/ir/argument.hpp"

#include <cstdint>
#include <vector>

namespace conflux::test {

inline argument f32(const dims& lens, const std::vector<float>& v) {
    return from_vector<float>(dtype::f32, lens, v);
}

inline argument i64(const dims& lens, const std::vector<std::int64_t>& v) {
    return from_vector<std::int64_t>(dtype::i64, lens, v);
}

// Every element in row-major order, as float.
inline std::vector<float> values(const argument& a) {
    return to_vector<float>(a);
}

} // namespace conflux::test
