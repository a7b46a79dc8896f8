#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"

#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace elementwise_test {

using namespace conflux;
using op::elementwise_kind;

namespace {

argument f32(const dims& lens, const std::vector<float>& v) {
    return from_vector(dtype::f32, lens, v);
}

template <class T> argument make(dtype t, const dims& lens, const std::vector<T>& v) {
    return from_vector(t, lens, v);
}

argument run(const op::elementwise& e, const std::vector<argument>& in) {
    std::vector<shape> shapes;
    for (const auto& a : in)
        shapes.push_back(a.get_shape());
    auto out = e.compute_shape(shapes);
    auto result = e.eval(out, in);
    EXPECT_EQ(result.get_shape(), out) << "eval and compute_shape disagree on the layout";
    return result;
}

// Applies a unary kind to f32 values and returns the f32 results.
std::vector<float> unary(elementwise_kind k, const std::vector<float>& x, float alpha = 0,
                         float beta = 0) {
    auto r = run(op::make_elementwise(k, alpha, beta), {f32({x.size()}, x)});
    return to_vector<float>(r);
}

std::vector<float> binary(elementwise_kind k, const std::vector<float>& a,
                          const std::vector<float>& b, float alpha = 0) {
    auto r = run(op::make_elementwise(k, alpha), {f32({a.size()}, a), f32({b.size()}, b)});
    return to_vector<float>(r);
}

template <class T>
std::vector<T> binary_int(dtype t, elementwise_kind k, const std::vector<T>& a,
                          const std::vector<T>& b, float alpha = 0) {
    auto r = run(op::make_elementwise(k, alpha), {make(t, {a.size()}, a), make(t, {b.size()}, b)});
    EXPECT_EQ(r.get_shape().type(), t);
    return to_vector<T>(r);
}

std::vector<bool> predicate(elementwise_kind k, const std::vector<argument>& in, float alpha = 0,
                            float beta = 0) {
    auto r = run(op::make_elementwise(k, alpha, beta), in);
    EXPECT_EQ(r.get_shape().type(), dtype::boolean);
    auto v = to_vector<std::int64_t>(r);
    return {v.begin(), v.end()};
}

using test::user_error_of;

constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
constexpr float f_inf = std::numeric_limits<float>::infinity();

} // namespace

TEST(elementwise, kind_table_round_trips) {
#define CHECK_KIND(k, n, a)                                                                        \
    EXPECT_EQ(op::parse_elementwise_kind(n), elementwise_kind::k);                                 \
    EXPECT_EQ(op::to_string(elementwise_kind::k), n);                                              \
    EXPECT_EQ(op::arity(elementwise_kind::k), std::size_t(a));
    CONFLUX_ELEMENTWISE_KINDS(CHECK_KIND)
#undef CHECK_KIND
    EXPECT_FALSE(op::parse_elementwise_kind("bogus").has_value());
    EXPECT_EQ(op::to_string(elementwise_kind::logical_and), "and");
    EXPECT_TRUE(op::produces_bool(elementwise_kind::less_equal));
    EXPECT_TRUE(op::produces_bool(elementwise_kind::logical_not));
    EXPECT_TRUE(op::produces_bool(elementwise_kind::isinf));
    EXPECT_FALSE(op::produces_bool(elementwise_kind::where));
    EXPECT_FALSE(op::produces_bool(elementwise_kind::add));
}

TEST(elementwise, attributes_print_only_what_matters) {
    EXPECT_EQ(operation(op::make_elementwise(elementwise_kind::add)).to_string(), "add");
    EXPECT_EQ(operation(op::make_elementwise(elementwise_kind::leaky_relu, 0.5f)).to_string(),
              R"(leaky_relu{"alpha":0.5})");
    EXPECT_EQ(operation(op::make_convert(dtype::f16)).to_string(), R"(convert{"target":"f16"})");
    EXPECT_TRUE(operation(op::make_elementwise(elementwise_kind::neg)).traits().pointwise);
    // Ops that compare unequal must not print the same.
    EXPECT_NE(operation(op::make_elementwise(elementwise_kind::add, 1)).to_string(), "add");
}

