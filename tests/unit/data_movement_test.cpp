#include "conflux/ops/data_movement.hpp"

#include "unit/data_movement_helpers.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

namespace data_movement_test {

using namespace conflux;
using test::f32;
using test::i64;
using test::run_op;
using test::values;

namespace {

// Expects a user_error whose message starts with `prefix`.
template <class F> void expect_user_error(F&& f, const std::string& prefix) {
    try {
        f();
        ADD_FAILURE() << "expected a user_error starting with " << prefix;
    } catch (const user_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    }
}

op::pad make_pad(std::vector<std::int64_t> pads, op::pad_mode mode, float value = 0) {
    op::pad p;
    p.pads = std::move(pads);
    p.mode = mode;
    p.value = value;
    return p;
}

} // namespace

TEST(data_movement, concat_inner_axis_with_a_transposed_input) {
    auto a = f32({2, 1}, {1, 2});
    // Logical [[3, 4], [5, 6]] stored column-major.
    auto b = f32({2, 2}, {3, 5, 4, 6}).view(shape{dtype::f32, {2, 2}, {1, 2}});
    auto r = run_op(op::concat{1}, {a, b});
    EXPECT_EQ(r.get_shape(), (shape{dtype::f32, {2, 3}}));
    EXPECT_EQ(values(r), (std::vector<float>{1, 3, 4, 2, 5, 6}));
}

TEST(data_movement, concat_outer_axis_f16_broadcast_and_empty) {
    auto a = from_vector<float>(dtype::f16, {1, 2}, std::vector<float>{0.5f, 1.5f});
    auto row = from_vector<float>(dtype::f16, {2}, std::vector<float>{-2, 65504});
    auto b = row.view(shape{dtype::f16, {2, 2}, {0, 1}});
    auto empty = from_vector<float>(dtype::f16, {0, 2}, std::vector<float>{});
    auto r = run_op(op::concat{0}, {a, empty, b});
    EXPECT_EQ(r.get_shape(), (shape{dtype::f16, {3, 2}}));
    EXPECT_EQ(values(r), (std::vector<float>{0.5f, 1.5f, -2, 65504, -2, 65504}));
}

TEST(data_movement, concat_errors) {
    shape a{dtype::f32, {2, 3}};
    expect_user_error(
        [&] {
            op::concat{0}.compute_shape({a, shape{dtype::f32, {2, 4}}});
        },
        "concat");
    expect_user_error(
        [&] {
            op::concat{1}.compute_shape({a, shape{dtype::f16, {2, 1}}});
        },
        "concat");
    expect_user_error(
        [&] {
            op::concat{1}.compute_shape({a, shape{dtype::f32, {2, 1, 1}}});
        },
        "concat");
    expect_user_error([&] { op::concat{2}.compute_shape({a, a}); }, "concat");
    expect_user_error([&] { op::concat{0}.compute_shape({}); }, "concat");
    EXPECT_EQ(op::concat{1}.compute_shape({a, shape{dtype::f32, {2, 5}}}).lens(), (dims{2, 8}));
}

TEST(data_movement, pad_constant_begins_then_ends) {
    auto x = f32({2, 2}, {1, 2, 3, 4});
    // begins {1, 0}, ends {0, 1}.
    auto r = run_op(make_pad({1, 0, 0, 1}, op::pad_mode::constant, 9), {x});
    EXPECT_EQ(r.get_shape().lens(), (dims{3, 3}));
    EXPECT_EQ(values(r), (std::vector<float>{9, 9, 9, 1, 2, 9, 3, 4, 9}));

    auto ints = i64({2}, {7, -8});
    auto ri = run_op(make_pad({1, 2}, op::pad_mode::constant, -1), {ints});
    EXPECT_EQ(to_vector<std::int64_t>(ri), (std::vector<std::int64_t>{-1, 7, -8, -1, -1}));
}

TEST(data_movement, pad_reflect_and_edge_in_one_dimension) {
    auto x = f32({3}, {1, 2, 3});
    EXPECT_EQ(values(run_op(make_pad({2, 2}, op::pad_mode::reflect), {x})),
              (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
    // Longer than the axis: numpy keeps reflecting.
    EXPECT_EQ(values(run_op(make_pad({5, 4}, op::pad_mode::reflect), {x})),
              (std::vector<float>{2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3}));
    EXPECT_EQ(values(run_op(make_pad({2, 1}, op::pad_mode::edge), {x})),
              (std::vector<float>{1, 1, 1, 2, 3, 3}));
    auto one = f32({1}, {5});
    EXPECT_EQ(values(run_op(make_pad({1, 2}, op::pad_mode::reflect), {one})),
              (std::vector<float>{5, 5, 5, 5}));
}

TEST(data_movement, pad_reflect_transposed_and_edge_broadcast) {
    // Logical [[1, 3, 5], [2, 4, 6]] stored column-major; begins {1, 1}, ends {0, 1}.
    auto x = f32({3, 2}, {1, 2, 3, 4, 5, 6}).view(shape{dtype::f32, {2, 3}, {1, 2}});
    auto r = run_op(make_pad({1, 1, 0, 1}, op::pad_mode::reflect), {x});
    EXPECT_EQ(r.get_shape(), (shape{dtype::f32, {3, 5}}));
    EXPECT_EQ(values(r), (std::vector<float>{4, 2, 4, 6, 4, 3, 1, 3, 5, 3, 4, 2, 4, 6, 4}));

    auto b = from_vector<float>(dtype::f16, {2}, std::vector<float>{1, 2})
                 .view(shape{dtype::f16, {2, 2}, {0, 1}});
    auto e = run_op(make_pad({0, 1, 1, 0}, op::pad_mode::edge), {b});
    EXPECT_EQ(e.get_shape(), (shape{dtype::f16, {3, 3}}));
    EXPECT_EQ(values(e), (std::vector<float>{1, 1, 2, 1, 1, 2, 1, 1, 2}));
}

TEST(data_movement, pad_errors_and_attributes) {
    shape s{dtype::f32, {2, 3}};
    expect_user_error([&] { make_pad({1, 1}, op::pad_mode::constant).compute_shape({s}); }, "pad");
    expect_user_error(
        [&] {
            make_pad({0, -1, 0, 0}, op::pad_mode::constant).compute_shape({s});
        },
        "pad");
    expect_user_error(
        [&] {
            make_pad({1, 0}, op::pad_mode::edge).compute_shape({shape{dtype::f32, {0}}});
        },
        "pad");
    EXPECT_EQ(make_pad({1, 0}, op::pad_mode::constant).compute_shape({shape{dtype::f32, {0}}}),
              (shape{dtype::f32, {1}}));
    operation p = make_pad({0, 1, 2, 3}, op::pad_mode::reflect, 0.5f);
    EXPECT_EQ(p.attributes()["mode"], "reflect");
    EXPECT_EQ(p.attributes()["pads"], nlohmann::json({0, 1, 2, 3}));
}

TEST(data_movement, gather_with_negative_and_2d_indices) {
    auto data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    auto r = run_op(op::gather{0}, {data, i64({2, 2}, {0, -1, 1, 2})});
    EXPECT_EQ(r.get_shape().lens(), (dims{2, 2, 2}));
    EXPECT_EQ(values(r), (std::vector<float>{1, 2, 5, 6, 3, 4, 5, 6}));

    auto idx32 = from_vector<int>(dtype::i32, {1}, std::vector<int>{-1});
    auto c = run_op(op::gather{1}, {data, idx32});
    EXPECT_EQ(c.get_shape().lens(), (dims{3, 1}));
    EXPECT_EQ(values(c), (std::vector<float>{2, 4, 6}));

    auto s = run_op(op::gather{0}, {data, i64({}, {2})});
    EXPECT_EQ(s.get_shape().lens(), (dims{2}));
    EXPECT_EQ(values(s), (std::vector<float>{5, 6}));
}

TEST(data_movement, gather_transposed_data_and_broadcast_indices) {
    // Logical [[1, 3, 5], [2, 4, 6]] stored column-major.
    auto data = f32({3, 2}, {1, 2, 3, 4, 5, 6}).view(shape{dtype::f32, {2, 3}, {1, 2}});
    auto idx = i64({1}, {2}).view(shape{dtype::i64, {2}, {0}});
    auto r = run_op(op::gather{1}, {data, idx});
    EXPECT_EQ(r.get_shape().lens(), (dims{2, 2}));
    EXPECT_EQ(values(r), (std::vector<float>{5, 5, 6, 6}));
    auto h = from_vector<float>(dtype::f16, {3}, std::vector<float>{0.1f, 0.2f, 0.3f});
    auto g = run_op(op::gather{0}, {h, i64({2}, {2, 0})});
    EXPECT_EQ(g.get_shape().type(), dtype::f16);
    EXPECT_EQ(values(g), (std::vector<float>{float(float16(0.3f)), float(float16(0.1f))}));
}

TEST(data_movement, gather_errors) {
    auto data = f32({3, 2}, {1, 2, 3, 4, 5, 6});
    expect_user_error([&] { run_op(op::gather{0}, {data, i64({1}, {3})}); }, "gather");
    expect_user_error([&] { run_op(op::gather{1}, {data, i64({1}, {-3})}); }, "gather");
    expect_user_error(
        [&] {
            op::gather{0}.compute_shape({data.get_shape(), shape{dtype::f32, {1}}});
        },
        "gather");
    expect_user_error(
        [&] {
            op::gather{2}.compute_shape({data.get_shape(), shape{dtype::i64, {1}}});
        },
        "gather");
}

TEST(data_movement, gather_elements_onnx_examples) {
    auto d2 = f32({2, 2}, {1, 2, 3, 4});
    EXPECT_EQ(values(run_op(op::gather_elements{1}, {d2, i64({2, 2}, {0, 0, 1, 0})})),
              (std::vector<float>{1, 1, 4, 3}));
    auto d3 = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    EXPECT_EQ(values(run_op(op::gather_elements{0}, {d3, i64({2, 3}, {1, 2, 0, 2, 0, 0})})),
              (std::vector<float>{4, 8, 3, 7, 2, 3}));
    EXPECT_EQ(values(run_op(op::gather_elements{0}, {d3, i64({2, 3}, {-1, -2, 0, -2, 0, 0})})),
              (std::vector<float>{7, 5, 3, 4, 2, 3}));
    // Indices smaller than the data outside the axis read the leading corner.
    auto r = run_op(op::gather_elements{1}, {d3, i64({2, 2}, {2, 0, 1, 1})});
    EXPECT_EQ(r.get_shape().lens(), (dims{2, 2}));
    EXPECT_EQ(values(r), (std::vector<float>{3, 1, 5, 5}));
}

TEST(data_movement, gather_elements_strided_inputs_and_errors) {
    // Logical data [[1, 4, 7], [2, 5, 8], [3, 6, 9]]; indices transposed to [[1, 0], [2, 1]].
    auto d = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}).view(shape{dtype::f32, {3, 3}, {1, 3}});
    auto idx = i64({2, 2}, {1, 2, 0, 1}).view(shape{dtype::i64, {2, 2}, {1, 2}});
    EXPECT_EQ(values(run_op(op::gather_elements{0}, {d, idx})), (std::vector<float>{2, 4, 3, 5}));
    expect_user_error(
        [&] {
            run_op(op::gather_elements{0}, {d, i64({1, 1}, {3})});
        },
        "gather_elements");
    expect_user_error(
        [&] {
            run_op(op::gather_elements{0}, {d, i64({3}, {0, 1, 2})});
        },
        "gather_elements");
    expect_user_error(
        [&] {
            op::gather_elements{0}.compute_shape({d.get_shape(), shape{dtype::i64, {2, 4}}});
        },
        "gather_elements");
}

TEST(data_movement, gather_nd_onnx_examples_and_negative_indices) {
    auto d = f32({2, 2}, {0, 1, 2, 3});
    EXPECT_EQ(values(run_op(op::gather_nd{}, {d, i64({2, 2}, {0, 0, 1, 1})})),
              (std::vector<float>{0, 3}));
    EXPECT_EQ(values(run_op(op::gather_nd{}, {d, i64({2, 2}, {-2, 0, -1, -1})})),
              (std::vector<float>{0, 3}));
    auto rows = run_op(op::gather_nd{}, {d, i64({2, 1}, {1, 0})});
    EXPECT_EQ(rows.get_shape().lens(), (dims{2, 2}));
    EXPECT_EQ(values(rows), (std::vector<float>{2, 3, 0, 1}));
}

TEST(data_movement, gather_nd_batch_dims_1) {
    auto d = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
    auto r = run_op(op::gather_nd{1}, {d, i64({2, 1}, {1, 0})});
    EXPECT_EQ(r.get_shape().lens(), (dims{2, 2}));
    EXPECT_EQ(values(r), (std::vector<float>{2, 3, 4, 5}));
    // Batch 0 picks d[0][1][0], batch 1 d[1][0][1] and d[1][1][1].
    auto e = run_op(op::gather_nd{1}, {d, i64({2, 1, 2}, {1, 0, 0, 1})});
    EXPECT_EQ(e.get_shape().lens(), (dims{2, 1}));
    EXPECT_EQ(values(e), (std::vector<float>{2, 5}));
}

TEST(data_movement, gather_nd_transposed_inputs_and_errors) {
    // Logical [[0, 1], [2, 3]] and indices [[1, 1], [0, 1]], both stored column-major.
    auto d = f32({2, 2}, {0, 2, 1, 3}).view(shape{dtype::f32, {2, 2}, {1, 2}});
    auto idx = i64({2, 2}, {1, 0, 1, 1}).view(shape{dtype::i64, {2, 2}, {1, 2}});
    EXPECT_EQ(values(run_op(op::gather_nd{}, {d, idx})), (std::vector<float>{3, 1}));
    EXPECT_EQ(test::user_error_of([&] {
                  run_op(op::gather_nd{}, {d, i64({1, 2}, {0, 2})});
              }),
              "gather_nd: index 2 out of range [-2, 2) for axis 1 of length 2");
    EXPECT_EQ(test::user_error_of([&] {
                  op::gather_nd{}.compute_shape({d.get_shape(), shape{dtype::i64, {1, 3}}});
              }),
              "gather_nd: the indices' last axis has length 3 but must be in [1, 2] (data rank 2 "
              "less batch_dims 0)");
    EXPECT_EQ(
        test::user_error_of([&] {
            op::gather_nd{1}.compute_shape({shape{dtype::f32, {2, 3}}, shape{dtype::i64, {3, 1}}});
        }),
        "gather_nd: indices [3,1] and data [2,3] differ in batch axis 0");
}

} // namespace data_movement_test
