#include "conflux/ops/dot.hpp"

#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace dot_test {

using namespace conflux;
using test::product;
using test::random_values;

namespace {

argument run(const argument& a, const argument& b) {
    op::dot d;
    auto s = d.compute_shape({a.get_shape(), b.get_shape()});
    return d.eval(s, {a, b});
}

// Broadcasting written out per output element: a batch index of 1 in an operand is pinned to 0.
std::vector<double> naive_dot(const shape& as, const std::vector<double>& a, const shape& bs,
                              const std::vector<double>& b, const dims& out) {
    shape os{dtype::f64, out};
    shape sa{dtype::f64, as.lens()}, sb{dtype::f64, bs.lens()};
    const std::size_t k = as.lens().back();
    std::vector<double> c(os.elements());
    for (std::size_t e = 0; e < c.size(); ++e) {
        dims oi = os.multi_index(e);
        auto pick = [&](const shape& s, std::size_t row, std::size_t col) {
            dims idx(s.rank());
            for (std::size_t d = 0; d + 2 < s.rank(); ++d) {
                std::size_t od = oi.size() - s.rank() + d;
                idx[d] = s.lens()[d] == 1 ? 0 : oi[od];
            }
            idx[s.rank() - 2] = row;
            idx[s.rank() - 1] = col;
            return s.index(idx);
        };
        double acc = 0;
        for (std::size_t kk = 0; kk < k; ++kk)
            acc += a[pick(sa, oi[oi.size() - 2], kk)] * b[pick(sb, kk, oi.back())];
        c[e] = acc;
    }
    return c;
}

} // namespace

TEST(dot, hand_computed) {
    auto a = from_vector(dtype::f32, {2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
    auto b = from_vector(dtype::f32, {3, 2}, std::vector<float>{7, 8, 9, 10, 11, 12});
    auto c = run(a, b);
    EXPECT_EQ(c.get_shape(), (shape{dtype::f32, {2, 2}}));
    EXPECT_EQ(to_vector<float>(c), (std::vector<float>{58, 64, 139, 154}));
}

TEST(dot, broadcast_batches_match_naive) {
    struct dims_pair {
        dims a, b, out;
    };
    const std::vector<dims_pair> cases = {
        {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},
        {{4, 3}, {2, 3, 3, 5}, {2, 3, 4, 5}},
        {{3, 1, 2, 5}, {1, 4, 5, 1}, {3, 4, 2, 1}},
        {{7, 1, 17}, {7, 17, 33}, {7, 1, 33}},
    };
    std::mt19937 rng(1);
    for (const auto& t : cases) {
        SCOPED_TRACE(to_string(t.a) + " x " + to_string(t.b));
        auto av = random_values(product(t.a), rng);
        auto bv = random_values(product(t.b), rng);
        auto c = run(from_vector(dtype::f32, t.a, av), from_vector(dtype::f32, t.b, bv));
        ASSERT_EQ(c.get_shape().lens(), t.out);
        auto want = naive_dot(shape{dtype::f32, t.a}, {av.begin(), av.end()},
                              shape{dtype::f32, t.b}, {bv.begin(), bv.end()}, t.out);
        auto got = to_vector<double>(c);
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-5) << "element " << i;
    }
}

TEST(dot, transposed_and_broadcast_operands) {
    std::mt19937 rng(2);
    // B arrives as the transpose view of a [2, 6, 4] tensor; A's batch axis is a 0-stride view.
    auto bt = from_vector(dtype::f32, {2, 6, 4}, random_values(48, rng));
    auto b = bt.view(shape{dtype::f32, {2, 4, 6}, {24, 1, 4}});
    auto a1 = from_vector(dtype::f32, {3, 4}, random_values(12, rng));
    auto a = a1.view(shape{dtype::f32, {2, 3, 4}, {0, 4, 1}});
    auto c = run(a, b);
    auto want = naive_dot(shape{dtype::f32, {2, 3, 4}}, to_vector<double>(a),
                          shape{dtype::f32, {2, 4, 6}}, to_vector<double>(b), {2, 3, 6});
    auto got = to_vector<double>(c);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5) << i;
    // Same values as with packed copies.
    EXPECT_TRUE(c.same_values(run(a.contiguous(), b.contiguous())));
}

TEST(dot, integer_f16_and_f64) {
    auto a = from_vector(dtype::i32, {1, 2, 2}, std::vector<int>{1, -2, 3, 4});
    auto b = from_vector(dtype::i32, {2, 2}, std::vector<int>{5, 6, 7, -8});
    auto c = run(a, b);
    EXPECT_EQ(c.get_shape(), (shape{dtype::i32, {1, 2, 2}}));
    EXPECT_EQ(to_vector<int>(c), (std::vector<int>{-9, 22, 43, -14}));

    std::mt19937 rng(4);
    for (auto t : {dtype::f16, dtype::bf16, dtype::f64}) {
        SCOPED_TRACE(std::string(to_string(t)));
        auto ah = from_vector(t, {5, 40}, random_values(200, rng));
        auto bh = from_vector(t, {40, 3}, random_values(120, rng));
        auto ch = run(ah, bh);
        EXPECT_EQ(ch.get_shape().type(), t);
        auto want = naive_dot(ah.get_shape(), to_vector<double>(ah), bh.get_shape(),
                              to_vector<double>(bh), {5, 3});
        auto got = to_vector<double>(ch);
        double tol = t == dtype::f64 ? 1e-12 : t == dtype::f16 ? 4e-3 : 3e-2;
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << i;
    }
}

TEST(dot, rejects_bad_shapes) {
    op::dot d;
    auto f = [&](dims a, dims b, dtype tb = dtype::f32) {
        return d.compute_shape({shape{dtype::f32, a}, shape{tb, b}});
    };
    EXPECT_THROW(f({2, 3}, {4, 2}), user_error);             // inner dims
    EXPECT_THROW(f({3}, {3, 2}), user_error);                // rank 1
    EXPECT_THROW(f({2, 2, 3}, {3, 3, 2}), user_error);       // batch 2 vs 3
    EXPECT_THROW(f({2, 3}, {3, 2}, dtype::f16), user_error); // dtype
    try {
        f({2, 3}, {4, 2});
        FAIL() << "expected user_error";
    } catch (const user_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("dot", 0), 0u) << e.what();
    }
}

} // namespace dot_test