TEST(elementwise, float_arithmetic) {
    std::vector<float> a{1, -2, 3.5f, 8}, b{2, 4, -0.5f, 0.25f};
    EXPECT_EQ(binary(elementwise_kind::add, a, b), (std::vector<float>{3, 2, 3, 8.25f}));
    EXPECT_EQ(binary(elementwise_kind::sub, a, b), (std::vector<float>{-1, -6, 4, 7.75f}));
    EXPECT_EQ(binary(elementwise_kind::mul, a, b), (std::vector<float>{2, -8, -1.75f, 2}));
    EXPECT_EQ(binary(elementwise_kind::div, a, b), (std::vector<float>{0.5f, -0.5f, -7, 32}));
    EXPECT_EQ(binary(elementwise_kind::pow, {2, 9, -2}, {10, 0.5f, 3}),
              (std::vector<float>{1024, 3, -8}));
    EXPECT_EQ(binary(elementwise_kind::prelu, {-2, 3}, {0.25f, 0.25f}),
              (std::vector<float>{-0.5f, 3}));
}

TEST(elementwise, max_and_min_propagate_nan) {
    auto mx = binary(elementwise_kind::max, {1, qnan, 2}, {3, 0, qnan});
    EXPECT_EQ(mx[0], 3);
    EXPECT_TRUE(std::isnan(mx[1]));
    EXPECT_TRUE(std::isnan(mx[2]));
    auto mn = binary(elementwise_kind::min, {1, qnan, 2}, {3, 0, qnan});
    EXPECT_EQ(mn[0], 1);
    EXPECT_TRUE(std::isnan(mn[1]));
    EXPECT_TRUE(std::isnan(mn[2]));
}

TEST(elementwise, integer_division_truncates_toward_zero) {
    EXPECT_EQ(binary_int<std::int32_t>(dtype::i32, elementwise_kind::div, {-7, 7, -7, 7, 6},
                                       {2, -2, -2, 2, 3}),
              (std::vector<std::int32_t>{-3, -3, 3, 3, 2}));
    // The one quotient that overflows wraps rather than trapping.
    const auto lo = std::numeric_limits<std::int64_t>::min();
    EXPECT_EQ(binary_int<std::int64_t>(dtype::i64, elementwise_kind::div, {lo}, {-1}),
              (std::vector<std::int64_t>{lo}));
}

TEST(elementwise, mod_in_both_modes) {
    // fmod = 0: the result takes the divisor's sign (Python's %).
    EXPECT_EQ(binary_int<std::int32_t>(dtype::i32, elementwise_kind::mod, {-7, 7, -7, 7, 6},
                                       {3, -3, -3, 3, 3}),
              (std::vector<std::int32_t>{2, -2, -1, 1, 0}));
    // fmod = 1: the dividend's sign (C's fmod / %).
    EXPECT_EQ(binary_int<std::int32_t>(dtype::i32, elementwise_kind::mod, {-7, 7, -7, 7},
                                       {3, -3, -3, 3}, 1),
              (std::vector<std::int32_t>{-1, 1, -1, 1}));
    EXPECT_EQ(binary(elementwise_kind::mod, {-7.5f, 7.5f}, {2, -2}, 1),
              (std::vector<float>{-1.5f, 1.5f}));
    EXPECT_EQ(binary(elementwise_kind::mod, {-7.5f, 7.5f, 4}, {2, -2, 2}),
              (std::vector<float>{0.5f, -0.5f, 0}));
}

TEST(elementwise, integers_wrap_to_the_output_type) {
    EXPECT_EQ(binary_int<std::int8_t>(dtype::i8, elementwise_kind::add, {100, -100}, {100, -100}),
              (std::vector<std::int8_t>{-56, 56}));
    EXPECT_EQ(binary_int<std::uint8_t>(dtype::u8, elementwise_kind::mul, {200}, {2}),
              (std::vector<std::uint8_t>{144}));
    EXPECT_EQ(
        binary_int<std::int32_t>(dtype::i32, elementwise_kind::pow, {3, 2, -1, 5}, {4, -1, -3, 0}),
        (std::vector<std::int32_t>{81, 0, -1, 1}));
    auto r = run(op::make_elementwise(elementwise_kind::neg),
                 {make<std::int32_t>(dtype::i32, {2}, {5, std::numeric_limits<int>::min()})});
    EXPECT_EQ(to_vector<std::int32_t>(r),
              (std::vector<std::int32_t>{-5, std::numeric_limits<int>::min()}));
}

