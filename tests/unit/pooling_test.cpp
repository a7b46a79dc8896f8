#include "conflux/ops/pooling.hpp"

#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace pooling_test {

using namespace conflux;
using test::product;
using test::random_values;

namespace {

using op::pooling;
using op::pooling_mode;

std::vector<float> iota(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = float(i + 1);
    return v;
}

// A standard [N, C, spatial...] tensor's memory seen as [N, spatial..., C], and back.
shape channels_last_view(const dims& nchw) {
    const shape s{dtype::f32, nchw};
    dims lens{nchw[0]}, strides{s.strides()[0]};
    for (std::size_t i = 2; i < nchw.size(); ++i) {
        lens.push_back(nchw[i]);
        strides.push_back(s.strides()[i]);
    }
    lens.push_back(nchw[1]);
    strides.push_back(s.strides()[1]);
    return {dtype::f32, lens, strides};
}

shape channels_first_view(const shape& nhwc) {
    const std::size_t r = nhwc.rank();
    dims lens{nhwc.lens()[0], nhwc.lens()[r - 1]},
        strides{nhwc.strides()[0], nhwc.strides()[r - 1]};
    for (std::size_t i = 1; i + 1 < r; ++i) {
        lens.push_back(nhwc.lens()[i]);
        strides.push_back(nhwc.strides()[i]);
    }
    return {nhwc.type(), lens, strides};
}

argument run(const pooling& p, const argument& x) {
    return p.eval(p.compute_shape({x.get_shape()}), {x});
}

// Every tap of every window, checked one by one against the unpadded input and the padded
// extent.
std::vector<double> naive_pool(const pooling& p, const dims& xl, const std::vector<double>& x,
                               const dims& out) {
    const std::size_t nd = xl.size() - 2;
    dims pb(nd, 0), pe(nd, 0), st(nd, 1), dl(nd, 1);
    for (std::size_t i = 0; i < nd; ++i) {
        if (!p.padding.empty()) {
            pb[i] = p.padding[i];
            pe[i] = p.padding[nd + i];
        }
        if (!p.stride.empty()) st[i] = p.stride[i];
        if (!p.dilation.empty()) dl[i] = p.dilation[i];
    }
    shape xs{dtype::f64, xl}, ys{dtype::f64, out}, ws{dtype::f64, p.lengths};
    std::vector<double> y(ys.elements());
    for (std::size_t e = 0; e < y.size(); ++e) {
        dims oi = ys.multi_index(e);
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        std::size_t valid = 0, in_padded = 0;
        for (std::size_t t = 0; t < ws.elements(); ++t) {
            dims ti = ws.multi_index(t);
            dims xi{oi[0], oi[1]};
            bool inside = true, inside_padded = true;
            for (std::size_t d = 0; d < nd; ++d) {
                auto pos = std::int64_t(oi[d + 2] * st[d] + ti[d] * dl[d]) - std::int64_t(pb[d]);
                inside = inside && pos >= 0 && pos < std::int64_t(xl[d + 2]);
                inside_padded = inside_padded && pos < std::int64_t(xl[d + 2] + pe[d]);
                xi.push_back(std::size_t(std::max<std::int64_t>(pos, 0)));
            }
            if (inside_padded) ++in_padded;
            if (!inside) continue;
            ++valid;
            double v = x[xs.index(xi)];
            mx = std::max(mx, v);
            sum += v;
        }
        if (p.mode == pooling_mode::max)
            y[e] = mx;
        else
            y[e] = sum / double(p.count_include_pad ? in_padded : valid);
    }
    return y;
}

} // namespace

TEST(pooling, hand_computed_max_and_average) {
    auto x = from_vector(dtype::f32, {1, 1, 4, 4}, iota(16));
    pooling mp{pooling_mode::max, {2, 2}, {2, 2}, {}, {}, false, false};
    EXPECT_EQ(mp.name(), "max_pool");
    auto y = run(mp, x);
    EXPECT_EQ(y.get_shape(), (shape{dtype::f32, {1, 1, 2, 2}}));
    EXPECT_EQ(to_vector<float>(y), (std::vector<float>{6, 8, 14, 16}));

    // ONNX's averagepool_2d_ceil: the last windows hang off the input and average what they see.
    pooling ap{pooling_mode::average, {3, 3}, {2, 2}, {}, {}, true, false};
    auto ya = run(ap, x);
    EXPECT_EQ(ya.get_shape().lens(), (dims{1, 1, 2, 2}));
    EXPECT_EQ(to_vector<float>(ya), (std::vector<float>{6, 7.5, 12, 13.5}));
}

