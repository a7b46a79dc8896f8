// scatter_nd and scatter_elements against hand-computed values: updates applied in order (the
// last of duplicates wins with reduction none, reductions combine in order), negative indices,
// strided inputs, and the bad inputs.
#include "conflux/ops/scatter.hpp"

#include "unit/data_movement_helpers.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace scatter_test {

using namespace conflux;
using test::f32;
using test::i64;
using test::run_op;
using test::user_error_of;
using test::values;

namespace {

using op::scatter_reduction;

} // namespace

TEST(scatter, reduction_names_round_trip) {
    for (auto r : {scatter_reduction::none, scatter_reduction::add, scatter_reduction::mul,
                   scatter_reduction::max, scatter_reduction::min})
        EXPECT_EQ(op::parse_scatter_reduction(op::scatter_reduction_name(r)), r);
    EXPECT_EQ(op::parse_scatter_reduction("sum"), std::nullopt);
    EXPECT_EQ(op::scatter_nd{scatter_reduction::mul}.attributes().dump(), R"({"reduction":"mul"})");
}

TEST(scatter, scatter_nd_onnx_example) {
    auto d = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
    auto r = run_op(op::scatter_nd{}, {d, i64({4, 1}, {4, 3, 1, 7}), f32({4}, {9, 10, 11, 12})});
    EXPECT_EQ(values(r), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
}

TEST(scatter, scatter_nd_duplicates_with_each_reduction) {
    auto d = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
    // Element 1 gets 10 then -5; element 7 (named as -1) gets 30.
    auto idx = i64({3, 1}, {1, 1, -1});
    auto upd = f32({3}, {10, -5, 30});
    auto run = [&](scatter_reduction red) {
        return values(run_op(op::scatter_nd{red}, {d, idx, upd}));
    };
    EXPECT_EQ(run(scatter_reduction::none), (std::vector<float>{1, -5, 3, 4, 5, 6, 7, 30}));
    EXPECT_EQ(run(scatter_reduction::add), (std::vector<float>{1, 7, 3, 4, 5, 6, 7, 38}));
    EXPECT_EQ(run(scatter_reduction::mul), (std::vector<float>{1, -100, 3, 4, 5, 6, 7, 240}));
    EXPECT_EQ(run(scatter_reduction::max), (std::vector<float>{1, 10, 3, 4, 5, 6, 7, 30}));
    EXPECT_EQ(run(scatter_reduction::min), (std::vector<float>{1, -5, 3, 4, 5, 6, 7, 8}));
}

TEST(scatter, scatter_nd_slices_from_transposed_data_and_updates) {
    // Logical [[1, 2, 3], [4, 5, 6]] stored column-major.
    auto d = f32({2, 3}, {1, 4, 2, 5, 3, 6}).view(shape{dtype::f32, {2, 3}, {1, 2}});
    // Logical updates [[10, 20, 30], [40, 50, 60]] stored column-major.
    auto upd = f32({2, 3}, {10, 40, 20, 50, 30, 60}).view(shape{dtype::f32, {2, 3}, {1, 2}});
    auto r = run_op(op::scatter_nd{}, {d, i64({2, 1}, {1, 0}), upd});
    EXPECT_EQ(values(r), (std::vector<float>{40, 50, 60, 10, 20, 30}));
    // Whole elements of a matrix: [0][2] and [1][-3].
    auto e = run_op(op::scatter_nd{scatter_reduction::add},
                    {d, i64({2, 2}, {0, 2, 1, -3}), f32({2}, {100, 200})});
    EXPECT_EQ(values(e), (std::vector<float>{1, 2, 103, 204, 5, 6}));
}

TEST(scatter, scatter_nd_integer_add_wraps) {
    auto d = from_vector<std::int64_t>(dtype::i32, {2}, std::vector<std::int64_t>{2147483647, 5});
    auto u = from_vector<std::int64_t>(dtype::i32, {1}, std::vector<std::int64_t>{1});
    auto r = run_op(op::scatter_nd{scatter_reduction::add}, {d, i64({1, 1}, {0}), u});
    EXPECT_EQ(to_vector<std::int64_t>(r), (std::vector<std::int64_t>{-2147483648LL, 5}));
}

TEST(scatter, scatter_nd_bad_inputs) {
    auto d = f32({8}, {1, 2, 3, 4, 5, 6, 7, 8});
    EXPECT_EQ(user_error_of([&] {
                  run_op(op::scatter_nd{}, {d, i64({1, 1}, {8}), f32({1}, {0})});
              }),
              "scatter_nd: index 8 out of range [-8, 8) for axis 0 of length 8");
    EXPECT_EQ(user_error_of([&] {
                  run_op(op::scatter_nd{}, {d, i64({1, 1}, {-9}), f32({1}, {0})});
              }),
              "scatter_nd: index -9 out of range [-8, 8) for axis 0 of length 8");
    EXPECT_EQ(user_error_of([&] {
                  op::scatter_nd{}.compute_shape(
                      {d.get_shape(), shape{dtype::i64, {1, 2}}, shape{dtype::f32, {1}}});
              }),
              "scatter_nd: the indices' last axis has length 2, more than the data's rank 1");
    EXPECT_EQ(user_error_of([&] {
                  op::scatter_nd{}.compute_shape(
                      {d.get_shape(), shape{dtype::i64, {2, 1}}, shape{dtype::f32, {3}}});
              }),
              "scatter_nd: updates [3] must have lens [2] (the indices' lens but the last, then "
              "the data's from axis 1)");
    EXPECT_EQ(user_error_of([&] {
                  op::scatter_nd{}.compute_shape(
                      {d.get_shape(), shape{dtype::i64, {2, 1}}, shape{dtype::f16, {2}}});
              }),
              "scatter_nd: updates have type f16 but data has f32");
}

TEST(scatter, scatter_elements_onnx_examples_and_negative_indices) {
    auto zeros = f32({3, 3}, {0, 0, 0, 0, 0, 0, 0, 0, 0});
    auto r = run_op(op::scatter_elements{0}, {zeros, i64({2, 3}, {1, 0, 2, 0, 2, 1}),
                                              f32({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})});
    EXPECT_EQ(values(r), (std::vector<float>{2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}));
    auto d = f32({1, 5}, {1, 2, 3, 4, 5});
    EXPECT_EQ(values(run_op(op::scatter_elements{1},
                            {d, i64({1, 2}, {1, 3}), f32({1, 2}, {1.5f, 2.5f})})),
              (std::vector<float>{1, 1.5f, 3, 2.5f, 5}));
    EXPECT_EQ(values(run_op(op::scatter_elements{1},
                            {d, i64({1, 2}, {1, -3}), f32({1, 2}, {1.5f, 2.5f})})),
              (std::vector<float>{1, 1.5f, 2.5f, 4, 5}));
}

TEST(scatter, scatter_elements_duplicates_with_each_reduction) {
    auto d = f32({1, 5}, {1, 2, 3, 4, 5});
    auto idx = i64({1, 2}, {1, 1});
    auto upd = f32({1, 2}, {3, -4});
    auto run = [&](scatter_reduction red) {
        return values(run_op(op::scatter_elements{1, red}, {d, idx, upd}));
    };
    EXPECT_EQ(run(scatter_reduction::none), (std::vector<float>{1, -4, 3, 4, 5}));
    EXPECT_EQ(run(scatter_reduction::add), (std::vector<float>{1, 1, 3, 4, 5}));
    EXPECT_EQ(run(scatter_reduction::mul), (std::vector<float>{1, -24, 3, 4, 5}));
    EXPECT_EQ(run(scatter_reduction::max), (std::vector<float>{1, 3, 3, 4, 5}));
    EXPECT_EQ(run(scatter_reduction::min), (std::vector<float>{1, -4, 3, 4, 5}));
}

TEST(scatter, scatter_elements_transposed_inputs_and_smaller_indices) {
    // Logical data [[1, 2], [3, 4]], indices [[1, 0], [0, 1]], updates [[10, 20], [30, 40]],
    // all stored column-major.
    const shape t{dtype::f32, {2, 2}, {1, 2}};
    auto d = f32({2, 2}, {1, 3, 2, 4}).view(t);
    auto idx = i64({2, 2}, {1, 0, 0, 1}).view(shape{dtype::i64, {2, 2}, {1, 2}});
    auto upd = f32({2, 2}, {10, 30, 20, 40}).view(t);
    EXPECT_EQ(values(run_op(op::scatter_elements{0}, {d, idx, upd})),
              (std::vector<float>{30, 20, 10, 40}));
    // Indices [1, 1] on axis 0 of a [2, 3] data touch column 0 only.
    auto e = run_op(op::scatter_elements{0},
                    {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({1, 1}, {1}), f32({1, 1}, {9})});
    EXPECT_EQ(values(e), (std::vector<float>{1, 2, 3, 9, 5, 6}));
}

TEST(scatter, scatter_elements_f16_rounds_after_every_update) {
    // 2048 + 1 rounds back to 2048 in f16 (ties to even), twice; the exact sum 2050 would fit.
    auto d = from_vector<float>(dtype::f16, {1}, std::vector<float>{2048});
    auto u = from_vector<float>(dtype::f16, {2}, std::vector<float>{1, 1});
    auto r = run_op(op::scatter_elements{0, scatter_reduction::add}, {d, i64({2}, {0, 0}), u});
    EXPECT_EQ(values(r), (std::vector<float>{2048}));
}

TEST(scatter, scatter_elements_max_lets_nan_win) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto r = run_op(op::scatter_elements{0, scatter_reduction::max},
                    {f32({2}, {1, nan}), i64({2}, {0, 1}), f32({2}, {nan, 5})});
    EXPECT_TRUE(std::isnan(values(r)[0]));
    EXPECT_TRUE(std::isnan(values(r)[1]));
}

