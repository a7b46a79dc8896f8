// trilu: hand-computed triangles (k inside and beyond the matrix, batches, strided input), the
// importer's Trilu and its errors.
#include "conflux/onnx/import.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ref/evaluate.hpp"

#include "onnx_model_builder.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace trilu_test {

using namespace conflux;
using ::onnx::TensorProto;
using test::run_op;
using test::user_error_of;

namespace {

// [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]
argument matrix() {
    return from_vector<std::int64_t>(dtype::i64, {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
}

std::vector<std::int64_t> trilu_of(bool upper, std::int64_t k) {
    return to_vector<std::int64_t>(run_op(op::trilu{.upper = upper, .k = k}, {matrix()}));
}

const std::vector<std::int64_t> all{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
const std::vector<std::int64_t> none(12, 0);

} // namespace

TEST(trilu, upper_and_lower_inside_the_matrix) {
    EXPECT_EQ(trilu_of(true, 0), (std::vector<std::int64_t>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
    EXPECT_EQ(trilu_of(true, 2), (std::vector<std::int64_t>{0, 0, 3, 4, 0, 0, 0, 8, 0, 0, 0, 0}));
    EXPECT_EQ(trilu_of(false, 0),
              (std::vector<std::int64_t>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
    EXPECT_EQ(trilu_of(false, -1),
              (std::vector<std::int64_t>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
}

TEST(trilu, k_beyond_the_matrix_keeps_all_or_nothing) {
    constexpr auto max64 = std::numeric_limits<std::int64_t>::max();
    constexpr auto min64 = std::numeric_limits<std::int64_t>::min();
    EXPECT_EQ(trilu_of(true, 4), none);
    EXPECT_EQ(trilu_of(true, 100), none);
    EXPECT_EQ(trilu_of(true, -2), all);
    EXPECT_EQ(trilu_of(true, min64), all);
    EXPECT_EQ(trilu_of(false, -3), none);
    EXPECT_EQ(trilu_of(false, min64), none);
    EXPECT_EQ(trilu_of(false, 3), all);
    EXPECT_EQ(trilu_of(false, max64), all);
}

TEST(trilu, batches_of_transposed_matrices) {
    // Memory 1..8 as [2, 2, 2], seen with the last two axes swapped: [[1, 3], [2, 4]] and
    // [[5, 7], [6, 8]].
    auto x = from_vector<float>(dtype::f32, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})
                 .view(shape{dtype::f32, {2, 2, 2}, {4, 1, 2}});
    EXPECT_EQ(to_vector<float>(run_op(op::trilu{.upper = false, .k = 0}, {x})),
              (std::vector<float>{1, 0, 2, 4, 5, 0, 6, 8}));
}

TEST(trilu, a_vector_is_a_user_error) {
    EXPECT_EQ(user_error_of([] {
                  (void)op::trilu{}.compute_shape({shape{dtype::f32, {4}}});
              }),
              "trilu: expects a matrix or a batch of them, got rank 1");
}

TEST(trilu_import, default_upper_and_optional_k) {
    test::model_builder b(14);
    b.input("x", TensorProto::INT64, {3, 4});
    b.initializer_i64("k", {}, {-1});
    test::set_int(b.node("Trilu", {"x", "k"}, {"lower"}, "t"), "upper", 0);
    b.node("Trilu", {"x"}, {"upper"}, "u");
    b.output("lower");
    b.output("upper");
    auto out = ref::evaluate(b.import(), {{"x", matrix()}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(to_vector<std::int64_t>(out[0]),
              (std::vector<std::int64_t>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
    EXPECT_EQ(to_vector<std::int64_t>(out[1]),
              (std::vector<std::int64_t>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
}

TEST(trilu_import, k_must_be_a_constant) {
    test::model_builder b(14);
    b.input("x", TensorProto::FLOAT, {3, 4});
    b.input("k", TensorProto::INT64, {});
    b.node("Trilu", {"x", "k"}, {"y"}, "t");
    b.output("y");
    EXPECT_EQ(user_error_of([&] { b.import(); }),
              "Trilu (node 't', opset 14): input 'k' must be a constant");
}

} // namespace trilu_test