TEST(pooling, count_include_pad) {
    auto ones = from_vector(dtype::f32, {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
    pooling p{pooling_mode::average, {3, 3}, {1, 1}, {1, 1, 1, 1}, {}, false, true};
    EXPECT_EQ(to_vector<float>(run(p, ones)),
              (std::vector<float>{4.f / 9, 6.f / 9, 4.f / 9, 6.f / 9, 1, 6.f / 9, 4.f / 9, 6.f / 9,
                                  4.f / 9}));
    p.count_include_pad = false;
    EXPECT_EQ(to_vector<float>(run(p, ones)), std::vector<float>(9, 1.0f));

    // Ceil mode: taps beyond the explicit padding never count, even with count_include_pad.
    auto x = from_vector(dtype::f32, {1, 1, 5}, iota(5));
    pooling c{pooling_mode::average, {2}, {2}, {}, {}, true, true};
    EXPECT_EQ(to_vector<float>(run(c, x)), (std::vector<float>{1.5, 3.5, 5}));
}

TEST(pooling, ceil_mode_drops_window_starting_in_end_padding) {
    pooling p{pooling_mode::max, {2}, {2}, {0, 1}, {}, true, false};
    // Padded length 5: ceil((5 - 2) / 2) + 1 = 3, but window 3 would start at 4 = in + pad_begin.
    EXPECT_EQ(p.compute_shape({shape{dtype::f32, {1, 1, 4}}}).lens(), (dims{1, 1, 2}));
    p.ceil_mode = false;
    EXPECT_EQ(p.compute_shape({shape{dtype::f32, {1, 1, 4}}}).lens(), (dims{1, 1, 2}));
    // Here the extra ceil window starts inside the input and is kept.
    p = {pooling_mode::max, {3}, {2}, {}, {}, true, false};
    EXPECT_EQ(p.compute_shape({shape{dtype::f32, {1, 1, 6}}}).lens(), (dims{1, 1, 3}));
    p.ceil_mode = false;
    EXPECT_EQ(p.compute_shape({shape{dtype::f32, {1, 1, 6}}}).lens(), (dims{1, 1, 2}));
}

TEST(pooling, matches_naive_on_many_configs) {
    struct config {
        dims x;
        pooling p;
    };
    const auto avg = pooling_mode::average;
    const auto max = pooling_mode::max;
    const std::vector<config> configs = {
        {{2, 3, 9}, {max, {3}, {2}, {1, 0}, {}, false, false}},
        {{2, 3, 9}, {avg, {3}, {2}, {1, 2}, {}, true, true}},
        {{1, 2, 7, 8}, {max, {3, 2}, {2, 3}, {1, 0, 2, 1}, {1, 2}, true, false}},
        {{1, 2, 7, 8}, {avg, {3, 2}, {2, 3}, {1, 0, 2, 1}, {2, 1}, true, false}},
        {{1, 2, 7, 8}, {avg, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, true, true}},
        {{2, 2, 6, 6}, {max, {2, 2}, {1, 1}, {}, {2, 2}, false, false}},
        {{1, 2, 5, 4, 6}, {avg, {2, 3, 2}, {2, 1, 2}, {0, 1, 1, 1, 0, 1}, {}, false, true}},
        {{1, 2, 5, 4, 6}, {max, {2, 2, 3}, {1, 2, 2}, {1, 0, 0, 0, 1, 1}, {2, 1, 1}, true, false}},
    };
    std::mt19937 rng(8);
    for (const auto& c : configs) {
        SCOPED_TRACE(testing::Message() << c.p.name() << " " << to_string(c.x) << " "
                                        << nlohmann::json(c.p.attributes()).dump());
        auto xv = random_values(product(c.x), rng);
        auto y = run(c.p, from_vector(dtype::f32, c.x, xv));
        auto want = naive_pool(c.p, c.x, {xv.begin(), xv.end()}, y.get_shape().lens());
        auto got = to_vector<double>(y);
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_NEAR(got[i], want[i], 1e-6) << "element " << i;

        // The channels-last op on the same data stored NHWC gives the same values, NHWC.
        auto cl = c.p;
        cl.channels_last = true;
        auto nhwc = from_vector(dtype::f32, c.x, xv).view(channels_last_view(c.x)).contiguous();
        auto yc = run(cl, nhwc);
        const dims yl = y.get_shape().lens();
        ASSERT_EQ(yc.get_shape(), (shape{dtype::f32, channels_last_view(yl).lens()}));
        // Seen back through NCHW lens, element i is the naive result's element i.
        const shape back = channels_first_view(yc.get_shape());
        auto got_cl = to_vector<double>(yc.view(back));
        for (std::size_t i = 0; i < got_cl.size(); ++i)
            ASSERT_NEAR(got_cl[i], want[i], 1e-6) << "channels-last element " << i;
    }
}

TEST(pooling, strided_input_integer_and_f16) {
    std::mt19937 rng(6);
    // NHWC memory seen as NCHW.
    auto stored = from_vector(dtype::f32, {2, 5, 6, 3}, random_values(180, rng));
    auto x = stored.view(shape{dtype::f32, {2, 3, 5, 6}, {90, 1, 18, 3}});
    pooling p{pooling_mode::average, {2, 3}, {2, 1}, {1, 1, 0, 1}, {}, true, false};
    EXPECT_TRUE(run(p, x).same_values(run(p, x.contiguous())));

    auto xi = from_vector(dtype::i8, {1, 1, 2, 3}, std::vector<int>{-5, 7, -128, 3, 127, 0});
    pooling mp{pooling_mode::max, {2, 2}, {1, 1}, {}, {}, false, false};
    auto yi = run(mp, xi);
    EXPECT_EQ(yi.get_shape().type(), dtype::i8);
    EXPECT_EQ(to_vector<int>(yi), (std::vector<int>{127, 127}));

    auto xh = from_vector(dtype::f16, {1, 1, 4}, std::vector<float>{1, 2, 4, 8});
    pooling ah{pooling_mode::average, {3}, {1}, {}, {}, false, false};
    auto yh = run(ah, xh);
    EXPECT_EQ(yh.get_shape().type(), dtype::f16);
    // 7/3 and 14/3 rounded to f16.
    EXPECT_EQ(to_vector<float>(yh),
              (std::vector<float>{float(float16(7.f / 3)), float(float16(14.f / 3))}));
}

TEST(pooling, max_propagates_nan) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    auto x = from_vector(dtype::f32, {1, 1, 4}, std::vector<float>{nan, 1, 2, 3});
    pooling p{pooling_mode::max, {2}, {2}, {}, {}, false, false};
    auto y = to_vector<float>(run(p, x));
    EXPECT_TRUE(std::isnan(y[0]));
    EXPECT_EQ(y[1], 3.0f);
}

TEST(pooling, rejects_bad_shapes) {
    auto f = [](dims x, pooling p) { return p.compute_shape({shape{dtype::f32, x}}); };
    const auto max = pooling_mode::max;
    EXPECT_THROW(f({1, 1, 3, 3}, {max, {4, 4}, {}, {}, {}, false, false}), user_error);
    EXPECT_THROW(f({1, 1, 3, 3}, {max, {2, 2}, {}, {}, {3, 3}, false, false}), user_error);
    EXPECT_THROW(f({1, 1, 3, 3}, {max, {2}, {}, {}, {}, false, false}), user_error);
    EXPECT_THROW(f({1, 3}, {max, {}, {}, {}, {}, false, false}), user_error);
    EXPECT_THROW(f({1, 1, 3, 3}, {max, {2, 2}, {0, 1}, {}, {}, false, false}), user_error);
    EXPECT_THROW(f({1, 1, 3, 3}, {max, {2, 2}, {}, {1, 1}, {}, false, false}), user_error);
    try {
        f({1, 1, 3, 3}, {pooling_mode::average, {4, 4}, {}, {}, {}, false, false});
        FAIL() << "expected user_error";
    } catch (const user_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("average_pool", 0), 0u) << e.what();
    }
    // Padding can make room for the window.
    EXPECT_EQ(f({1, 1, 3, 3}, {max, {4, 4}, {}, {1, 1, 0, 0}, {}, false, false}).lens(),
              (dims{1, 1, 1, 1}));
}

} // namespace pooling_test
