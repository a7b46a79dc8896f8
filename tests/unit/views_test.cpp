#include "conflux/ops/views.hpp"

#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <numeric>

namespace views_test {

using namespace conflux;

namespace {

// 0, 1, 2, ... as f32 in a standard tensor.
argument iota(const dims& lens) {
    std::vector<float> v(shape{dtype::f32, lens}.elements());
    std::iota(v.begin(), v.end(), 0.0f);
    return from_vector(dtype::f32, lens, v);
}

template <class Op> argument run(const Op& op, const argument& in) {
    auto out = op.compute_shape({in.get_shape()});
    auto result = op.eval(out, {in});
    // The GPU target allocates from compute_shape, so eval must produce exactly that layout.
    EXPECT_EQ(result.get_shape(), out) << op.name();
    return result;
}

// Whether `v` aliases `in`'s memory, `offset` elements in.
bool aliases(const argument& v, const argument& in, std::size_t offset = 0) {
    return v.storage() == in.storage() || v.data() == in.data() + offset * size_of(dtype::f32);
}

bool shares_storage(const argument& v, const argument& in) {
    // Views share the owner (the aliasing shared_ptr keeps one control block).
    return !v.storage().owner_before(in.storage()) && !in.storage().owner_before(v.storage());
}

std::vector<float> values(const argument& a) {
    return to_vector<float>(a);
}

using test::user_error_of;

constexpr auto i64_max = std::numeric_limits<std::int64_t>::max();
constexpr auto i64_min = std::numeric_limits<std::int64_t>::min();

} // namespace

TEST(views, transpose_is_a_view_with_permuted_strides) {
    auto x = iota({2, 3, 4});
    auto t = run(op::transpose{{2, 0, 1}}, x);
    EXPECT_EQ(t.get_shape().lens(), (dims{4, 2, 3}));
    EXPECT_EQ(t.get_shape().strides(), (dims{1, 12, 4}));
    EXPECT_TRUE(shares_storage(t, x));
    EXPECT_EQ(t.data(), x.data());
    // t[i][j][k] = x[j][k][i] = 12j + 4k + i.
    auto v = values(t);
    EXPECT_EQ(v[0 * 6 + 1 * 3 + 2], 12 + 8);
    EXPECT_EQ(v[3 * 6 + 0 * 3 + 1], 4 + 3);
    // Transposing back gives the standard shape exactly.
    auto back = run(op::transpose{{1, 2, 0}}, t);
    EXPECT_EQ(back.get_shape(), x.get_shape());
    EXPECT_EQ(values(back), values(x));
}

TEST(views, transpose_rejects_non_permutations) {
    shape s{dtype::f32, {2, 3}};
    for (auto perm : {std::vector<std::int64_t>{0}, {0, 0}, {0, 2}, {-1, 0}, {1, 0, 2}}) {
        auto msg = user_error_of([&] { op::transpose{perm}.compute_shape({s}); });
        EXPECT_EQ(msg.rfind("transpose:", 0), 0u) << msg;
    }
}

TEST(views, reshape_of_standard_input_is_a_view) {
    auto x = iota({2, 3, 4});
    auto r = run(op::reshape{{6, 1, 4}}, x);
    EXPECT_EQ(r.get_shape(), (shape{dtype::f32, {6, 1, 4}}));
    EXPECT_TRUE(shares_storage(r, x));
    EXPECT_EQ(values(r), values(x));
}

TEST(views, reshape_of_transposed_input_views_when_merged_axes_are_contiguous) {
    // x is [4,2,3] standard; t = transpose(1,2,0) is [2,3,4] with strides {3,1,6}.
    auto x = iota({4, 2, 3});
    auto t = run(op::transpose{{1, 2, 0}}, x);
    ASSERT_EQ(t.get_shape().strides(), (dims{3, 1, 6}));
    auto expected = values(t);

    // Axes 0 and 1 are contiguous among themselves: merge them without a copy.
    auto merged = run(op::reshape{{6, 4}}, t);
    EXPECT_EQ(merged.get_shape().strides(), (dims{1, 6}));
    EXPECT_TRUE(shares_storage(merged, x));
    EXPECT_EQ(values(merged), expected);

    // Splitting an axis is always possible.
    auto split = run(op::reshape{{2, 3, 2, 2}}, t);
    EXPECT_EQ(split.get_shape().strides(), (dims{3, 1, 12, 6}));
    EXPECT_TRUE(shares_storage(split, x));
    EXPECT_EQ(values(split), expected);

    // Axes 1 and 2 are not contiguous together: compute_shape says standard and eval copies.
    auto copied = run(op::reshape{{2, 12}}, t);
    EXPECT_EQ(copied.get_shape(), (shape{dtype::f32, {2, 12}}));
    EXPECT_FALSE(shares_storage(copied, x));
    EXPECT_EQ(values(copied), expected);
    // t[0] row-major is x[:, 0, :] read with the last index fastest: 0, 6, 12, 18, 1, 7, ...
    EXPECT_EQ(std::vector<float>(expected.begin(), expected.begin() + 6),
              (std::vector<float>{0, 6, 12, 18, 1, 7}));
}

TEST(views, reshape_of_broadcast_input) {
    auto row = iota({3});
    auto b = run(op::broadcast{{2, 3}}, row);
    ASSERT_EQ(b.get_shape().strides(), (dims{0, 1}));
    // Adding a len-1 axis or splitting the broadcast axis keeps the view.
    auto more = run(op::reshape{{2, 1, 3}}, b);
    EXPECT_TRUE(shares_storage(more, row));
    EXPECT_EQ(values(more), (std::vector<float>{0, 1, 2, 0, 1, 2}));
    auto zeros = run(op::broadcast{{4, 3}}, row);
    auto split = run(op::reshape{{2, 2, 3}}, zeros);
    EXPECT_EQ(split.get_shape().strides(), (dims{0, 0, 1}));
    // Merging the broadcast axis with a real one needs a copy.
    auto flat = run(op::reshape{{6}}, b);
    EXPECT_FALSE(shares_storage(flat, row));
    EXPECT_EQ(values(flat), (std::vector<float>{0, 1, 2, 0, 1, 2}));
}

TEST(views, reshape_checks_the_element_count) {
    auto msg = user_error_of([] {
        op::reshape{{4, 2}}.compute_shape({shape{dtype::f32, {3, 3}}});
    });
    EXPECT_EQ(msg.rfind("reshape:", 0), 0u) << msg;
    EXPECT_NE(msg.find("[3,3]"), std::string::npos) << msg;
}

TEST(views, reshape_as_view_reports_when_a_copy_is_needed) {
    EXPECT_EQ(op::reshape_as_view(shape{dtype::f32, {2, 3}}, {3, 2}), (shape{dtype::f32, {3, 2}}));
    EXPECT_FALSE(op::reshape_as_view(shape{dtype::f32, {2, 3}, {1, 2}}, {6}).has_value());
    // Padded rows: the row axis splits but cannot merge with the column axis.
    EXPECT_EQ(op::reshape_as_view(shape{dtype::f32, {4, 3}, {8, 1}}, {2, 2, 3}),
              (shape{dtype::f32, {2, 2, 3}, {16, 8, 1}}));
    EXPECT_FALSE(op::reshape_as_view(shape{dtype::f32, {4, 3}, {8, 1}}, {12}).has_value());
    EXPECT_EQ(op::reshape_as_view(shape{dtype::f32, {}}, {1, 1}), (shape{dtype::f32, {1, 1}}));
}

TEST(views, flatten) {
    auto x = iota({2, 3, 4});
    EXPECT_EQ(run(op::flatten{1}, x).get_shape(), (shape{dtype::f32, {2, 12}}));
    EXPECT_EQ(run(op::flatten{0}, x).get_shape(), (shape{dtype::f32, {1, 24}}));
    EXPECT_EQ(run(op::flatten{3}, x).get_shape(), (shape{dtype::f32, {24, 1}}));
    EXPECT_EQ(run(op::flatten{-1}, x).get_shape(), (shape{dtype::f32, {6, 4}}));
    EXPECT_TRUE(shares_storage(run(op::flatten{2}, x), x));
    // NHWC memory seen as NCHW: flatten(1) must gather channels first, so it copies.
    auto nhwc = iota({1, 2, 2, 3});
    auto nchw = run(op::transpose{{0, 3, 1, 2}}, nhwc);
    auto f = run(op::flatten{1}, nchw);
    EXPECT_EQ(f.get_shape(), (shape{dtype::f32, {1, 12}}));
    EXPECT_FALSE(shares_storage(f, nhwc));
    EXPECT_EQ(values(f), (std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
    auto msg = user_error_of([&] { op::flatten{4}.compute_shape({x.get_shape()}); });
    EXPECT_EQ(msg.rfind("flatten:", 0), 0u) << msg;
}

TEST(views, squeeze_and_unsqueeze) {
    auto x = iota({2, 1, 3, 1});
    auto s = run(op::squeeze{{1, 3}}, x);
    EXPECT_EQ(s.get_shape(), (shape{dtype::f32, {2, 3}}));
    EXPECT_TRUE(shares_storage(s, x));
    EXPECT_EQ(run(op::squeeze{{}}, x).get_shape(), (shape{dtype::f32, {2, 3}}));
    EXPECT_EQ(run(op::squeeze{{-1}}, x).get_shape().lens(), (dims{2, 1, 3}));

    // Unsqueezing a standard input gives the standard shape exactly.
    auto u = run(op::unsqueeze{{0, 2, 4}}, s);
    EXPECT_EQ(u.get_shape(), (shape{dtype::f32, {1, 2, 1, 3, 1}}));
    EXPECT_TRUE(shares_storage(u, x));
    EXPECT_EQ(values(u), values(x));

    // On a transposed input the other strides are kept.
    auto t = run(op::transpose{{1, 0}}, s); // [3,2] strides {1,3}
    auto ut = run(op::unsqueeze{{1}}, t);
    EXPECT_EQ(ut.get_shape().lens(), (dims{3, 1, 2}));
    EXPECT_EQ(ut.get_shape().strides()[0], 1u);
    EXPECT_EQ(ut.get_shape().strides()[2], 3u);
    EXPECT_EQ(values(ut), values(t));
    auto back = run(op::squeeze{{1}}, ut);
    EXPECT_EQ(back.get_shape(), t.get_shape());

    auto msg = user_error_of([&] { op::squeeze{{0}}.compute_shape({x.get_shape()}); });
    EXPECT_EQ(msg.rfind("squeeze:", 0), 0u) << msg;
    msg = user_error_of([&] { op::squeeze{{4}}.compute_shape({x.get_shape()}); });
    EXPECT_EQ(msg.rfind("squeeze:", 0), 0u) << msg;
    msg = user_error_of([&] { op::unsqueeze{{0, 0}}.compute_shape({x.get_shape()}); });
    EXPECT_EQ(msg.rfind("unsqueeze:", 0), 0u) << msg;
    msg = user_error_of([&] { op::unsqueeze{{5}}.compute_shape({shape{dtype::f32, {2, 3}}}); });
    EXPECT_EQ(msg.rfind("unsqueeze:", 0), 0u) << msg;
}

TEST(views, broadcast_gives_zero_strides) {
    auto col = iota({2, 1});
    auto b = run(op::broadcast{{3, 2, 4}}, col);
    EXPECT_EQ(b.get_shape().strides(), (dims{0, 1, 0}));
    EXPECT_TRUE(shares_storage(b, col));
    auto v = values(b);
    EXPECT_EQ(v.size(), 24u);
    EXPECT_EQ(v[0 * 8 + 1 * 4 + 3], 1);
    EXPECT_EQ(v[2 * 8 + 0 * 4 + 2], 0);
    // Broadcasting to the same lens is the identity.
    EXPECT_EQ(run(op::broadcast{{2, 1}}, col).get_shape(), col.get_shape());
    auto msg = user_error_of([] { op::broadcast{{2, 4}}.compute_shape({shape{dtype::f32, {3}}}); });
    EXPECT_EQ(msg.rfind("broadcast:", 0), 0u) << msg;
    msg = user_error_of([] { op::broadcast{{3}}.compute_shape({shape{dtype::f32, {1, 3}}}); });
    EXPECT_EQ(msg.rfind("broadcast:", 0), 0u) << msg;
}

TEST(views, broadcast_lens_follows_numpy) {
    EXPECT_EQ(op::broadcast_lens("Add", {{2, 1, 3}, {4, 3}}), (dims{2, 4, 3}));
    EXPECT_EQ(op::broadcast_lens("Add", {{5}, {}, {1, 1}}), (dims{1, 5}));
    EXPECT_EQ(op::broadcast_lens("Where", {{1, 3}, {2, 1}, {3}}), (dims{2, 3}));
    EXPECT_EQ(op::broadcast_lens("Add", {{0, 3}, {1, 3}}), (dims{0, 3}));
    auto msg = user_error_of([] { op::broadcast_lens("node 'add_1' (Add)", {{2, 3}, {4, 3}}); });
    EXPECT_EQ(msg.rfind("node 'add_1' (Add):", 0), 0u) << msg;
    EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4,3]"), std::string::npos) << msg;
}

TEST(views, slice_with_positive_steps_is_an_offset_view) {
    auto x = iota({10});
    auto s = run(op::slice{{0}, {2}, {5}, {}}, x);
    EXPECT_EQ(s.get_shape(), (shape{dtype::f32, {3}}));
    EXPECT_TRUE(shares_storage(s, x));
    EXPECT_EQ(s.data(), x.data() + 2 * sizeof(float));
    EXPECT_EQ(values(s), (std::vector<float>{2, 3, 4}));

    auto stepped = run(op::slice{{0}, {1}, {i64_max}, {3}}, x);
    EXPECT_EQ(stepped.get_shape().strides(), (dims{3}));
    EXPECT_EQ(values(stepped), (std::vector<float>{1, 4, 7}));

    // Negative starts and ends count from the end; out-of-range values clamp.
    EXPECT_EQ(values(run(op::slice{{0}, {-3}, {-1}, {}}, x)), (std::vector<float>{7, 8}));
    EXPECT_EQ(values(run(op::slice{{0}, {-100}, {2}, {}}, x)), (std::vector<float>{0, 1}));
    EXPECT_EQ(values(run(op::slice{{0}, {8}, {100}, {}}, x)), (std::vector<float>{8, 9}));
    EXPECT_EQ(run(op::slice{{0}, {5}, {2}, {}}, x).get_shape().lens(), (dims{0}));
    EXPECT_EQ(run(op::slice{{0}, {20}, {30}, {}}, x).get_shape().lens(), (dims{0}));
    EXPECT_EQ(run(op::slice{{0}, {0}, {10}, {i64_max}}, x).get_shape().lens(), (dims{1}));

    // Two axes of a matrix, one given as negative; steps keep the other stride.
    auto m = iota({4, 5});
    auto sm = run(op::slice{{-1, 0}, {1, 1}, {5, 4}, {2, 1}}, m);
    EXPECT_EQ(sm.get_shape().lens(), (dims{3, 2}));
    EXPECT_EQ(sm.get_shape().strides(), (dims{5, 2}));
    EXPECT_EQ(sm.data(), m.data() + 6 * sizeof(float));
    EXPECT_EQ(values(sm), (std::vector<float>{6, 8, 11, 13, 16, 18}));
    EXPECT_TRUE((op::slice{{0}, {1}, {2}, {1}}.traits().view));
    EXPECT_TRUE((op::slice{{0}, {1}, {2}, {}}.traits().view));
}

TEST(views, slice_with_negative_steps_copies) {
    auto x = iota({5});
    op::slice reverse{{0}, {-1}, {i64_min}, {-1}};
    EXPECT_FALSE(reverse.traits().view);
    auto r = run(reverse, x);
    EXPECT_EQ(r.get_shape(), (shape{dtype::f32, {5}}));
    EXPECT_FALSE(shares_storage(r, x));
    EXPECT_EQ(values(r), (std::vector<float>{4, 3, 2, 1, 0}));
    EXPECT_EQ(values(run(op::slice{{0}, {-1}, {i64_min}, {-2}}, x)), (std::vector<float>{4, 2, 0}));
    EXPECT_EQ(values(run(op::slice{{0}, {100}, {-100}, {-1}}, x)),
              (std::vector<float>{4, 3, 2, 1, 0}));
    EXPECT_EQ(values(run(op::slice{{0}, {3}, {1}, {-1}}, x)), (std::vector<float>{3, 2}));
    EXPECT_EQ(run(op::slice{{0}, {1}, {3}, {-1}}, x).get_shape().lens(), (dims{0}));
    EXPECT_EQ(values(run(op::slice{{0}, {4}, {0}, {i64_min}}, x)), (std::vector<float>{4}));

    // Mixed with a positive step on another axis, over a transposed input.
    auto m = run(op::transpose{{1, 0}}, iota({3, 4})); // m[i][j] = 4j + i, lens [4,3]
    auto s = run(op::slice{{0, 1}, {-1, 0}, {i64_min, 3}, {-2, 2}}, m);
    EXPECT_EQ(s.get_shape(), (shape{dtype::f32, {2, 2}}));
    EXPECT_EQ(values(s), (std::vector<float>{3, 11, 1, 9}));
}

TEST(views, slice_errors) {
    shape s{dtype::f32, {4}};
    for (const auto& bad :
         {op::slice{{0}, {0}, {2}, {0}}, op::slice{{1}, {0}, {2}, {}},
          op::slice{{0}, {0, 1}, {2}, {}}, op::slice{{0, 0}, {0, 1}, {2, 3}, {}}}) {
        auto msg = user_error_of([&] { bad.compute_shape({s}); });
        EXPECT_EQ(msg.rfind("slice:", 0), 0u) << msg;
    }
}

TEST(views, contiguous_copies_only_when_needed) {
    auto x = iota({2, 3});
    auto same = run(op::contiguous{}, x);
    EXPECT_TRUE(shares_storage(same, x));
    auto t = run(op::transpose{{1, 0}}, x);
    auto c = run(op::contiguous{}, t);
    EXPECT_EQ(c.get_shape(), (shape{dtype::f32, {3, 2}}));
    EXPECT_FALSE(shares_storage(c, x));
    EXPECT_EQ(values(c), (std::vector<float>{0, 3, 1, 4, 2, 5}));
    // Other element sizes take the same path.
    auto h = from_vector(dtype::f16, {2, 2}, std::vector<float>{1, 2, 3, 4});
    auto ht = run(op::contiguous{}, run(op::transpose{{1, 0}}, h));
    EXPECT_EQ(to_vector<float>(ht), (std::vector<float>{1, 3, 2, 4}));
}

TEST(views, ops_compose_through_the_operation_wrapper) {
    operation t = op::transpose{{1, 0}};
    EXPECT_TRUE(t.traits().view);
    EXPECT_EQ(t.to_string(), R"(transpose{"permutation":[1,0]})");
    EXPECT_EQ(operation(op::reshape{{2, 3}}).to_string(), R"(reshape{"dims":[2,3]})");
    auto x = iota({2, 3});
    auto out = t.eval(t.compute_shape({x.get_shape()}), {x}, {}, {});
    EXPECT_EQ(out.get_shape().lens(), (dims{3, 2}));
    EXPECT_TRUE(aliases(out, x));
}

} // namespace views_test