TEST(elementwise, transcendental_functions) {
    auto near = [](elementwise_kind k, float x, double want, float alpha = 0, float beta = 0) {
        float got = unary(k, {x}, alpha, beta)[0];
        EXPECT_NEAR(got, want, 2e-6 * std::max(1.0, std::abs(want)))
            << op::to_string(k) << "(" << x << ")";
    };
    near(elementwise_kind::erf, 0.5f, 0.5204998778);
    near(elementwise_kind::gelu, 1, 0.8413447461);
    near(elementwise_kind::gelu, -0.5f, -0.1542687694);
    near(elementwise_kind::gelu, 3, 2.9959503059);
    near(elementwise_kind::gelu, 1, 0.8411919906, 1); // tanh approximation
    near(elementwise_kind::gelu, -2, -0.0454023059, 1);
    near(elementwise_kind::sigmoid, 0, 0.5);
    near(elementwise_kind::sigmoid, 2, 0.8807970780);
    near(elementwise_kind::sigmoid, -20, 2.0611536e-9);
    near(elementwise_kind::tanh, 0.5f, 0.4621171573);
    near(elementwise_kind::exp, 1, 2.7182818285);
    near(elementwise_kind::log, 2, 0.6931471806);
    near(elementwise_kind::sqrt, 2, 1.4142135624);
    near(elementwise_kind::reciprocal, 4, 0.25);
    near(elementwise_kind::softplus, 0, 0.6931471806);
    near(elementwise_kind::softplus, 100, 100); // e^100 overflows f32; softplus must not
    near(elementwise_kind::softplus, -100, 0);
    near(elementwise_kind::softsign, 1, 0.5);
    near(elementwise_kind::softsign, -3, -0.75);
    near(elementwise_kind::elu, -1, -0.6321205588, 1);
    near(elementwise_kind::elu, 2, 2, 1);
    near(elementwise_kind::selu, -1, -1.1113307285, 1.67326324f, 1.05070098f);
    near(elementwise_kind::selu, 2, 2.10140196, 1.67326324f, 1.05070098f);
    near(elementwise_kind::celu, -2, -1.2642411177, 2);
    near(elementwise_kind::celu, 3, 3, 2);
    near(elementwise_kind::sin, 0.5f, 0.4794255386);
    near(elementwise_kind::cos, 0.5f, 0.8775825619);
    near(elementwise_kind::tan, 0.5f, 0.5463024898);
    near(elementwise_kind::asin, 0.5f, 0.5235987756);
    near(elementwise_kind::acos, 0.5f, 1.0471975512);
    near(elementwise_kind::atan, 1, 0.7853981634);
    near(elementwise_kind::sinh, 1, 1.1752011936);
    near(elementwise_kind::cosh, 1, 1.5430806348);
    near(elementwise_kind::asinh, 1, 0.8813735870);
    near(elementwise_kind::acosh, 2, 1.3169578969);
    near(elementwise_kind::atanh, 0.5f, 0.5493061443);
}

