// Module construction, editing, printing and validation, with a test-local op so these tests do
// not depend on any real op's implementation.
#include "conflux/ir/program.hpp"
#include "conflux/ref/evaluate.hpp"

#include <gtest/gtest.h>

namespace module_test {

using namespace conflux;

namespace {

// Adds its two standard f32 inputs; `scale` multiplies the result (an attribute to print).
struct test_add {
    float scale = 1;
    std::string name() const { return "test_add"; }
    nlohmann::json attributes() const { return {{"scale", scale}}; }
    shape compute_shape(const std::vector<shape>& in) const {
        check_input_count("test_add", in, 2);
        CONFLUX_USER_CHECK(in[0].lens() == in[1].lens(), "test_add: lens differ");
        return in[0].as_standard();
    }
    argument eval(const shape& out, const std::vector<argument>& in) const {
        auto a = to_vector<float>(in[0]);
        auto b = to_vector<float>(in[1]);
        for (std::size_t i = 0; i < a.size(); ++i)
            a[i] = (a[i] + b[i]) * scale;
        return from_vector(out.type(), out.lens(), a);
    }
    bool operator==(const test_add&) const = default;
};

argument f32(const dims& lens, std::vector<float> values) {
    return from_vector(dtype::f32, lens, values);
}

} // namespace

TEST(module, prints_stable_readable_text) {
    program p;
    auto& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {2}});
    auto c = m.add_literal(f32({2}, {1, 2}));
    auto y = m.add_instruction(test_add{2}, {x, c});
    m.add_return({y}, {"y"});
    EXPECT_EQ(p.to_string(), "module main {\n"
                             "  %x = @param -> f32[2]\n"
                             "  @1 = @literal -> f32[2]\n"
                             "  @2 = test_add{\"scale\":2.0}(%x, @1) -> f32[2]\n"
                             "  @return{\"names\":[\"y\"]}(@2)\n"
                             "}\n");
    EXPECT_NO_THROW(p.validate());
}

TEST(module, add_instruction_goes_before_the_return) {
    module m;
    auto x = m.add_parameter("x", shape{dtype::f32, {2}});
    m.add_return({x});
    auto y = m.add_instruction(test_add{}, {x, x});
    EXPECT_EQ(std::prev(m.end())->name(), "@return");
    EXPECT_EQ(y->outputs().size(), 0u);
    EXPECT_EQ(x->outputs().size(), 2u); // used by the add (once, deduplicated) and the return
    EXPECT_NO_THROW(m.validate());
}

TEST(module, replace_all_uses_and_remove) {
    module m;
    auto x = m.add_parameter("x", shape{dtype::f32, {2}});
    auto a = m.add_instruction(test_add{}, {x, x});
    auto b = m.add_instruction(test_add{3}, {x, x});
    auto r = m.add_return({a});
    m.replace_all_uses(a, b);
    EXPECT_EQ(r->inputs().front(), b);
    EXPECT_TRUE(a->outputs().empty());
    m.remove_instruction(a);
    EXPECT_EQ(m.size(), 3u);
    EXPECT_NO_THROW(m.validate());
    EXPECT_THROW(m.remove_instruction(b), internal_error); // still used by the return
}

TEST(module, replace_instruction_keeps_users_and_checks_shape) {
    module m;
    auto x = m.add_parameter("x", shape{dtype::f32, {2}});
    auto y = m.add_parameter("y", shape{dtype::f32, {3}});
    auto a = m.add_instruction(test_add{}, {x, x});
    m.add_return({a});
    m.replace_instruction(a, test_add{5}, {x, x});
    EXPECT_EQ(a->get_operator().get_if<test_add>()->scale, 5);
    EXPECT_THROW(m.replace_instruction(a, test_add{}, {y, y}), internal_error);
    EXPECT_NO_THROW(m.validate());
}

TEST(module, user_errors_from_compute_shape_propagate) {
    module m;
    auto x = m.add_parameter("x", shape{dtype::f32, {2}});
    auto y = m.add_parameter("y", shape{dtype::f32, {3}});
    EXPECT_THROW(m.add_instruction(test_add{}, {x, y}), user_error);
    EXPECT_THROW(m.add_parameter("x", shape{dtype::f32, {1}}), user_error);
}

