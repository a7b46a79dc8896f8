// Resize against values worked out by hand (the derivations are in the comments), and the
// importer's errors for bad scales and sizes.
#include "conflux/ops/resize.hpp"
#include "conflux/ref/evaluate.hpp"

#include "onnx_model_builder.hpp"
#include "unit/test_helpers.hpp"

#include "onnx/onnx.pb.h"

#include <gtest/gtest.h>

namespace resize_test {

using namespace conflux;
using test::run_op;

namespace {

using ::onnx::TensorProto;

argument f32(const dims& lens, const std::vector<float>& v) {
    return from_vector<float>(dtype::f32, lens, v);
}

std::vector<float> values(const argument& a) {
    return to_vector<float>(a);
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

std::string import_error(const test::model_builder& b) {
    try {
        b.import();
    } catch (const user_error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a user_error";
    return {};
}

// X [1, 1, 2, 2] and a Resize node 'r' reading the inputs named (empty: absent).
test::model_builder resize_model(std::int64_t opset, const std::vector<std::string>& inputs) {
    test::model_builder b(opset);
    b.input("x", TensorProto::FLOAT, {1, 1, 2, 2});
    std::vector<std::string> names{"x"};
    names.insert(names.end(), inputs.begin(), inputs.end());
    b.node("Resize", names, {"y"}, "r");
    b.output("y");
    return b;
}

} // namespace

// Per axis (length 2 -> 4, scale 2) half_pixel maps j to (j + 0.5) / 2 - 0.5 = -0.25, 0.25,
// 0.75, 1.25: [a, b] becomes [a, 0.75a + 0.25b, 0.25a + 0.75b, b] (the ends clamp). Rows
// [1, 2] and [3, 4] give [1, 1.25, 1.75, 2] and [3, 3.25, 3.75, 4]; the rows between are
// 0.75/0.25 and 0.25/0.75 blends of those. The input is stored column-major.
TEST(resize, bilinear_half_pixel_upsample_of_a_transposed_input) {
    auto x = f32({2, 2}, {1, 3, 2, 4}).view(shape{dtype::f32, {2, 2}, {1, 2}});
    auto r = run_op(op::resize{.mode = op::resize_mode::linear,
                               .coordinates = op::resize_coordinates::half_pixel,
                               .scales = {2, 2},
                               .out_lens = {4, 4}},
                    {x});
    EXPECT_EQ(values(r), (std::vector<float>{1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75,
                                             3.25, 3.5, 3, 3.25, 3.75, 4}));
}

// asymmetric, scale 4: j maps to j / 4 = 0, .25, .5, .75, 1, 1.25, 1.5, 1.75 over [10, 20];
// positions past 1 clamp to 1.
TEST(resize, nearest_modes_on_integers) {
    auto x = from_vector<std::int64_t>(dtype::i32, {2}, std::vector<std::int64_t>{10, 20});
    auto run = [&](op::resize_nearest n) {
        auto r = op::resize{.mode = op::resize_mode::nearest,
                            .coordinates = op::resize_coordinates::asymmetric,
                            .scales = {4},
                            .out_lens = {8}};
        r.nearest = n;
        auto y = run_op(r, {x});
        EXPECT_EQ(y.get_shape().type(), dtype::i32);
        return to_vector<std::int64_t>(y);
    };
    using v = std::vector<std::int64_t>;
    EXPECT_EQ(run(op::resize_nearest::round_prefer_floor), (v{10, 10, 10, 20, 20, 20, 20, 20}));
    EXPECT_EQ(run(op::resize_nearest::round_prefer_ceil), (v{10, 10, 20, 20, 20, 20, 20, 20}));
    EXPECT_EQ(run(op::resize_nearest::floor), (v{10, 10, 10, 10, 20, 20, 20, 20}));
    EXPECT_EQ(run(op::resize_nearest::ceil), (v{10, 20, 20, 20, 20, 20, 20, 20}));
}

// align_corners, 2 -> 4: j maps to j * (2 - 1) / (4 - 1) = 0, 1/3, 2/3, 1 over [1, 4].
TEST(resize, linear_align_corners) {
    auto r = run_op(op::resize{.mode = op::resize_mode::linear,
                               .coordinates = op::resize_coordinates::align_corners,
                               .scales = {2},
                               .out_lens = {4}},
                    {f32({2}, {1, 4})});
    expect_near(values(r), {1, 2, 3, 4});
}

// tf_crop_and_resize, roi [0.5, 1.5] over length 4, 3 outputs (scale 3/4, so the unrounded
// output length is 3): j maps to j * 1 * 3 / 2 + 0.5 * 3 = 1.5, 3, 4.5; 4.5 > 3 is outside.
TEST(resize, tf_crop_and_resize_extrapolates_outside_the_input) {
    auto r = op::resize{.mode = op::resize_mode::linear,
                        .coordinates = op::resize_coordinates::tf_crop_and_resize,
                        .scales = {0.75},
                        .out_lens = {3}};
    r.roi = {0.5, 1.5};
    r.extrapolation_value = 99;
    expect_near(values(run_op(r, {f32({4}, {0, 10, 20, 30})})), {15, 30, 99});
}

// asymmetric, scale 2: j maps to j / 2. A half position has taps at distances 1.5, .5, .5,
// 1.5 with Keys weights (a = -0.75) -0.09375, 0.59375, 0.59375, -0.09375; whole positions
// read the input. Over [1, 2, 4, 8], x = 0.5 reads (clamped) 1, 1, 2, 4 -> 1.3125; x = 1.5:
// 2.71875; x = 2.5: 6.1875; x = 3.5 reads 4, 8, 8, 8 -> 8.375.
TEST(resize, cubic_asymmetric_upsample) {
    auto r = run_op(op::resize{.mode = op::resize_mode::cubic,
                               .coordinates = op::resize_coordinates::asymmetric,
                               .scales = {2},
                               .out_lens = {8}},
                    {f32({4}, {1, 2, 4, 8})});
    expect_near(values(r), {1, 1.3125, 2, 2.71875, 4, 6.1875, 8, 8.375});
}

// exclude_outside drops the taps outside the input and renormalises: at x = 0.5 the weights
// 0.59375, 0.59375, -0.09375 on 1, 2, 4 sum to 1.09375 -> 1.40625 / 1.09375 = 9/7; at x = 3.5
// -0.09375, 0.59375 on 4, 8 sum to 0.5 -> (-0.375 + 4.75) / 0.5 = 8.75.
TEST(resize, cubic_exclude_outside) {
    auto r = op::resize{.mode = op::resize_mode::cubic,
                        .coordinates = op::resize_coordinates::asymmetric,
                        .scales = {2},
                        .out_lens = {8}};
    r.exclude_outside = true;
    auto y = values(run_op(r, {f32({4}, {1, 2, 4, 8})}));
    EXPECT_NEAR(y[0], 1, 1e-6);
    EXPECT_NEAR(y[1], 9.0 / 7.0, 1e-6);
    EXPECT_NEAR(y[7], 8.75, 1e-6);
}

// Linear antialias, 4 -> 2 (scale 0.5): the triangle is stretched to half-width 2. half_pixel
// maps j = 0 to 0.5: taps -1, 0, 1, 2 at distances 1.5, .5, .5, 1.5, scaled by 0.5 to .75, .25,
// .25, .75, weights .25, .75, .75, .25 / 2. Over [1, 2, 4, 8] (tap -1 clamps to 0): 1.75; j = 1
// maps to 2.5: taps 1, 2, 3, 3 -> 5.75. Without antialias: 1.5 and 6.
TEST(resize, linear_antialias_downsample) {
    auto r = op::resize{.mode = op::resize_mode::linear,
                        .coordinates = op::resize_coordinates::half_pixel,
                        .scales = {0.5},
                        .out_lens = {2}};
    auto x = f32({4}, {1, 2, 4, 8});
    expect_near(values(run_op(r, {x})), {1.5, 6});
    r.antialias = true;
    expect_near(values(run_op(r, {x})), {1.75, 5.75});
}

TEST(resize, linear_on_integers_is_an_error) {
    auto x = from_vector<std::int64_t>(dtype::i32, {2}, std::vector<std::int64_t>{1, 2});
    auto r = op::resize{.mode = op::resize_mode::linear,
                        .coordinates = op::resize_coordinates::half_pixel,
                        .scales = {2},
                        .out_lens = {4}};
    EXPECT_THROW(r.compute_shape({x.get_shape()}), user_error);
}

// Opset 18: sizes [2, 2] for axes 2, 3 of [1, 1, 4, 6] are ratios 1/2 and 1/3; not_larger takes
// 1/3 (lengths round(4/3) = 1, round(6/3) = 2), not_smaller 1/2 (2 and 3).
TEST(resize, import_axes_and_keep_aspect_ratio) {
    for (auto [policy, lens] :
         {std::pair{"not_larger", dims{1, 1, 1, 2}}, std::pair{"not_smaller", dims{1, 1, 2, 3}}}) {
        test::model_builder b(18);
        b.input("x", TensorProto::FLOAT, {1, 1, 4, 6});
        b.initializer_i64("sizes", {2}, {2, 2});
        auto* n = b.node("Resize", {"x", "", "", "sizes"}, {"y"}, "r");
        test::set_ints(n, "axes", {2, 3});
        test::set_string(n, "keep_aspect_ratio_policy", policy);
        b.output("y");
        auto p = b.import();
        EXPECT_EQ(p.main().get_return()->inputs().front()->get_shape().lens(), lens) << policy;
    }
}

TEST(resize, import_upsample_values) {
    auto b = resize_model(13, {"", "scales"});
    b.initializer("scales", {4}, {1, 1, 2, 2});
    test::set_string(b.graph->mutable_node(0), "mode", "linear");
    auto y = ref::evaluate(b.import(), {{"x", f32({1, 1, 2, 2}, {1, 2, 3, 4})}});
    EXPECT_EQ(values(y.at(0)), (std::vector<float>{1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5,
                                                   2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}));
}

TEST(resize, import_errors) {
    {
        auto b = resize_model(13, {"", "scales", "sizes"});
        b.initializer("scales", {4}, {1, 1, 2, 2});
        b.initializer_i64("sizes", {4}, {1, 1, 4, 4});
        EXPECT_EQ(import_error(b),
                  "Resize (node 'r', opset 13): scales and sizes are both given; give exactly one");
    }
    {
        auto b = resize_model(13, {""});
        EXPECT_EQ(import_error(b), "Resize (node 'r', opset 13): neither scales nor sizes is "
                                   "given; give exactly one");
    }
    {
        auto b = resize_model(13, {"", "scales"});
        b.input("scales", TensorProto::FLOAT, {4});
        EXPECT_EQ(import_error(b),
                  "Resize (node 'r', opset 13): input 'scales' must be a constant");
    }
    {
        auto b = resize_model(13, {"", "scales"});
        b.initializer("scales", {4}, {1, 1, 0, 2});
        EXPECT_EQ(import_error(b),
                  "Resize (node 'r', opset 13): scale 0 of axis 2 is not a positive number");
    }
    {
        auto b = resize_model(13, {"", "scales"});
        b.initializer("scales", {4}, {1, 1, 2, -1.5});
        EXPECT_EQ(import_error(b),
                  "Resize (node 'r', opset 13): scale -1.5 of axis 3 is not a positive number");
    }
    {
        auto b = resize_model(13, {"", "scales"});
        b.initializer("scales", {3}, {1, 2, 2});
        EXPECT_EQ(import_error(b), "Resize (node 'r', opset 13): scales has 3 values for 4 axes");
    }
    {
        auto b = resize_model(13, {"", "", "sizes"});
        b.initializer_i64("sizes", {4}, {1, 1, 0, 4});
        EXPECT_EQ(import_error(b), "Resize (node 'r', opset 13): size 0 is not positive");
    }
    {
        auto b = resize_model(13, {"", "", "sizes"});
        b.initializer_i64("sizes", {4}, {1, 1, 4, 4});
        test::set_string(b.graph->mutable_node(0), "coordinate_transformation_mode",
                         "tf_crop_and_resize");
        EXPECT_EQ(import_error(b), "Resize (node 'r', opset 13): tf_crop_and_resize needs roi, "
                                   "which is not given");
    }
}

} // namespace resize_test
