// The conformance comparison: tolerances, NaN and infinity handling, exactness for integers.
#include "compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace conflux;
using conformance::compare;

namespace {

argument f32(const std::vector<float>& v) {
    return from_vector<float>(dtype::f32, {v.size()}, v);
}

} // namespace

TEST(compare, equal_values_match) {
    EXPECT_FALSE(compare(f32({1, 2, 3}), f32({1, 2, 3})));
}

TEST(compare, f32_allows_relative_error_of_1e_3) {
    EXPECT_FALSE(compare(f32({1000}), f32({1000.9f})));
    auto why = compare(f32({1000, 1}), f32({1001.5f, 1}));
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("1 of 2 values differ; worst at [0]"), std::string::npos) << *why;
}

TEST(compare, nan_must_match_nan) {
    float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(compare(f32({nan, 1}), f32({nan, 1})));
    EXPECT_TRUE(compare(f32({nan, 1}), f32({0, 1})));
    EXPECT_TRUE(compare(f32({0, 1}), f32({nan, 1})));
}

TEST(compare, infinities_must_be_equal) {
    float inf = std::numeric_limits<float>::infinity();
    EXPECT_FALSE(compare(f32({inf, -inf}), f32({inf, -inf})));
    EXPECT_TRUE(compare(f32({inf}), f32({-inf})));
    EXPECT_TRUE(compare(f32({inf}), f32({3e38f})));
}

TEST(compare, shape_and_dtype_must_match_exactly) {
    auto a = from_vector<float>(dtype::f32, {2, 3}, std::vector<float>(6, 1));
    auto b = from_vector<float>(dtype::f32, {3, 2}, std::vector<float>(6, 1));
    auto why = compare(a, b);
    ASSERT_TRUE(why);
    EXPECT_EQ(*why, "got f32[3,2], expected f32[2,3]");
    auto c = from_vector<float>(dtype::f64, {2, 3}, std::vector<float>(6, 1));
    EXPECT_TRUE(compare(a, c));
}

TEST(compare, strides_do_not_matter) {
    auto a = from_vector<float>(dtype::f32, {2, 2}, std::vector<float>{1, 2, 3, 4});
    auto t = from_vector<float>(dtype::f32, {2, 2}, std::vector<float>{1, 3, 2, 4});
    EXPECT_FALSE(compare(a, t.view(shape{dtype::f32, {2, 2}, {1, 2}})));
}

TEST(compare, integers_are_exact) {
    auto a = from_vector<std::int64_t>(dtype::i64, {3}, std::vector<std::int64_t>{1, 2, 3});
    auto b = from_vector<std::int64_t>(dtype::i64, {3}, std::vector<std::int64_t>{1, 2, 4});
    auto why = compare(a, b);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("first at [2]: got 4, expected 3"), std::string::npos) << *why;
}

TEST(compare, f16_is_looser_than_f32) {
    auto e = from_vector<float>(dtype::f16, {1}, std::vector<float>{1.0f});
    auto a = from_vector<float>(dtype::f16, {1}, std::vector<float>{1.001953125f}); // 2 ulp
    EXPECT_FALSE(compare(e, a));
}