TEST(scatter, scatter_elements_bad_inputs) {
    auto d = f32({3}, {1, 2, 3});
    EXPECT_EQ(user_error_of([&] {
                  run_op(op::scatter_elements{0}, {d, i64({1}, {3}), f32({1}, {0})});
              }),
              "scatter_elements: index 3 out of range [-3, 3) for axis 0 of length 3");
    EXPECT_EQ(user_error_of([&] {
                  op::scatter_elements{0}.compute_shape({shape{dtype::f32, {3, 3}},
                                                         shape{dtype::i64, {2, 3}},
                                                         shape{dtype::f32, {2, 2}}});
              }),
              "scatter_elements: updates [2,2] differ from indices [2,3]");
    EXPECT_EQ(user_error_of([&] {
                  op::scatter_elements{0}.compute_shape({shape{dtype::f32, {3, 3}},
                                                         shape{dtype::i64, {2, 4}},
                                                         shape{dtype::f32, {2, 4}}});
              }),
              "scatter_elements: indices [2,4] exceed data [3,3] in axis 1");
    EXPECT_EQ(user_error_of([&] {
                  op::scatter_elements{0}.compute_shape(
                      {d.get_shape(), shape{dtype::f32, {1}}, shape{dtype::f32, {1}}});
              }),
              "scatter_elements: indices must have an integer type, got f32");
}

} // namespace scatter_test
