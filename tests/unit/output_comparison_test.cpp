// How verify judges an output: relative RMS against the tolerance of the precision that ran,
// with values worked out by hand.
#include "conflux/ir/output_comparison.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace conflux {
namespace output_comparison_test {

argument f32_values(const std::vector<float>& v) {
    argument a{shape{dtype::f32, {v.size()}}};
    for (std::size_t i = 0; i < v.size(); ++i)
        a.typed<float>()[i] = v[i];
    return a;
}

TEST(output_comparison, relative_rms_and_max_difference_by_hand) {
    // want (3, 4): norm 5; got differs by (0.03, -0.04): norm 0.05, so 1e-2 relative.
    const auto c = compare_outputs(f32_values({3.03f, 3.96f}), f32_values({3, 4}));
    EXPECT_NEAR(c.relative_rms, 0.01, 1e-6);
    EXPECT_NEAR(c.max_abs_diff, 0.04, 1e-6);
    EXPECT_EQ(c.tolerance, 1e-3);
    EXPECT_FALSE(c.passed);
}

TEST(output_comparison, tf32_outputs_are_judged_by_the_tolerance_of_a_10_bit_mantissa) {
    // 5e-3 relative: too far for exact f32 (1e-3), within TF32's (f16's, 1e-2).
    const argument want = f32_values({3, 4});
    const argument got = f32_values({3.015f, 3.98f});
    EXPECT_FALSE(compare_outputs(got, want).passed);
    const auto tf32 = compare_outputs(got, want, tf32_precision());
    EXPECT_TRUE(tf32.passed);
    EXPECT_EQ(tf32.tolerance, 1e-2);
    EXPECT_EQ(tf32_precision().name, "tf32");
    // Twice that tolerance fails under TF32 too.
    EXPECT_FALSE(compare_outputs(f32_values({3.06f, 3.92f}), want, tf32_precision()).passed);
}

TEST(output_comparison, a_narrower_precision_never_loosens_integers_or_wider_tolerances) {
    argument want{shape{dtype::i64, {2}}};
    argument got{shape{dtype::i64, {2}}};
    want.typed<std::int64_t>()[0] = got.typed<std::int64_t>()[0] = 7;
    want.typed<std::int64_t>()[1] = 8;
    got.typed<std::int64_t>()[1] = 9;
    const auto c = compare_outputs(got, want, dtype_precision(dtype::bf16));
    EXPECT_FALSE(c.passed) << "integers must match exactly";
    EXPECT_EQ(c.mismatches, 1u);
    EXPECT_EQ(
        compare_outputs(f32_values({1}), f32_values({1}), dtype_precision(dtype::bf16)).tolerance,
        2e-2);
}

TEST(output_comparison, nan_never_passes_whatever_the_precision) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto c = compare_outputs(f32_values({1, nan}), f32_values({1, 2}), tf32_precision());
    EXPECT_EQ(c.non_finite, 1u);
    EXPECT_FALSE(c.passed);
}

} // namespace output_comparison_test
} // namespace conflux
