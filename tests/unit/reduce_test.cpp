#include "conflux/ops/reduce.hpp"

#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace reduce_test {

using namespace conflux;
using test::run_op;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();

argument f32(const dims& lens, const std::vector<float>& v) {
    return from_vector<float>(dtype::f32, lens, v);
}

shape shape_of(const operation& op, const std::vector<shape>& in) {
    return op.compute_shape(in);
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want,
                     float tol = 1e-5f) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i]))
            EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
        else if (std::isinf(want[i]))
            EXPECT_EQ(got[i], want[i]) << "element " << i;
        else
            EXPECT_NEAR(got[i], want[i], tol * std::max(1.0f, std::fabs(want[i])))
                << "element " << i;
    }
}

op::reduce red(op::reduce_kind k, std::vector<std::int64_t> axes, bool keepdims = true) {
    op::reduce r;
    r.kind = k;
    r.axes = std::move(axes);
    r.keepdims = keepdims;
    return r;
}

// Expects a user_error whose message starts with `prefix`.
template <class F> void expect_user_error(F&& f, const std::string& prefix) {
    try {
        f();
        ADD_FAILURE() << "expected a user_error starting with " << prefix;
    } catch (const user_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
    }
}

} // namespace

TEST(reduce, sum_over_one_axis_with_and_without_keepdims) {
    auto x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    auto r = run_op(red(op::reduce_kind::sum, {1}), {x});
    EXPECT_EQ(r.get_shape().lens(), (dims{2, 1}));
    EXPECT_EQ(to_vector<float>(r), (std::vector<float>{6, 15}));
    r = run_op(red(op::reduce_kind::sum, {0}, false), {x});
    EXPECT_EQ(r.get_shape().lens(), (dims{3}));
    EXPECT_EQ(to_vector<float>(r), (std::vector<float>{5, 7, 9}));
}

TEST(reduce, every_kind_on_hand_computed_rows) {
    auto x = f32({2, 3}, {1, 2, 3, -1, 0.5f, 4});
    using K = op::reduce_kind;
    struct row {
        K kind;
        std::vector<float> want;
    };
    std::vector<row> rows = {
        {K::sum, {6, 3.5f}},
        {K::mean, {2, 3.5f / 3}},
        {K::max, {3, 4}},
        {K::min, {1, -1}},
        {K::prod, {6, -2}},
        {K::l1, {6, 5.5f}},
        {K::l2, {3.74165739f, 4.15331193f}},
        {K::log_sum, {1.79175947f, 1.25276297f}},
        {K::log_sum_exp, {3.40760596f, 4.03626957f}},
        {K::sum_square, {14, 17.25f}},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(std::string(op::reduce_kind_name(r.kind)));
        expect_near_all(to_vector<float>(run_op(red(r.kind, {1}), {x})), r.want);
    }
}

TEST(reduce, empty_axes_reduce_everything_unless_noop) {
    auto x = f32({2, 2}, {1, 2, 3, 4});
    auto all = run_op(red(op::reduce_kind::max, {}), {x});
    EXPECT_EQ(all.get_shape().lens(), (dims{1, 1}));
    EXPECT_EQ(to_vector<float>(all), (std::vector<float>{4}));
    auto scalar = run_op(red(op::reduce_kind::sum, {}, false), {x});
    EXPECT_EQ(scalar.get_shape().lens(), (dims{}));
    EXPECT_EQ(to_vector<float>(scalar), (std::vector<float>{10}));

    auto noop = red(op::reduce_kind::sum_square, {}, false);
    noop.noop_with_empty_axes = true;
    // A transposed input: the copy must come back in logical order.
    auto t = x.view(shape{dtype::f32, {2, 2}, {1, 2}});
    auto r = run_op(noop, {t});
    EXPECT_EQ(r.get_shape(), (shape{dtype::f32, {2, 2}}));
    EXPECT_EQ(to_vector<float>(r), (std::vector<float>{1, 3, 2, 4}));
}

TEST(reduce, transposed_input_over_two_axes) {
    std::vector<float> base(12);
    for (std::size_t i = 0; i < base.size(); ++i)
        base[i] = float(i);
    // Logical (i, j, k) of the view is base[i][k][j] = 6i + 3k + j.
    auto x = f32({2, 2, 3}, base).view(shape{dtype::f32, {2, 3, 2}, {6, 1, 3}});
    auto r = run_op(red(op::reduce_kind::sum, {0, 2}, false), {x});
    EXPECT_EQ(r.get_shape().lens(), (dims{3}));
    EXPECT_EQ(to_vector<float>(r), (std::vector<float>{18, 22, 26}));
}