TEST(module, validator_catches_wrong_order) {
    module m;
    auto x = m.add_parameter("x", shape{dtype::f32, {2}});
    auto a = m.add_instruction(test_add{}, {x, x});
    auto b = m.add_instruction(test_add{}, {a, a});
    m.add_return({b});
    m.move_instruction(b, a); // b now comes before its input
    EXPECT_THROW(m.validate(), internal_error);
}

TEST(operation, equality_uses_attributes_and_literal_values) {
    operation a = test_add{1}, b = test_add{1}, c = test_add{2};
    EXPECT_TRUE(a == b);
    EXPECT_FALSE(a == c);
    operation l1 = op::literal{f32({2}, {1, 2})};
    operation l2 = op::literal{f32({2}, {1, 2})};
    operation l3 = op::literal{f32({2}, {1, 3})};
    EXPECT_TRUE(l1 == l2);
    EXPECT_FALSE(l1 == l3);
    EXPECT_FALSE(a == l1);
    EXPECT_NE(a.get_if<test_add>(), nullptr);
    EXPECT_EQ(a.get_if<op::literal>(), nullptr);
}

TEST(reference, evaluates_in_order_and_checks_inputs) {
    module m;
    auto x = m.add_parameter("x", shape{dtype::f32, {3}});
    auto c = m.add_literal(f32({3}, {1, 2, 3}));
    auto a = m.add_instruction(test_add{}, {x, c});
    auto b = m.add_instruction(test_add{10}, {a, c});
    m.add_return({b, a});
    auto out = ref::evaluate(m, {{"x", f32({3}, {0.5f, 0, -1})}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(to_vector<float>(out[0]), (std::vector<float>{25, 40, 50}));
    EXPECT_EQ(to_vector<float>(out[1]), (std::vector<float>{1.5f, 2, 2}));
    EXPECT_THROW(ref::evaluate(m, ref::parameter_map{}), user_error);
    EXPECT_THROW(ref::evaluate(m, {{"x", f32({2}, {1, 2})}}), user_error);
}

TEST(reference, accepts_strided_parameters) {
    module m;
    auto x = m.add_parameter("x", shape{dtype::f32, {2, 2}});
    auto a = m.add_instruction(test_add{}, {x, x});
    m.add_return({a});
    // Column-major storage of [[1, 2], [3, 4]].
    argument col{shape{dtype::f32, {2, 2}, {1, 2}}};
    float* p = col.typed<float>();
    p[0] = 1, p[1] = 3, p[2] = 2, p[3] = 4;
    auto out = ref::evaluate(m, {{"x", col}});
    EXPECT_EQ(to_vector<float>(out[0]), (std::vector<float>{2, 4, 6, 8}));
}

TEST(half, f16_round_trips_and_rounds_to_nearest_even) {
    EXPECT_EQ(float(float16(1.0f)), 1.0f);
    EXPECT_EQ(float16(1.0f).bits, 0x3c00);
    EXPECT_EQ(float16(65504.0f).bits, 0x7bff);
    EXPECT_EQ(float16(65520.0f).bits, 0x7c00); // rounds up to inf
    EXPECT_EQ(float16(-2.0f).bits, 0xc000);
    EXPECT_EQ(float(float16(0x1p-24f)), 0x1p-24f); // smallest subnormal
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
    EXPECT_EQ(float16(1.0f + 0x1p-11f).bits, 0x3c00);
    EXPECT_EQ(float16(1.0f + 3 * 0x1p-11f).bits, 0x3c02);
    EXPECT_NE(float(float16(std::nanf(""))), float(float16(std::nanf(""))));
    EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
    EXPECT_EQ(float(bfloat16(3.140625f)), 3.140625f);
}

TEST(reference, a_value_used_twice_by_one_op_stays_alive) {
    module m;
    auto x = m.add_parameter("x", shape{dtype::f32, {2}});
    auto a = m.add_instruction(test_add{}, {x, x});
    auto b = m.add_instruction(test_add{}, {a, a});
    auto c = m.add_instruction(test_add{}, {b, a});
    m.add_return({c});
    auto out = ref::evaluate(m, {{"x", f32({2}, {1, 2})}});
    EXPECT_EQ(to_vector<float>(out[0]), (std::vector<float>{6, 12}));
}

} // namespace module_test
