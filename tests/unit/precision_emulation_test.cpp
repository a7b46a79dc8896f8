// What `conflux verify` measures a model's precision noise with: round_mantissa, emulate_tf32 and
// promote_to_f32, checked on values whose exact results are worked out here by hand.
#include "conflux/ir/output_comparison.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/round_mantissa.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/precision_emulation.hpp"
#include "conflux/ref/evaluate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace conflux {
namespace precision_emulation_test {

using op::round_to_mantissa;

TEST(round_mantissa, rounds_to_nearest_with_ties_away_from_zero) {
    const float ulp10 = std::ldexp(1.0f, -10); // TF32's spacing just above 1
    EXPECT_EQ(round_to_mantissa(1.0f + ulp10 / 4, 10), 1.0f);
    EXPECT_EQ(round_to_mantissa(1.0f + ulp10 * 3 / 4, 10), 1.0f + ulp10);
    EXPECT_EQ(round_to_mantissa(1.0f + ulp10 / 2, 10), 1.0f + ulp10);         // tie: away
    EXPECT_EQ(round_to_mantissa(-1.0f - ulp10 / 2, 10), -1.0f - ulp10);       // tie: away
    EXPECT_EQ(round_to_mantissa(1.0f + ulp10 * 5 / 2, 10), 1.0f + 3 * ulp10); // not to even
    // A carry out of the mantissa moves to the next binade.
    EXPECT_EQ(round_to_mantissa(2.0f - ulp10 / 4, 10), 2.0f);
    EXPECT_EQ(round_to_mantissa(3.14159274f, 23), 3.14159274f);
    EXPECT_TRUE(std::isnan(round_to_mantissa(std::numeric_limits<float>::quiet_NaN(), 10)));
    EXPECT_EQ(round_to_mantissa(-std::numeric_limits<float>::infinity(), 10),
              -std::numeric_limits<float>::infinity());
}

// [1, 2] x [2, 1] with operands that TF32 rounds: 1 + 2^-12 becomes 1, 1 + 3*2^-12 becomes
// 1 + 2^-10.
TEST(emulate_tf32, rounds_the_operands_of_f32_matrix_products) {
    program p;
    module& m = p.main();
    auto a = m.add_parameter("a", shape{dtype::f32, {1, 2}});
    auto b = m.add_parameter("b", shape{dtype::f32, {2, 1}});
    auto y = m.add_instruction(op::dot{}, {a, b});
    // The sum after the product is not an operand: it keeps f32.
    m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {y, y})});
    const float small = std::ldexp(1.0f, -12);
    const ref::parameter_map params{
        {"a", from_vector<float>(dtype::f32, {1, 2}, std::vector<float>{1 + small, 1 + 3 * small})},
        {"b", from_vector<float>(dtype::f32, {2, 1}, std::vector<float>{1.0f, 2.0f})}};
    const float exact = 2 * ((1 + small) + 2 * (1 + 3 * small));
    EXPECT_EQ(to_vector<float>(ref::evaluate(p, params).at(0)).at(0), exact);

    run_passes(m, {emulate_tf32{}});
    const float rounded = 2 * (1.0f + 2 * (1 + 4 * small));
    EXPECT_EQ(to_vector<float>(ref::evaluate(p, params).at(0)).at(0), rounded);
}

// In f16, 2048 + 1 rounds back to 2048 (the spacing there is 2, the tie goes to even), so adding
// 1 twice leaves 2048; computed in f32 it is 2050, which f16 holds exactly.
TEST(promote_to_f32, keeps_intermediate_results_out_of_16_bits) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f16, {1}});
    auto one = m.add_literal(from_vector<float>(dtype::f16, {1}, std::vector<float>{1.0f}));
    const auto add = op::make_elementwise(op::elementwise_kind::add);
    auto once = m.add_instruction(add, {x, one});
    m.add_return({m.add_instruction(add, {once, one})});
    const ref::parameter_map params{
        {"x", from_vector<float>(dtype::f16, {1}, std::vector<float>{2048.0f})}};
    EXPECT_EQ(to_vector<float>(ref::evaluate(p, params).at(0)).at(0), 2048.0f);

    run_passes(m, {promote_to_f32{}});
    const argument promoted = ref::evaluate(p, params).at(0);
    EXPECT_EQ(promoted.get_shape().type(), dtype::f16); // the model's outputs keep their dtype
    EXPECT_EQ(to_vector<float>(promoted).at(0), 2050.0f);
}

TEST(promote_to_f32, turns_casts_to_16_bits_into_casts_to_f32) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {1}});
    auto h = m.add_instruction(op::make_convert(dtype::f16), {x});
    m.add_return({m.add_instruction(op::make_convert(dtype::f32), {h})});
    const ref::parameter_map params{
        {"x", from_vector<float>(dtype::f32, {1}, std::vector<float>{1.0f + 1.0f / 4096})}};
    EXPECT_EQ(to_vector<float>(ref::evaluate(p, params).at(0)).at(0), 1.0f);
    run_passes(m, {promote_to_f32{}});
    EXPECT_EQ(to_vector<float>(ref::evaluate(p, params).at(0)).at(0), 1.0f + 1.0f / 4096);
}

TEST(compare_outputs, noise_widens_the_tolerance_to_twice_it) {
    const argument want = from_vector<float>(dtype::f32, {2}, std::vector<float>{1.0f, 1.0f});
    const argument got = from_vector<float>(dtype::f32, {2}, std::vector<float>{1.05f, 1.05f});
    EXPECT_FALSE(compare_outputs(got, want, tf32_precision()).passed); // 5e-2 > 1e-2
    const output_comparison c = compare_outputs(got, want, tf32_precision(), 0.03);
    EXPECT_DOUBLE_EQ(c.tolerance, 0.06);
    EXPECT_DOUBLE_EQ(c.noise, 0.03);
    EXPECT_TRUE(c.passed);
    EXPECT_FALSE(compare_outputs(got, want, tf32_precision(), 0.02).passed); // 5e-2 > 4e-2
}

} // namespace precision_emulation_test
} // namespace conflux