TEST(reduce, broadcast_and_offset_views) {
    auto row = f32({3}, {1, 2, 3});
    auto b = row.view(shape{dtype::f32, {4, 3}, {0, 1}});
    EXPECT_EQ(to_vector<float>(run_op(red(op::reduce_kind::sum, {0}, false), {b})),
              (std::vector<float>{4, 8, 12}));
    EXPECT_EQ(to_vector<float>(run_op(red(op::reduce_kind::max, {1}, false), {b})),
              (std::vector<float>{3, 3, 3, 3}));

    std::vector<float> ten(10);
    for (std::size_t i = 0; i < ten.size(); ++i)
        ten[i] = float(i);
    // [[1, 2], [5, 6]]: rows 4 apart, starting one element in.
    auto v = f32({10}, ten).view(shape{dtype::f32, {2, 2}, {4, 1}}, 1);
    EXPECT_EQ(to_vector<float>(run_op(red(op::reduce_kind::sum, {1}, false), {v})),
              (std::vector<float>{3, 11}));
    EXPECT_EQ(to_vector<float>(run_op(red(op::reduce_kind::prod, {0}, false), {v})),
              (std::vector<float>{5, 12}));
}

TEST(reduce, every_axis_subset_matches_a_naive_loop) {
    dims lens{3, 1, 4, 2};
    std::size_t n = 24;
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = float((i * 7) % 11) - 5;
    auto x = f32(lens, v);
    shape s{dtype::f32, lens};
    for (unsigned mask = 0; mask < 16; ++mask) {
        std::vector<std::int64_t> axes;
        for (std::int64_t a = 0; a < 4; ++a)
            if (mask & (1u << a)) axes.push_back(a);
        if (axes.empty()) continue;
        for (auto kind : {op::reduce_kind::sum, op::reduce_kind::max}) {
            auto r = run_op(red(kind, axes, true), {x});
            const shape& os = r.get_shape();
            std::vector<float> want(os.elements(), kind == op::reduce_kind::sum ? 0.0f : -inf);
            for (std::size_t i = 0; i < n; ++i) {
                dims idx = s.multi_index(i);
                for (auto a : axes)
                    idx[std::size_t(a)] = 0;
                float& w = want[os.index(idx)];
                w = kind == op::reduce_kind::sum ? w + v[i] : std::max(w, v[i]);
            }
            EXPECT_EQ(to_vector<float>(r), want) << "mask " << mask;
        }
    }
}

TEST(reduce, zero_length_axis_gives_the_identity) {
    auto x = f32({2, 0}, {});
    using K = op::reduce_kind;
    EXPECT_EQ(to_vector<float>(run_op(red(K::sum, {1}), {x})), (std::vector<float>{0, 0}));
    EXPECT_EQ(to_vector<float>(run_op(red(K::prod, {1}), {x})), (std::vector<float>{1, 1}));
    EXPECT_EQ(to_vector<float>(run_op(red(K::max, {1}), {x})), (std::vector<float>{-inf, -inf}));
    EXPECT_EQ(to_vector<float>(run_op(red(K::min, {1}), {x})), (std::vector<float>{inf, inf}));
    EXPECT_EQ(to_vector<float>(run_op(red(K::log_sum_exp, {1}), {x})),
              (std::vector<float>{-inf, -inf}));
    expect_near_all(to_vector<float>(run_op(red(K::mean, {1}), {x})), {NAN, NAN});
    // Reducing the non-empty axis leaves an empty result.
    EXPECT_EQ(run_op(red(K::sum, {0}), {x}).get_shape().lens(), (dims{1, 0}));

    auto i8 = from_vector<int>(dtype::i8, {0}, std::vector<int>{});
    EXPECT_EQ(to_vector<int>(run_op(red(K::max, {0}), {i8})), (std::vector<int>{-128}));
    EXPECT_EQ(to_vector<int>(run_op(red(K::min, {0}), {i8})), (std::vector<int>{127}));
    EXPECT_EQ(to_vector<int>(run_op(red(K::mean, {0}), {i8})), (std::vector<int>{0}));
}

TEST(reduce, f16_accumulates_in_float_and_rounds_once) {
    // In f16, 2048 + 1 rounds back to 2048; accumulating in float keeps both ones.
    auto x = from_vector<float>(dtype::f16, {3}, std::vector<float>{2048, 1, 1});
    auto r = run_op(red(op::reduce_kind::sum, {0}), {x});
    EXPECT_EQ(r.get_shape().type(), dtype::f16);
    EXPECT_EQ(to_vector<float>(r), (std::vector<float>{2050}));

    auto m = from_vector<float>(dtype::f16, {2, 2}, std::vector<float>{1, 2, 2, 2})
                 .view(shape{dtype::f16, {2, 2}, {1, 2}});
    // mean of {1, 2} = 1.5 and of {2, 2} = 2 along the transposed rows.
    EXPECT_EQ(to_vector<float>(run_op(red(op::reduce_kind::mean, {1}, false), {m})),
              (std::vector<float>{1.5f, 2}));
}