// A float attribute outside an integer type's range saturates, as the CUDA kernels' literal
// does (found by fuzzing: ThresholdedRelu with alpha 3.9e25 on u8 data was undefined behaviour).
TEST(elementwise, integer_inputs_take_out_of_range_attributes_saturated) {
    auto on_i64 = [](elementwise_kind k, float alpha) {
        const std::vector<std::int64_t> x{-5, 0, 7, std::numeric_limits<std::int64_t>::max()};
        auto r = run(op::make_elementwise(k, alpha), {make(dtype::i64, {x.size()}, x)});
        return to_vector<std::int64_t>(r);
    };
    // alpha -> INT64_MAX: nothing is above it.
    EXPECT_EQ(on_i64(elementwise_kind::thresholded_relu, 3.9e25f),
              (std::vector<std::int64_t>{0, 0, 0, 0}));
    // alpha -> INT64_MIN: everything is above it but INT64_MIN itself.
    EXPECT_EQ(on_i64(elementwise_kind::thresholded_relu, -3.9e25f),
              (std::vector<std::int64_t>{-5, 0, 7, std::numeric_limits<std::int64_t>::max()}));
    // NaN has no integer value: 0, so only the positive elements pass.
    EXPECT_EQ(on_i64(elementwise_kind::thresholded_relu, std::nanf("")),
              (std::vector<std::int64_t>{0, 0, 7, std::numeric_limits<std::int64_t>::max()}));
    const auto u8 = run(op::make_elementwise(elementwise_kind::thresholded_relu, 3.9e25f),
                        {make(dtype::u8, {3}, std::vector<std::uint8_t>{0, 200, 255})});
    EXPECT_EQ(to_vector<std::int64_t>(u8), (std::vector<std::int64_t>{0, 0, 0}));
}

TEST(elementwise, piecewise_activations) {
    EXPECT_EQ(unary(elementwise_kind::relu, {-2, 0, 3}), (std::vector<float>{0, 0, 3}));
    EXPECT_TRUE(std::isnan(unary(elementwise_kind::relu, {qnan})[0]));
    EXPECT_EQ(unary(elementwise_kind::leaky_relu, {-2, 3}, 0.25f), (std::vector<float>{-0.5f, 3}));
    EXPECT_EQ(unary(elementwise_kind::thresholded_relu, {0.5f, 1, 2}, 1),
              (std::vector<float>{0, 0, 2}));
    EXPECT_EQ(unary(elementwise_kind::hard_sigmoid, {-5, 1, 5}, 0.25f, 0.5f),
              (std::vector<float>{0, 0.75f, 1}));
    auto hs = unary(elementwise_kind::hard_swish, {-4, -1, 0, 3, 5});
    EXPECT_EQ(hs[0], 0);
    EXPECT_NEAR(hs[1], -1.0 / 3, 1e-6);
    EXPECT_EQ(hs[2], 0);
    EXPECT_EQ(hs[3], 3);
    EXPECT_EQ(hs[4], 5);
    EXPECT_EQ(unary(elementwise_kind::neg, {1, -2}), (std::vector<float>{-1, 2}));
    EXPECT_EQ(unary(elementwise_kind::abs, {-1.5f, 2}), (std::vector<float>{1.5f, 2}));
    EXPECT_EQ(unary(elementwise_kind::sign, {-3, 0, 2}), (std::vector<float>{-1, 0, 1}));
}

TEST(elementwise, rounding) {
    EXPECT_EQ(unary(elementwise_kind::floor, {-1.5f, 1.5f, 2}), (std::vector<float>{-2, 1, 2}));
    EXPECT_EQ(unary(elementwise_kind::ceil, {-1.5f, 1.5f, 2}), (std::vector<float>{-1, 2, 2}));
    // Half to even, not half away from zero.
    EXPECT_EQ(unary(elementwise_kind::round,
                    {0.5f, 1.5f, 2.5f, -2.5f, -0.5f, -1.5f, 0.4f, 0.6f, -2.6f, 16777216.0f}),
              (std::vector<float>{0, 2, 2, -2, 0, -2, 0, 1, -3, 16777216.0f}));
    auto special = unary(elementwise_kind::round, {f_inf, -f_inf, qnan});
    EXPECT_EQ(special[0], f_inf);
    EXPECT_EQ(special[1], -f_inf);
    EXPECT_TRUE(std::isnan(special[2]));
}

