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

// Small integers in [-5, 5], varied by `seed`: sums of their products stay exact in f32, so a
// test's expected values need no tolerance for the order of summation.
inline std::vector<float> small_integers(std::size_t n, int seed) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = float(int((i * 7 + std::size_t(seed) * 3) % 11) - 5);
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

// An f32 result of `lens` whose values are `want` within `tolerance`.
inline void expect_values(const argument& got, const dims& lens, const std::vector<float>& want,
                          float tolerance = 1e-4f) {
    EXPECT_EQ(got.get_shape().lens(), lens);
    const auto values = to_vector<float>(got);
    ASSERT_EQ(values.size(), want.size());
    for (std::size_t i = 0; i < values.size(); ++i)
        EXPECT_NEAR(values[i], want[i], tolerance) << "at " << i;
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