TEST(reduce, integers_wrap_and_truncate_like_numpy) {
    auto x = from_vector<int>(dtype::i32, {2, 2}, std::vector<int>{1, 2, -1, -2});
    auto mean = run_op(red(op::reduce_kind::mean, {1}, false), {x});
    EXPECT_EQ(mean.get_shape().type(), dtype::i32);
    EXPECT_EQ(to_vector<int>(mean), (std::vector<int>{1, -1}));
    EXPECT_EQ(to_vector<int>(run_op(red(op::reduce_kind::l1, {1}, false), {x})),
              (std::vector<int>{3, 3}));
    EXPECT_EQ(to_vector<int>(run_op(red(op::reduce_kind::prod, {}, false), {x})),
              (std::vector<int>{4}));
    // log(e^1 + e^2) = 2.31 truncates to 2.
    EXPECT_EQ(to_vector<int>(run_op(red(op::reduce_kind::log_sum_exp, {1}, false), {x})).at(0), 2);
}

TEST(reduce, max_and_min_propagate_nan) {
    auto x = f32({2, 3}, {1, NAN, 3, 4, 5, 6});
    expect_near_all(to_vector<float>(run_op(red(op::reduce_kind::max, {1}), {x})), {NAN, 6});
    expect_near_all(to_vector<float>(run_op(red(op::reduce_kind::min, {1}), {x})), {NAN, 4});
}

TEST(reduce, log_sum_exp_is_stable) {
    auto x = f32({2, 2}, {1000, 1000, -inf, -inf});
    expect_near_all(to_vector<float>(run_op(red(op::reduce_kind::log_sum_exp, {1}), {x})),
                    {1000.693147f, -inf});
}

TEST(reduce, bad_axes_are_user_errors) {
    shape s{dtype::f32, {2, 3}};
    expect_user_error([&] { shape_of(red(op::reduce_kind::sum, {2}), {s}); }, "reduce_sum");
    expect_user_error([&] { shape_of(red(op::reduce_kind::mean, {-1}), {s}); }, "reduce_mean");
    expect_user_error([&] { shape_of(red(op::reduce_kind::max, {1, 0}), {s}); }, "reduce_max");
    expect_user_error([&] { shape_of(red(op::reduce_kind::l2, {1, 1}), {s}); }, "reduce_l2");
    expect_user_error([&] { shape_of(red(op::reduce_kind::sum, {0}), {s, s}); }, "reduce_sum");
}

TEST(reduce, name_and_attributes) {
    operation op = red(op::reduce_kind::log_sum_exp, {0, 2}, false);
    EXPECT_EQ(op.name(), "reduce_log_sum_exp");
    EXPECT_EQ(op.attributes()["axes"], nlohmann::json({0, 2}));
    EXPECT_EQ(op.attributes()["keepdims"], false);
    EXPECT_FALSE(op == operation{red(op::reduce_kind::sum, {0, 2}, false)});
}

TEST(softmax, rows_sum_to_one_and_log_softmax_matches) {
    auto x = f32({2, 3}, {1, 2, 3, 0, 0, 0});
    op::softmax sm{1, false};
    expect_near_all(to_vector<float>(run_op(sm, {x})),
                    {0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f});
    op::softmax lsm{1, true};
    EXPECT_EQ(operation{lsm}.name(), "log_softmax");
    expect_near_all(to_vector<float>(run_op(lsm, {x})), {-2.40760596f, -1.40760596f, -0.40760596f,
                                                         -1.09861229f, -1.09861229f, -1.09861229f});
}

TEST(softmax, outer_axis_of_a_transposed_input) {
    // Logical [[1, 3, 5], [2, 4, 6]] stored column-major; softmax down each column.
    auto x = f32({3, 2}, {1, 2, 3, 4, 5, 6}).view(shape{dtype::f32, {2, 3}, {1, 2}});
    auto r = run_op(op::softmax{0, false}, {x});
    EXPECT_TRUE(r.get_shape().standard());
    expect_near_all(to_vector<float>(r),
                    {0.26894142f, 0.26894142f, 0.26894142f, 0.73105858f, 0.73105858f, 0.73105858f});
}

TEST(softmax, broadcast_input_and_large_values) {
    auto row = f32({2}, {1000, 1001});
    auto b = row.view(shape{dtype::f32, {3, 2}, {0, 1}});
    auto r = to_vector<float>(run_op(op::softmax{1, false}, {b}));
    expect_near_all(r,
                    {0.26894142f, 0.73105858f, 0.26894142f, 0.73105858f, 0.26894142f, 0.73105858f});
    expect_near_all(to_vector<float>(run_op(op::softmax{0, true}, {row})),
                    {-1.31326169f, -0.31326169f});
}