TEST(elementwise, comparisons_and_logic_give_bool) {
    auto a = f32({4}, {1, 2, 3, qnan});
    auto b = f32({4}, {2, 2, 2, qnan});
    using V = std::vector<bool>;
    EXPECT_EQ(predicate(elementwise_kind::equal, {a, b}), (V{0, 1, 0, 0}));
    EXPECT_EQ(predicate(elementwise_kind::greater, {a, b}), (V{0, 0, 1, 0}));
    EXPECT_EQ(predicate(elementwise_kind::greater_equal, {a, b}), (V{0, 1, 1, 0}));
    EXPECT_EQ(predicate(elementwise_kind::less, {a, b}), (V{1, 0, 0, 0}));
    EXPECT_EQ(predicate(elementwise_kind::less_equal, {a, b}), (V{1, 1, 0, 0}));
    auto p = make<int>(dtype::boolean, {4}, {0, 0, 1, 1});
    auto q = make<int>(dtype::boolean, {4}, {0, 1, 0, 1});
    EXPECT_EQ(predicate(elementwise_kind::logical_and, {p, q}), (V{0, 0, 0, 1}));
    EXPECT_EQ(predicate(elementwise_kind::logical_or, {p, q}), (V{0, 1, 1, 1}));
    EXPECT_EQ(predicate(elementwise_kind::logical_xor, {p, q}), (V{0, 1, 1, 0}));
    EXPECT_EQ(predicate(elementwise_kind::logical_not, {p}), (V{1, 1, 0, 0}));
    auto i = make<int>(dtype::i32, {3}, {-1, 5, 5});
    auto j = make<int>(dtype::i32, {3}, {-1, 4, 6});
    EXPECT_EQ(predicate(elementwise_kind::equal, {i, j}), (V{1, 0, 0}));
}

TEST(elementwise, nan_and_inf_tests) {
    auto x = f32({4}, {1, qnan, f_inf, -f_inf});
    using V = std::vector<bool>;
    EXPECT_EQ(predicate(elementwise_kind::isnan, {x}), (V{0, 1, 0, 0}));
    EXPECT_EQ(predicate(elementwise_kind::isinf, {x}, 1, 1), (V{0, 0, 1, 1}));
    EXPECT_EQ(predicate(elementwise_kind::isinf, {x}, 1, 0), (V{0, 0, 1, 0}));
    EXPECT_EQ(predicate(elementwise_kind::isinf, {x}, 0, 1), (V{0, 0, 0, 1}));
}

TEST(elementwise, where_and_clip) {
    auto cond = make<int>(dtype::boolean, {3}, {1, 0, 1});
    auto r = run(op::make_elementwise(elementwise_kind::where),
                 {cond, f32({3}, {1, 2, 3}), f32({3}, {-1, -2, -3})});
    EXPECT_EQ(r.get_shape().type(), dtype::f32);
    EXPECT_EQ(to_vector<float>(r), (std::vector<float>{1, -2, 3}));

    auto c = run(
        op::make_elementwise(elementwise_kind::clip),
        {f32({5}, {-5, 0.5f, 5, qnan, 1}), f32({5}, {0, 0, 0, 0, 3}), f32({5}, {1, 1, 1, 1, 2})});
    auto v = to_vector<float>(c);
    EXPECT_EQ(v[0], 0);
    EXPECT_EQ(v[1], 0.5f);
    EXPECT_EQ(v[2], 1);
    EXPECT_TRUE(std::isnan(v[3]));
    EXPECT_EQ(v[4], 2); // lo > hi: ONNX gives hi
}

TEST(elementwise, half_types_compute_in_f32_and_round_to_nearest_even) {
    // 1 + 2^-11 is halfway between two halves: ties go to the even one, 1.0; 1 + 3 * 2^-11 is
    // halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
    auto a = make<float>(dtype::f16, {2}, {1, 1});
    auto b = make<float>(dtype::f16, {2}, {0x1p-11f, 0x3p-11f});
    auto r = run(op::make_elementwise(elementwise_kind::add), {a, b});
    EXPECT_EQ(r.get_shape().type(), dtype::f16);
    EXPECT_EQ(to_vector<float>(r), (std::vector<float>{1, 1 + 0x1p-9f}));
    // 65504 is the largest half; twice it overflows to f_inf rather than saturating.
    auto big = make<float>(dtype::f16, {1}, {65504});
    EXPECT_EQ(to_vector<float>(run(op::make_elementwise(elementwise_kind::add), {big, big}))[0],
              f_inf);
    // bf16 keeps 8 significant bits: 1 + 2^-8 rounds to 1.
    auto c = make<float>(dtype::bf16, {1}, {1});
    auto d = make<float>(dtype::bf16, {1}, {0x1p-8f});
    auto s = run(op::make_elementwise(elementwise_kind::add), {c, d});
    EXPECT_EQ(s.get_shape().type(), dtype::bf16);
    EXPECT_EQ(to_vector<float>(s)[0], 1);
}

