// The wrap-around integer arithmetic the reference ops evaluate with: results are the exact
// results reduced modulo 2^bits into the signed range (values worked out by hand / in Python),
// and floating-point types are left to the plain operators.
#include "ops/wrapping_arithmetic.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace wrapping_arithmetic_test {

using namespace conflux::op;

namespace {

constexpr auto i64_min = std::numeric_limits<std::int64_t>::min();
constexpr auto i64_max = std::numeric_limits<std::int64_t>::max();

TEST(wrapping_arithmetic, add_wraps_at_the_type_width) {
    EXPECT_EQ(wrap_add<std::int8_t>(127, 1), -128);
    EXPECT_EQ(wrap_add<std::int8_t>(-128, -1), 127);
    EXPECT_EQ(wrap_add<std::uint8_t>(255, 1), 0);
    EXPECT_EQ(wrap_add<std::int32_t>(2147483647, 2147483647), -2);
    EXPECT_EQ(wrap_add<std::int64_t>(i64_max, 1), i64_min);
    EXPECT_EQ(wrap_add<std::int64_t>(-5, 3), -2);
}

TEST(wrapping_arithmetic, sub_and_neg_wrap) {
    EXPECT_EQ(wrap_sub<std::int64_t>(i64_min, 1), i64_max);
    EXPECT_EQ(wrap_sub<std::uint8_t>(0, 1), 255);
    EXPECT_EQ(wrap_sub<std::int16_t>(-32768, 1), 32767);
    EXPECT_EQ(wrap_neg<std::int64_t>(i64_min), i64_min);
    EXPECT_EQ(wrap_neg<std::int8_t>(-128), -128);
    EXPECT_EQ(wrap_neg<std::int32_t>(7), -7);
}

TEST(wrapping_arithmetic, mul_wraps_at_the_type_width) {
    EXPECT_EQ(wrap_mul<std::int64_t>(3037000500, 3037000500), -9223372036709301616LL);
    EXPECT_EQ(wrap_mul<std::int64_t>(123456789123, 987654321987), -346971251534834359LL);
    EXPECT_EQ(wrap_mul<std::int64_t>(i64_min, -1), i64_min);
    EXPECT_EQ(wrap_mul<std::int32_t>(65536, 65536), 0);
    EXPECT_EQ(wrap_mul<std::int32_t>(-46341, 46341), 2147479015);
    EXPECT_EQ(wrap_mul<std::int8_t>(16, 16), 0);
    EXPECT_EQ(wrap_mul<std::int8_t>(-3, 5), -15);
}

TEST(wrapping_arithmetic, floating_point_uses_the_plain_operators) {
    EXPECT_EQ(wrap_add(0.5f, 0.25f), 0.75f);
    EXPECT_EQ(wrap_sub(1.0, 3.0), -2.0);
    EXPECT_EQ(wrap_mul(1e300, 1e300), std::numeric_limits<double>::infinity());
    EXPECT_EQ(wrap_neg(2.0f), -2.0f);
}

} // namespace

} // namespace wrapping_arithmetic_test
