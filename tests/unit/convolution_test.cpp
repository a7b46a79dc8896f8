#include "conflux/ops/convolution.hpp"

#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace convolution_test {

using namespace conflux;
using test::product;
using test::random_values;

namespace {

struct config {
    dims x, w;
    dims padding, stride, dilation;
    std::size_t group = 1;
};

op::convolution make_op(const config& c) {
    return {c.padding, c.stride, c.dilation, c.group};
}

argument run(const op::convolution& conv, const argument& x, const argument& w) {
    auto s = conv.compute_shape({x.get_shape(), w.get_shape()});
    return conv.eval(s, {x, w});
}

// Straight from the definition: every output element sums every (channel, kernel tap) pair whose
// input coordinate lands inside the unpadded input.
std::vector<double> naive_conv(const config& c, const std::vector<double>& x,
                               const std::vector<double>& w, const dims& out) {
    const std::size_t nd = c.x.size() - 2;
    dims pb(nd, 0), st(nd, 1), dl(nd, 1);
    for (std::size_t i = 0; i < nd; ++i) {
        if (!c.padding.empty()) pb[i] = c.padding[i];
        if (!c.stride.empty()) st[i] = c.stride[i];
        if (!c.dilation.empty()) dl[i] = c.dilation[i];
    }
    const shape xs{dtype::f64, c.x}, ws{dtype::f64, c.w}, ys{dtype::f64, out};
    const dims kernel(c.w.begin() + 2, c.w.end());
    const std::size_t cg = c.w[1], kg = c.w[0] / c.group;
    std::vector<double> y(product(out), 0.0);
    for (std::size_t e = 0; e < y.size(); ++e) {
        dims oi = ys.multi_index(e);
        const std::size_t n = oi[0], k = oi[1], g = k / kg;
        double acc = 0;
        for (std::size_t ci = 0; ci < cg; ++ci) {
            for (std::size_t t = 0; t < product(kernel); ++t) {
                dims ki = shape{dtype::f64, kernel}.multi_index(t);
                dims xi{n, g * cg + ci};
                bool inside = true;
                for (std::size_t d = 0; d < nd; ++d) {
                    auto pos = std::int64_t(oi[d + 2] * st[d]) - std::int64_t(pb[d]) +
                               std::int64_t(ki[d] * dl[d]);
                    if (pos < 0 || pos >= std::int64_t(c.x[d + 2])) inside = false;
                    xi.push_back(std::size_t(pos));
                }
                if (!inside) continue;
                dims wi{k, ci};
                wi.insert(wi.end(), ki.begin(), ki.end());
                acc += x[xs.index(xi)] * w[ws.index(wi)];
            }
        }
        y[e] = acc;
    }
    return y;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

std::vector<double> widen(const std::vector<float>& v) {
    return {v.begin(), v.end()};
}

} // namespace

TEST(convolution, hand_computed_2d) {
    // 3x3 input 0..8 with a 2x2 kernel of ones: each output is the sum of a 2x2 block.
    std::vector<float> xv{0, 1, 2, 3, 4, 5, 6, 7, 8};
    auto x = from_vector(dtype::f32, {1, 1, 3, 3}, xv);
    auto w = from_vector(dtype::f32, {1, 1, 2, 2}, std::vector<float>(4, 1.0f));
    auto y = run(op::convolution{}, x, w);
    EXPECT_EQ(y.get_shape(), (shape{dtype::f32, {1, 1, 2, 2}}));
    EXPECT_EQ(to_vector<float>(y), (std::vector<float>{8, 12, 20, 24}));

    // Padding 1 on every side, stride 2: corners see one 2x2 quadrant each.
    op::convolution padded{{1, 1, 1, 1}, {2, 2}, {1, 1}, 1};
    auto yp = run(padded, x, w);
    EXPECT_EQ(yp.get_shape().lens(), (dims{1, 1, 2, 2}));
    EXPECT_EQ(to_vector<float>(yp), (std::vector<float>{0, 1 + 2, 3 + 6, 4 + 5 + 7 + 8}));
}

TEST(convolution, matches_naive_on_many_configs) {
    const std::vector<config> configs = {
        {{2, 3, 9}, {4, 3, 3}, {}, {}, {}, 1},                         // 1-D
        {{1, 2, 10}, {3, 2, 4}, {2, 1}, {3}, {2}, 1},                  // 1-D all attributes
        {{2, 3, 7, 6}, {5, 3, 3, 3}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 1}, // 2-D same padding
        {{1, 4, 8, 9}, {6, 2, 3, 2}, {0, 2, 1, 0}, {2, 3}, {1, 2}, 2}, // asymmetric, groups
        {{1, 4, 9, 9}, {4, 1, 3, 3}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 4}, // depthwise
        {{2, 3, 6, 5}, {6, 1, 2, 3}, {1, 0, 0, 2}, {1, 2}, {2, 1}, 3}, // depthwise x2
        {{1, 2, 5, 5}, {3, 2, 5, 5}, {}, {}, {}, 1},                   // kernel = input
        {{1, 1, 4, 4}, {2, 1, 1, 1}, {3, 0, 0, 3}, {2, 1}, {}, 1},     // pad > kernel
        {{1, 2, 4, 5, 6}, {3, 2, 2, 3, 2}, {1, 0, 1, 0, 1, 1}, {1, 2, 2}, {2, 1, 1}, 1}, // 3-D
        {{2, 4, 3, 4, 3}, {4, 2, 1, 2, 2}, {}, {1, 1, 2}, {}, 2}, // 3-D groups
    };
    std::mt19937 rng(7);
    for (const auto& c : configs) {
        SCOPED_TRACE(testing::Message()
                     << "x " << to_string(c.x) << " w " << to_string(c.w) << " group " << c.group);
        auto xv = random_values(product(c.x), rng);
        auto wv = random_values(product(c.w), rng);
        auto conv = make_op(c);
        auto y = run(conv, from_vector(dtype::f32, c.x, xv), from_vector(dtype::f32, c.w, wv));
        EXPECT_TRUE(y.get_shape().standard());
        auto want = naive_conv(c, widen(xv), widen(wv), y.get_shape().lens());
        expect_near_all(widen(to_vector<float>(y)), want, 1e-5);
    }
}

TEST(convolution, output_lens_follow_onnx_formula) {
    op::convolution conv{{1, 0, 2, 1}, {2, 3}, {2, 1}, 1};
    auto s =
        conv.compute_shape({shape{dtype::f32, {3, 2, 11, 8}}, shape{dtype::f32, {5, 2, 3, 2}}});
    // H: (11 + 1 + 2 - (2*2 + 1)) / 2 + 1 = 5; W: (8 + 0 + 1 - 2) / 3 + 1 = 3.
    EXPECT_EQ(s, (shape{dtype::f32, {3, 5, 5, 3}}));
}

TEST(convolution, f16_accumulates_in_f32_and_rounds_once) {
    config c{{1, 8, 6, 6}, {4, 8, 3, 3}, {1, 1, 1, 1}, {}, {}, 1};
    std::mt19937 rng(11);
    auto xv = random_values(product(c.x), rng);
    auto wv = random_values(product(c.w), rng);
    auto x = from_vector(dtype::f16, c.x, xv);
    auto w = from_vector(dtype::f16, c.w, wv);
    auto y = run(make_op(c), x, w);
    EXPECT_EQ(y.get_shape().type(), dtype::f16);
    // The reference sees the f16-rounded inputs; only the final rounding to f16 may differ.
    auto want = naive_conv(c, to_vector<double>(x), to_vector<double>(w), y.get_shape().lens());
    auto got = to_vector<double>(y);
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-3 * (1 + std::abs(want[i]))) << "element " << i;
}