TEST(elementwise, convert) {
    auto x = f32({6}, {2.7f, -2.7f, 0, -0.0f, 0.1f, qnan});
    auto to_i32 = run(op::make_convert(dtype::i32), {x});
    EXPECT_EQ(to_i32.get_shape().type(), dtype::i32);
    EXPECT_EQ(to_vector<std::int32_t>(to_i32), (std::vector<std::int32_t>{2, -2, 0, 0, 0, 0}));
    auto to_bool = run(op::make_convert(dtype::boolean), {x});
    EXPECT_EQ(to_vector<int>(to_bool), (std::vector<int>{1, 1, 0, 0, 1, 1}));
    auto wrap =
        run(op::make_convert(dtype::i8), {make<std::int64_t>(dtype::i64, {2}, {300, -129})});
    EXPECT_EQ(to_vector<int>(wrap), (std::vector<int>{44, 127}));
    auto half = run(op::make_convert(dtype::f16), {f32({2}, {1 + 0x1p-11f, 1 + 0x3p-11f})});
    EXPECT_EQ(to_vector<float>(half), (std::vector<float>{1, 1 + 0x1p-9f}));
    auto from_bool = run(op::make_convert(dtype::f32), {make<int>(dtype::boolean, {2}, {1, 0})});
    EXPECT_EQ(to_vector<float>(from_bool), (std::vector<float>{1, 0}));
}

TEST(elementwise, reads_transposed_and_broadcast_inputs) {
    // a is the transpose of the standard [3,2] {1,2,3,4,5,6}: logically [[1,3,5],[2,4,6]].
    auto base = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    auto a = base.view(shape{dtype::f32, {2, 3}, {1, 2}});
    // b broadcasts one row {10,20,30} over both rows.
    auto row = f32({3}, {10, 20, 30});
    auto b = row.view(shape{dtype::f32, {2, 3}, {0, 1}});
    auto sum = run(op::make_elementwise(elementwise_kind::add), {a, b});
    EXPECT_EQ(to_vector<float>(sum), (std::vector<float>{11, 23, 35, 12, 24, 36}));
    // Input 0 is packed, so the output keeps its (transposed) layout.
    EXPECT_EQ(sum.get_shape().strides(), (dims{1, 2}));
    // Input 0 is a broadcast, so the output is standard.
    auto diff = run(op::make_elementwise(elementwise_kind::sub), {b, a});
    EXPECT_EQ(diff.get_shape(), (shape{dtype::f32, {2, 3}}));
    EXPECT_EQ(to_vector<float>(diff), (std::vector<float>{9, 17, 25, 8, 16, 24}));
}

TEST(elementwise, output_layout_rule) {
    shape nhwc{dtype::f16, {1, 8, 4, 5}, {160, 1, 40, 8}};
    EXPECT_EQ(op::elementwise_output_shape(nhwc, dtype::f32),
              (shape{dtype::f32, {1, 8, 4, 5}, {160, 1, 40, 8}}));
    EXPECT_EQ(op::elementwise_output_shape(shape{dtype::f32, {4, 3}, {0, 1}}, dtype::boolean),
              (shape{dtype::boolean, {4, 3}}));
    // Padded rows are not packed: standard output.
    EXPECT_EQ(op::elementwise_output_shape(shape{dtype::f32, {2, 3}, {4, 1}}, dtype::f32),
              (shape{dtype::f32, {2, 3}}));
    // A standard input with odd strides on a len-1 axis gives exactly the standard shape.
    EXPECT_EQ(op::elementwise_output_shape(shape{dtype::f32, {1, 3}, {7, 1}}, dtype::f32),
              (shape{dtype::f32, {1, 3}}));
}

