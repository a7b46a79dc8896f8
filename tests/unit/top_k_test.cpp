// top_k: hand-computed selections (ties, NaN, smallest, strided input), the importer's TopK and
// its errors.
#include "conflux/onnx/import.hpp"
#include "conflux/ops/top_k.hpp"
#include "conflux/ref/evaluate.hpp"

#include "onnx_model_builder.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace top_k_test {

using namespace conflux;
using ::onnx::TensorProto;
using test::run_op;
using test::user_error_of;

namespace {

constexpr float not_a_number = std::numeric_limits<float>::quiet_NaN();

argument f32(const dims& lens, const std::vector<float>& v) {
    return from_vector<float>(dtype::f32, lens, v);
}

std::vector<std::int64_t> indices_of(const argument& r) {
    return to_vector<std::int64_t>(r.sub_arguments().at(1));
}

// NaN compares unequal, so values are compared with NaN spelled as a flag.
void expect_values(const argument& r, const std::vector<float>& want) {
    const auto got = to_vector<float>(r.sub_arguments().at(0));
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i]))
            EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
        else
            EXPECT_EQ(got[i], want[i]) << "element " << i;
    }
}

} // namespace

TEST(top_k, largest_breaks_ties_by_the_smaller_index_and_puts_nan_first) {
    auto x = f32({2, 4}, {3, 1, 3, 2, not_a_number, 5, not_a_number, -1});
    auto r = run_op(op::top_k{.axis = 1, .k = 3, .largest = true}, {x});
    EXPECT_EQ(r.get_shape().sub_shapes().at(0), (shape{dtype::f32, {2, 3}}));
    EXPECT_EQ(r.get_shape().sub_shapes().at(1), (shape{dtype::i64, {2, 3}}));
    expect_values(r, {3, 3, 2, not_a_number, not_a_number, 5});
    EXPECT_EQ(indices_of(r), (std::vector<std::int64_t>{0, 2, 3, 0, 2, 1}));
}

TEST(top_k, smallest_puts_nan_last) {
    auto x = f32({2, 4}, {3, 1, 3, 2, not_a_number, 5, not_a_number, -1});
    auto r = run_op(op::top_k{.axis = 1, .k = 3, .largest = false}, {x});
    expect_values(r, {1, 2, 3, -1, 5, not_a_number});
    EXPECT_EQ(indices_of(r), (std::vector<std::int64_t>{1, 3, 0, 3, 1, 0}));
}

TEST(top_k, integer_ties_keep_index_order) {
    auto x = from_vector<std::int64_t>(dtype::i32, {5}, {7, 7, -2, 7, 9});
    auto r = run_op(op::top_k{.axis = 0, .k = 4, .largest = true}, {x});
    EXPECT_EQ(to_vector<std::int64_t>(r.sub_arguments().at(0)),
              (std::vector<std::int64_t>{9, 7, 7, 7}));
    EXPECT_EQ(indices_of(r), (std::vector<std::int64_t>{4, 0, 1, 3}));
}

TEST(top_k, reads_a_transposed_input_along_axis_0) {
    // Memory [[4, 2, 5], [1, 3, 0]] seen transposed: logically [[4, 1], [2, 3], [5, 0]].
    auto x = f32({2, 3}, {4, 2, 5, 1, 3, 0}).view(shape{dtype::f32, {3, 2}, {1, 3}});
    auto r = run_op(op::top_k{.axis = 0, .k = 2, .largest = true}, {x});
    expect_values(r, {5, 3, 4, 1});
    EXPECT_EQ(indices_of(r), (std::vector<std::int64_t>{2, 1, 0, 0}));
}

TEST(top_k, k_zero_gives_empty_results) {
    auto r = run_op(op::top_k{.axis = 1, .k = 0}, {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
    EXPECT_EQ(r.get_shape().sub_shapes().at(1), (shape{dtype::i64, {2, 0}}));
    EXPECT_TRUE(indices_of(r).empty());
}

TEST(top_k, k_beyond_the_axis_is_a_user_error) {
    EXPECT_EQ(user_error_of([] {
                  (void)op::top_k{.axis = 1, .k = 5}.compute_shape({shape{dtype::f32, {2, 4}}});
              }),
              "top_k: k 5 exceeds the length 4 of axis 1");
}

TEST(top_k_import, values_and_indices_outputs) {
    test::model_builder b(11);
    b.input("x", TensorProto::FLOAT, {2, 4});
    b.initializer_i64("k", {1}, {2});
    auto* n = b.node("TopK", {"x", "k"}, {"v", "i"}, "t");
    test::set_int(n, "largest", 0);
    b.output("v");
    b.output("i");
    auto out = ref::evaluate(b.import(), {{"x", f32({2, 4}, {3, 1, 3, 2, 0, 5, 0, -1})}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(to_vector<float>(out[0]), (std::vector<float>{1, 2, -1, 0}));
    EXPECT_EQ(to_vector<std::int64_t>(out[1]), (std::vector<std::int64_t>{1, 3, 3, 0}));
}

TEST(top_k_import, k_must_be_a_constant_in_range) {
    auto error_for = [](const std::vector<std::int64_t>* k) {
        test::model_builder b(11);
        b.input("x", TensorProto::FLOAT, {2, 4});
        if (k)
            b.initializer_i64("k", {1}, *k);
        else
            b.input("k", TensorProto::INT64, {1});
        b.node("TopK", {"x", "k"}, {"v", "i"}, "t");
        b.output("v");
        b.output("i");
        return user_error_of([&] { b.import(); });
    };
    EXPECT_EQ(error_for(nullptr), "TopK (node 't', opset 11): input 'K' must be a constant");
    const std::vector<std::int64_t> negative{-1}, too_large{5};
    EXPECT_EQ(error_for(&negative),
              "TopK (node 't', opset 11): K -1 is outside [0, 4], the length of axis 1");
    EXPECT_EQ(error_for(&too_large),
              "TopK (node 't', opset 11): K 5 is outside [0, 4], the length of axis 1");
}

} // namespace top_k_test
