#include "conflux/ops/normalization.hpp"

#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace normalization_test {

using namespace conflux;
using test::product;
using test::random_values;

namespace {

template <class Op> argument run(const Op& op, const std::vector<argument>& in) {
    std::vector<shape> shapes;
    for (const auto& a : in)
        shapes.push_back(a.get_shape());
    return op.eval(op.compute_shape(shapes), in);
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

// Layer norm from the definition, rows of `inner` elements, scale/bias already expanded.
std::vector<double> naive_layer_norm(const std::vector<double>& x, std::size_t inner,
                                     const std::vector<double>& scale,
                                     const std::vector<double>& bias, double eps) {
    std::vector<double> y(x.size());
    for (std::size_t r = 0; r < x.size() / inner; ++r) {
        double mean = 0, var = 0;
        for (std::size_t i = 0; i < inner; ++i)
            mean += x[r * inner + i];
        mean /= double(inner);
        for (std::size_t i = 0; i < inner; ++i)
            var += (x[r * inner + i] - mean) * (x[r * inner + i] - mean);
        var /= double(inner);
        for (std::size_t i = 0; i < inner; ++i)
            y[r * inner + i] = (x[r * inner + i] - mean) / std::sqrt(var + eps) * scale[i] +
                               (bias.empty() ? 0 : bias[i]);
    }
    return y;
}

} // namespace

TEST(normalization, batch_norm_hand_computed) {
    // Channel 0: (x - 1) / sqrt(4) * 2 + 1; channel 1: (x - 0) / sqrt(1) * 1 - 1 (eps = 0).
    auto x = from_vector(dtype::f32, {1, 2, 1, 2}, std::vector<float>{3, 5, 2, -2});
    auto s = from_vector(dtype::f32, {2}, std::vector<float>{2, 1});
    auto b = from_vector(dtype::f32, {2}, std::vector<float>{1, -1});
    auto m = from_vector(dtype::f32, {2}, std::vector<float>{1, 0});
    auto v = from_vector(dtype::f32, {2}, std::vector<float>{4, 1});
    op::batch_norm bn{0.0f};
    auto y = run(bn, {x, s, b, m, v});
    EXPECT_EQ(y.get_shape(), (shape{dtype::f32, {1, 2, 1, 2}}));
    EXPECT_EQ(to_vector<float>(y), (std::vector<float>{3, 5, 1, -3}));
}

TEST(normalization, batch_norm_matches_naive_with_strided_input) {
    std::mt19937 rng(12);
    const std::size_t n = 2, c = 3, h = 4, w = 5;
    auto stored = from_vector(dtype::f32, {n, h, w, c}, random_values(n * h * w * c, rng));
    auto x = stored.view(shape{dtype::f32, {n, c, h, w}, {h * w * c, 1, w * c, c}});
    auto sv = random_values(c, rng), bv = random_values(c, rng), mv = random_values(c, rng);
    auto vv = random_values(c, rng, 0.1f, 2.0f);
    op::batch_norm bn{1e-3f};
    auto y = run(bn, {x, from_vector(dtype::f32, {c}, sv), from_vector(dtype::f32, {c}, bv),
                      from_vector(dtype::f32, {c}, mv), from_vector(dtype::f32, {c}, vv)});
    auto naive = [&](const std::vector<double>& xs) {
        std::vector<double> want(xs.size());
        for (std::size_t i = 0; i < xs.size(); ++i) {
            std::size_t ch = (i / (h * w)) % c;
            want[i] =
                (xs[i] - mv[ch]) / std::sqrt(double(vv[ch]) + double(1e-3f)) * sv[ch] + bv[ch];
        }
        return want;
    };
    expect_close(to_vector<double>(y), naive(to_vector<double>(x)), 1e-5);

    // f16 input with f32 parameters, as ONNX allows.
    auto xh = from_vector(dtype::f16, {n, c, h, w}, to_vector<float>(x));
    auto yh = run(bn, {xh, from_vector(dtype::f32, {c}, sv), from_vector(dtype::f32, {c}, bv),
                       from_vector(dtype::f32, {c}, mv), from_vector(dtype::f32, {c}, vv)});
    EXPECT_EQ(yh.get_shape().type(), dtype::f16);
    expect_close(to_vector<double>(yh), naive(to_vector<double>(xh)), 1e-3);
}

TEST(normalization, batch_norm_rejects_bad_shapes) {
    op::batch_norm bn;
    shape p{dtype::f32, {3}};
    shape x{dtype::f32, {2, 3, 4}};
    EXPECT_NO_THROW(bn.compute_shape({x, p, p, p, p}));
    EXPECT_THROW(bn.compute_shape({x, p, p, p}), user_error);
    EXPECT_THROW(bn.compute_shape({x, p, shape{dtype::f32, {4}}, p, p}), user_error);
    EXPECT_THROW(bn.compute_shape({shape{dtype::f32, {3}}, p, p, p, p}), user_error);
    EXPECT_THROW(bn.compute_shape({shape{dtype::i32, {2, 3}}, p, p, p, p}), user_error);
    EXPECT_THROW(bn.compute_shape({x, p, shape{dtype::f16, {3}}, p, p}), user_error);
    try {
        bn.compute_shape({x, p, p, p, shape{dtype::f32, {2}}});
        FAIL() << "expected user_error";
    } catch (const user_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("batch_normalization", 0), 0u) << e.what();
    }
}

