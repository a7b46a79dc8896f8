// Helpers shared by the unit tests (and the GPU tests).
#pragma once

#include "conflux/ir/operation.hpp"
#include "conflux/util/errors.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
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

// Computes the op's shape for `in`, evaluates it, and checks the result has exactly that shape.
inline argument run_op(const operation& op, const std::vector<argument>& in) {
    std::vector<shape> shapes;
    for (const auto& a : in)
        shapes.push_back(a.get_shape());
    shape out = op.compute_shape(shapes);
    argument r = op.eval(out, in, {}, {});
    EXPECT_EQ(r.get_shape(), out);
    return r;
}

// The message of the user_error f throws; "" when it throws none.
template <class F> std::string user_error_of(F f) {
    try {
        f();
    } catch (const user_error& e) {
        return e.what();
    }
    return "";
}

} // namespace conflux::test
