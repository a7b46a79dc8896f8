// cumsum: hand-computed cumulative sums, the importer's CumSum and its errors.
#include "conflux/onnx/import.hpp"
#include "conflux/ops/scan.hpp"
#include "conflux/ref/evaluate.hpp"

#include "onnx_model_builder.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace scan_test {

using namespace conflux;
using ::onnx::TensorProto;
using test::run_op;
using test::user_error_of;

namespace {

argument f32(const dims& lens, const std::vector<float>& v) {
    return from_vector<float>(dtype::f32, lens, v);
}

op::cumsum along(std::int64_t axis, bool exclusive = false, bool reverse = false) {
    return op::cumsum{.axis = axis, .exclusive = exclusive, .reverse = reverse};
}

} // namespace

TEST(cumsum, inclusive_forward_along_each_axis) {
    auto x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    EXPECT_EQ(to_vector<float>(run_op(along(1), {x})), (std::vector<float>{1, 3, 6, 4, 9, 15}));
    EXPECT_EQ(to_vector<float>(run_op(along(0), {x})), (std::vector<float>{1, 2, 3, 5, 7, 9}));
}

TEST(cumsum, exclusive_and_reverse_on_a_2d_axis) {
    auto x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    EXPECT_EQ(to_vector<float>(run_op(along(1, true, true), {x})),
              (std::vector<float>{5, 3, 0, 11, 6, 0}));
    EXPECT_EQ(to_vector<float>(run_op(along(0, true, true), {x})),
              (std::vector<float>{4, 5, 6, 0, 0, 0}));
    EXPECT_EQ(to_vector<float>(run_op(along(1, true, false), {x})),
              (std::vector<float>{0, 1, 3, 0, 4, 9}));
    EXPECT_EQ(to_vector<float>(run_op(along(1, false, true), {x})),
              (std::vector<float>{6, 5, 3, 15, 11, 6}));
}

TEST(cumsum, integers_wrap_like_their_storage_type) {
    constexpr auto max64 = std::numeric_limits<std::int64_t>::max();
    constexpr auto min64 = std::numeric_limits<std::int64_t>::min();
    auto x = from_vector<std::int64_t>(dtype::i64, {3}, {max64, 1, 1});
    EXPECT_EQ(to_vector<std::int64_t>(run_op(along(0), {x})),
              (std::vector<std::int64_t>{max64, min64, min64 + 1}));
    auto y = from_vector<std::int64_t>(dtype::i32, {2}, {2147483647, 1});
    EXPECT_EQ(to_vector<std::int64_t>(run_op(along(0), {y})),
              (std::vector<std::int64_t>{2147483647, -2147483648LL}));
}

TEST(cumsum, reads_a_transposed_input_through_its_strides) {
    // Memory [[1, 4], [2, 5], [3, 6]] seen transposed: logically [[1, 2, 3], [4, 5, 6]].
    auto x = f32({3, 2}, {1, 4, 2, 5, 3, 6}).view(shape{dtype::f32, {2, 3}, {1, 2}});
    EXPECT_EQ(to_vector<float>(run_op(along(1), {x})), (std::vector<float>{1, 3, 6, 4, 9, 15}));
    EXPECT_EQ(to_vector<float>(run_op(along(0, false, true), {x})),
              (std::vector<float>{5, 7, 9, 4, 5, 6}));
}

TEST(cumsum, bad_inputs_are_user_errors) {
    EXPECT_EQ(user_error_of([] {
                  (void)along(2).compute_shape({shape{dtype::f32, {2, 3}}});
              }),
              "cumsum: axis 2 out of range for rank 2 (axes must be normalised to [0, rank))");
    EXPECT_EQ(user_error_of([] {
                  (void)along(0).compute_shape({shape{dtype::boolean, {2}}});
              }),
              "cumsum: bool has no sum");
}

TEST(cumsum_import, negative_constant_axis_and_attributes) {
    test::model_builder b(14);
    b.input("x", TensorProto::FLOAT, {2, 3});
    b.initializer_i64("axis", {}, {-1});
    auto* n = b.node("CumSum", {"x", "axis"}, {"y"}, "c");
    test::set_int(n, "exclusive", 1);
    test::set_int(n, "reverse", 1);
    b.output("y");
    auto out = ref::evaluate(b.import(), {{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(to_vector<float>(out[0]), (std::vector<float>{5, 3, 0, 11, 6, 0}));
}

TEST(cumsum_import, axis_must_be_one_constant_integer_in_range) {
    {
        test::model_builder b(14);
        b.input("x", TensorProto::FLOAT, {2, 3});
        b.input("axis", TensorProto::INT64, {});
        b.node("CumSum", {"x", "axis"}, {"y"}, "c");
        b.output("y");
        EXPECT_EQ(user_error_of([&] { b.import(); }),
                  "CumSum (node 'c', opset 14): input 'axis' must be a constant");
    }
    {
        test::model_builder b(14);
        b.input("x", TensorProto::FLOAT, {2, 3});
        b.initializer_i64("axis", {2}, {0, 1});
        b.node("CumSum", {"x", "axis"}, {"y"}, "c");
        b.output("y");
        EXPECT_EQ(user_error_of([&] { b.import(); }),
                  "CumSum (node 'c', opset 14): input 'axis' must hold one integer, got shape "
                  "i64[2]");
    }
    {
        test::model_builder b(14);
        b.input("x", TensorProto::FLOAT, {2, 3});
        b.initializer_i64("axis", {}, {-3});
        b.node("CumSum", {"x", "axis"}, {"y"}, "c");
        b.output("y");
        EXPECT_EQ(user_error_of([&] { b.import(); }),
                  "CumSum (node 'c', opset 14): axis -3 is out of range for rank 2");
    }
}

} // namespace scan_test