TEST(normalization, layer_norm_matches_naive) {
    std::mt19937 rng(13);
    const dims lens{2, 3, 8};
    auto xv = random_values(48, rng, -3, 3);
    auto x = from_vector(dtype::f32, lens, xv);
    std::vector<double> xd(xv.begin(), xv.end());

    // Last axis, with bias; negative axis as ONNX writes it.
    auto s8 = random_values(8, rng), b8 = random_values(8, rng);
    op::layer_norm last{-1, 1e-5f};
    auto y = run(last, {x, from_vector(dtype::f32, {8}, s8), from_vector(dtype::f32, {8}, b8)});
    EXPECT_EQ(y.get_shape(), x.get_shape());
    expect_close(to_vector<double>(y),
                 naive_layer_norm(xd, 8, {s8.begin(), s8.end()}, {b8.begin(), b8.end()}, 1e-5),
                 1e-5);

    // Axis 1 without bias: statistics over 24 elements per row.
    auto s24 = random_values(24, rng);
    op::layer_norm mid{1, 1e-5f};
    auto y2 = run(mid, {x, from_vector(dtype::f32, {3, 8}, s24)});
    expect_close(to_vector<double>(y2),
                 naive_layer_norm(xd, 24, {s24.begin(), s24.end()}, {}, 1e-5), 1e-5);

    // A scale of lens [8] broadcasts over the [3, 8] normalised block.
    auto y3 = run(mid, {x, from_vector(dtype::f32, {8}, s8)});
    std::vector<double> s8x3;
    for (int r = 0; r < 3; ++r)
        s8x3.insert(s8x3.end(), s8.begin(), s8.end());
    expect_close(to_vector<double>(y3), naive_layer_norm(xd, 24, s8x3, {}, 1e-5), 1e-5);
}

TEST(normalization, rms_norm_is_layer_norm_without_the_mean) {
    // y = x / sqrt(mean(x^2) + eps) * scale, computed here independently in double.
    std::mt19937 rng(17);
    const dims lens{3, 2, 10};
    auto xv = random_values(60, rng, -3, 3);
    auto sv = random_values(10, rng);
    const double eps = 1e-6;
    std::vector<double> want(xv.size());
    for (std::size_t r = 0; r < 6; ++r) {
        double squares = 0;
        for (std::size_t i = 0; i < 10; ++i)
            squares += double(xv[r * 10 + i]) * double(xv[r * 10 + i]);
        const double inv = 1 / std::sqrt(squares / 10 + eps);
        for (std::size_t i = 0; i < 10; ++i)
            want[r * 10 + i] = double(xv[r * 10 + i]) * inv * double(sv[i]);
    }
    op::layer_norm rms{-1, float(eps), false};
    auto y = run(rms, {from_vector(dtype::f32, lens, xv), from_vector(dtype::f32, {10}, sv)});
    expect_close(to_vector<double>(y), want, 1e-5);
    EXPECT_EQ(rms.attributes().dump(),
              "{\"axis\":-1,\"centered\":false,\"epsilon\":9.999999974752427e-07}");
}

TEST(normalization, layer_norm_strided_input_and_f16) {
    std::mt19937 rng(14);
    // x [4, 6] stored transposed.
    auto stored = from_vector(dtype::f32, {6, 4}, random_values(24, rng));
    auto x = stored.view(shape{dtype::f32, {4, 6}, {1, 4}});
    auto scale = from_vector(dtype::f32, {6}, random_values(6, rng));
    op::layer_norm ln{1, 1e-5f};
    EXPECT_TRUE(run(ln, {x, scale}).same_values(run(ln, {x.contiguous(), scale})));

    auto xh = from_vector(dtype::f16, {4, 6}, to_vector<float>(x));
    auto sh = from_vector(dtype::f16, {6}, to_vector<float>(scale));
    auto yh = run(ln, {xh, sh});
    EXPECT_EQ(yh.get_shape().type(), dtype::f16);
    auto sd = to_vector<double>(sh);
    expect_close(to_vector<double>(yh), naive_layer_norm(to_vector<double>(xh), 6, sd, {}, 1e-5),
                 2e-3);
}

TEST(normalization, layer_norm_rejects_bad_shapes) {
    shape x{dtype::f32, {2, 3, 4}};
    op::layer_norm ln{2, 1e-5f};
    EXPECT_NO_THROW(ln.compute_shape({x, shape{dtype::f32, {4}}}));
    EXPECT_THROW(ln.compute_shape({x, shape{dtype::f32, {3}}}), user_error);
    EXPECT_THROW(ln.compute_shape({x, shape{dtype::f32, {3, 4}}}), user_error);
    EXPECT_THROW(ln.compute_shape({x, shape{dtype::f16, {4}}}), user_error);
    EXPECT_THROW(ln.compute_shape({x}), user_error);
    EXPECT_THROW(ln.compute_shape({shape{dtype::i64, {2, 3, 4}}, shape{dtype::i64, {4}}}),
                 user_error);
    op::layer_norm bad_axis{3, 1e-5f};
    EXPECT_THROW(bad_axis.compute_shape({x, shape{dtype::f32, {4}}}), user_error);
    try {
        ln.compute_shape({x, shape{dtype::f32, {4}}, shape{dtype::f32, {5}}});
        FAIL() << "expected user_error";
    } catch (const user_error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("layer_normalization", 0), 0u) << e.what();
    }
}

} // namespace normalization_test