TEST(elementwise, large_mixed_layouts_match_a_naive_loop) {
    // Several blocks and threads; operands in NHWC order, broadcast and standard order.
    const dims lens{2, 3, 37, 29};
    const std::size_t n = 2 * 3 * 37 * 29;
    std::vector<float> av(n), cv(3);
    for (std::size_t i = 0; i < n; ++i)
        av[i] = float(int(i % 101) - 50) * 0.25f;
    cv = {0.5f, -1, 2};
    // a: logical NCHW over NHWC memory.
    auto a_mem = f32({2, 37, 29, 3}, av);
    auto a = a_mem.view(shape{dtype::f32, lens, {37 * 29 * 3, 1, 29 * 3, 3}});
    auto c = f32({3}, cv).view(shape{dtype::f32, lens, {0, 1, 0, 0}});
    auto r = run(op::make_elementwise(elementwise_kind::mul), {a, c});
    EXPECT_EQ(r.get_shape().strides(), a.get_shape().strides());
    auto got = to_vector<float>(r);
    auto av_logical = to_vector<float>(a);
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t ch = (i / (37 * 29)) % 3;
        ASSERT_EQ(got[i], av_logical[i] * cv[ch]) << "element " << i;
    }
    // Standard inputs, the dense fast path, with an f16 output.
    auto x = make<float>(dtype::f16, lens, av);
    auto y = run(op::make_elementwise(elementwise_kind::relu), {x});
    auto yv = to_vector<float>(y);
    for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(yv[i], std::max(av[i], 0.0f));
}

TEST(elementwise, scalars_and_empty_tensors) {
    auto s = run(op::make_elementwise(elementwise_kind::sub), {f32({}, {5}), f32({}, {7})});
    EXPECT_EQ(s.get_shape(), (shape{dtype::f32, {}}));
    EXPECT_EQ(to_vector<float>(s), (std::vector<float>{-2}));
    auto e = run(op::make_elementwise(elementwise_kind::exp), {f32({0, 3}, {})});
    EXPECT_EQ(e.get_shape().lens(), (dims{0, 3}));
}

TEST(elementwise, errors_name_the_op) {
    auto add = op::make_elementwise(elementwise_kind::add);
    auto starts_with = [](const std::string& msg, const std::string& prefix) {
        return msg.rfind(prefix, 0) == 0;
    };
    auto msg = user_error_of([&] {
        add.compute_shape({shape{dtype::f32, {2, 3}}, shape{dtype::f32, {3, 2}}});
    });
    EXPECT_TRUE(starts_with(msg, "add:")) << msg;
    EXPECT_NE(msg.find("[3,2]"), std::string::npos) << msg;
    msg = user_error_of([&] {
        add.compute_shape({shape{dtype::f32, {2}}, shape{dtype::f16, {2}}});
    });
    EXPECT_TRUE(starts_with(msg, "add:")) << msg;
    msg = user_error_of([&] { add.compute_shape({shape{dtype::f32, {2}}}); });
    EXPECT_TRUE(starts_with(msg, "add:")) << msg;
    auto where = op::make_elementwise(elementwise_kind::where);
    msg = user_error_of([&] {
        where.compute_shape(
            {shape{dtype::f32, {2}}, shape{dtype::f32, {2}}, shape{dtype::f32, {2}}});
    });
    EXPECT_TRUE(starts_with(msg, "where:")) << msg;
    msg = user_error_of([&] {
        where.compute_shape(
            {shape{dtype::boolean, {2}}, shape{dtype::f32, {2}}, shape{dtype::i32, {2}}});
    });
    EXPECT_TRUE(starts_with(msg, "where:")) << msg;
    EXPECT_NO_THROW(where.compute_shape(
        {shape{dtype::boolean, {2}}, shape{dtype::i32, {2}}, shape{dtype::i32, {2}}}));
    // eval checks its actual inputs too.
    msg = user_error_of([&] { add.eval(shape{}, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}); });
    EXPECT_TRUE(starts_with(msg, "add:")) << msg;
}

} // namespace elementwise_test
