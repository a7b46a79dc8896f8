// Helpers shared by the op unit tests.
#pragma once

#include "conflux/ir/shape.hpp"

#include <random>
#include <vector>

namespace conflux::test {

inline std::vector<float> random_values(std::size_t n, std::mt19937& rng, float lo = -1,
                                        float hi = 1) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng);
    return v;
}

inline std::size_t product(const dims& d) {
    std::size_t n = 1;
    for (auto l : d)
        n *= l;
    return n;
}

} // namespace conflux::test