TEST(softmax, f16_rounds_the_result) {
    auto x = from_vector<float>(dtype::f16, {2}, std::vector<float>{0, 1});
    auto r = run_op(op::softmax{0, false}, {x});
    EXPECT_EQ(r.get_shape().type(), dtype::f16);
    // 0.26894142 and 0.73105858 rounded to the nearest f16.
    EXPECT_EQ(to_vector<float>(r),
              (std::vector<float>{float(float16(0.26894142f)), float(float16(0.73105858f))}));
    EXPECT_NE(to_vector<float>(r)[0], 0.26894142f);
}

TEST(softmax, errors) {
    expect_user_error(
        [] {
            shape_of(op::softmax{2, false}, {shape{dtype::f32, {2, 3}}});
        },
        "softmax");
    expect_user_error(
        [] {
            shape_of(op::softmax{0, true}, {shape{dtype::i32, {2}}});
        },
        "log_softmax");
    expect_user_error([] { shape_of(op::softmax{0, false}, {shape{dtype::f32, {}}}); }, "softmax");
}

TEST(reduce, argmax_argmin_first_and_last_index) {
    auto x = f32({2, 3}, {1, 3, 3, 5, 2, 5});
    op::arg_reduce am{true, 1, true, false};
    auto r = run_op(am, {x});
    EXPECT_EQ(r.get_shape(), (shape{dtype::i64, {2, 1}}));
    EXPECT_EQ(to_vector<std::int64_t>(r), (std::vector<std::int64_t>{1, 0}));
    am.select_last_index = true;
    am.keepdims = false;
    r = run_op(am, {x});
    EXPECT_EQ(r.get_shape(), (shape{dtype::i64, {2}}));
    EXPECT_EQ(to_vector<std::int64_t>(r), (std::vector<std::int64_t>{2, 2}));

    auto y = f32({2, 3}, {1, 1, 3, 2, 0, 0});
    op::arg_reduce an{false, 1, false, false};
    EXPECT_EQ(operation{an}.name(), "argmin");
    EXPECT_EQ(to_vector<std::int64_t>(run_op(an, {y})), (std::vector<std::int64_t>{0, 1}));
    an.select_last_index = true;
    EXPECT_EQ(to_vector<std::int64_t>(run_op(an, {y})), (std::vector<std::int64_t>{1, 2}));
}

TEST(reduce, argmax_on_transposed_and_broadcast_inputs) {
    // Logical [[1, 9, 5], [7, 2, 6]] stored column-major.
    auto t = f32({3, 2}, {1, 7, 9, 2, 5, 6}).view(shape{dtype::f32, {2, 3}, {1, 2}});
    EXPECT_EQ(to_vector<std::int64_t>(run_op(op::arg_reduce{true, 0, false, false}, {t})),
              (std::vector<std::int64_t>{1, 0, 1}));
    EXPECT_EQ(to_vector<std::int64_t>(run_op(op::arg_reduce{true, 1, false, false}, {t})),
              (std::vector<std::int64_t>{1, 0}));
    // Every row equal: first index, or the last with select_last_index.
    auto b = f32({3}, {4, 8, 6}).view(shape{dtype::f32, {4, 3}, {0, 1}});
    EXPECT_EQ(to_vector<std::int64_t>(run_op(op::arg_reduce{false, 0, false, false}, {b})),
              (std::vector<std::int64_t>{0, 0, 0}));
    EXPECT_EQ(to_vector<std::int64_t>(run_op(op::arg_reduce{false, 0, false, true}, {b})),
              (std::vector<std::int64_t>{3, 3, 3}));
}

TEST(reduce, argmax_nan_and_f16_and_errors) {
    auto x = f32({4}, {1, NAN, 3, NAN});
    EXPECT_EQ(to_vector<std::int64_t>(run_op(op::arg_reduce{true, 0, false, false}, {x})),
              (std::vector<std::int64_t>{1}));
    EXPECT_EQ(to_vector<std::int64_t>(run_op(op::arg_reduce{false, 0, false, true}, {x})),
              (std::vector<std::int64_t>{3}));
    auto h = from_vector<float>(dtype::f16, {3}, std::vector<float>{-1, -4, 2});
    EXPECT_EQ(to_vector<std::int64_t>(run_op(op::arg_reduce{false, 0, true, false}, {h})),
              (std::vector<std::int64_t>{1}));
    expect_user_error(
        [] {
            shape_of(op::arg_reduce{true, 1, true, false}, {shape{dtype::f32, {3}}});
        },
        "argmax");
    expect_user_error(
        [] {
            shape_of(op::arg_reduce{false, 0, true, false}, {shape{dtype::f32, {0, 2}}});
        },
        "argmin");
}

} // namespace reduce_test