TEST(convolution, nhwc_strided_input_equals_packed_input) {
    const std::size_t n = 2, c = 6, h = 5, w = 7;
    std::mt19937 rng(3);
    auto nhwc = random_values(n * h * w * c, rng);
    auto wv = random_values(4 * 3 * 3 * 3, rng);
    // The same tensor in NCHW order, gathered by hand.
    std::vector<float> nchw(nhwc.size());
    for (std::size_t b = 0; b < n; ++b)
        for (std::size_t ch = 0; ch < c; ++ch)
            for (std::size_t y = 0; y < h; ++y)
                for (std::size_t x = 0; x < w; ++x)
                    nchw[((b * c + ch) * h + y) * w + x] = nhwc[((b * h + y) * w + x) * c + ch];
    auto stored = from_vector(dtype::f32, {n, h, w, c}, nhwc);
    auto strided = stored.view(shape{dtype::f32, {n, c, h, w}, {h * w * c, 1, w * c, c}});
    ASSERT_TRUE(strided.get_shape().transposed());
    auto weights = from_vector(dtype::f32, {4, 3, 3, 3}, wv);
    op::convolution conv{{1, 0, 0, 1}, {1, 2}, {}, 2};
    auto a = run(conv, strided, weights);
    auto b = run(conv, from_vector(dtype::f32, {n, c, h, w}, nchw), weights);
    EXPECT_TRUE(a.same_values(b));
}

TEST(convolution, broadcast_and_offset_views) {
    std::mt19937 rng(5);
    // Input: the second half of a larger buffer. Weights: one filter broadcast to 3 filters.
    auto big = from_vector(dtype::f32, {2, 1, 2, 4, 4}, random_values(2 * 2 * 16, rng));
    auto x = big.view(shape{dtype::f32, {1, 2, 4, 4}}, 32);
    auto one = from_vector(dtype::f32, {1, 2, 3, 3}, random_values(18, rng));
    auto w = one.view(shape{dtype::f32, {3, 2, 3, 3}, {0, 9, 3, 1}});
    auto y = run(op::convolution{}, x, w);
    auto xv = to_vector<double>(x);
    auto wv = to_vector<double>(w);
    config c{{1, 2, 4, 4}, {3, 2, 3, 3}, {}, {}, {}, 1};
    auto want = naive_conv(c, xv, wv, y.get_shape().lens());
    expect_near_all(to_vector<double>(y), want, 1e-5);
    auto got = to_vector<float>(y);
    EXPECT_EQ(got[0], got[4]); // identical filters give identical channels
}

TEST(convolution, integer_and_f64) {
    auto x = from_vector(dtype::i32, {1, 1, 4}, std::vector<int>{1, -2, 3, 4});
    auto w = from_vector(dtype::i32, {2, 1, 2}, std::vector<int>{1, 10, -1, 2});
    auto y = run(op::convolution{{1, 0}, {}, {}, 1}, x, w);
    EXPECT_EQ(y.get_shape().type(), dtype::i32);
    // Padded input is 0, 1, -2, 3, 4.
    EXPECT_EQ(to_vector<int>(y), (std::vector<int>{10, -19, 28, 43, 2, -5, 8, 5}));

    config c{{1, 3, 5, 4}, {2, 3, 2, 2}, {0, 1, 1, 0}, {2, 1}, {}, 1};
    std::mt19937 rng(9);
    auto xv = widen(random_values(product(c.x), rng));
    auto wv = widen(random_values(product(c.w), rng));
    auto yd = run(make_op(c), from_vector(dtype::f64, c.x, xv), from_vector(dtype::f64, c.w, wv));
    EXPECT_EQ(yd.get_shape().type(), dtype::f64);
    expect_near_all(to_vector<double>(yd), naive_conv(c, xv, wv, yd.get_shape().lens()), 1e-12);
}

TEST(convolution, rejects_bad_shapes) {
    auto f = [](dims x, dims w, op::convolution c = {}, dtype wt = dtype::f32) {
        return c.compute_shape({shape{dtype::f32, x}, shape{wt, w}});
    };
    EXPECT_THROW(f({1, 4, 5, 5}, {2, 3, 3, 3}), user_error);                  // channel mismatch
    EXPECT_THROW(f({1, 4, 5, 5}, {3, 2, 3, 3}, {{}, {}, {}, 2}), user_error); // K % group
    EXPECT_THROW(f({1, 4, 5, 5}, {2, 4, 6, 3}), user_error);                  // kernel too big
    EXPECT_THROW(f({1, 4, 5, 5}, {2, 4, 3, 3}, {{}, {}, {3, 3}, 1}), user_error); // dilated
    EXPECT_THROW(f({1, 4, 5, 5}, {2, 4, 3, 3}, {}, dtype::f16), user_error);      // dtype
    EXPECT_THROW(f({4, 5}, {2, 4}), user_error);                                  // rank
    EXPECT_THROW(f({1, 4, 5, 5}, {2, 4, 3}), user_error);                         // rank mismatch
    EXPECT_THROW(f({1, 4, 5, 5}, {2, 4, 3, 3}, {{1, 1}, {}, {}, 1}), user_error); // pad count
    EXPECT_THROW(f({1, 4, 5, 5}, {2, 4, 3, 3}, {{}, {0, 1}, {}, 1}), user_error); // stride 0
    try {
        f({1, 4, 5, 5}, {2, 3, 3, 3});
        FAIL() << "expected user_error";
    } catch (const user_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("convolution", 0), 0u) << e.what();
    }
    // Padding that makes room for the kernel is fine.
    EXPECT_EQ(f({1, 4, 5, 5}, {2, 4, 6, 3}, {{1, 0, 0, 0}, {}, {}, 1}).lens(), (dims{1, 2, 1, 3}));
}

} // namespace convolution_test
