// ONNX ConvTranspose against the scatter that defines it (each input element adds its weighted
// kernel into the output), as imported and after the target-independent passes; and the user
// errors for attributes and shapes that do not fit.
#include "conflux/onnx/import.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/ref/evaluate.hpp"

#include "onnx_model_builder.hpp"
#include "test_helpers.hpp"

#include "onnx/onnx.pb.h"

#include <gtest/gtest.h>

#include <functional>

namespace conv_transpose_test {

using namespace conflux;
using namespace conflux::test;

namespace {

using ::onnx::TensorProto;

std::vector<std::int64_t> i64(const dims& d) {
    return {d.begin(), d.end()};
}

// A 2-D ConvTranspose of X [N, C, H, W] with W [C, M/group, KH, KW] and a bias.
struct transposed_2d {
    std::size_t n = 1, c = 4, h = 3, w = 4;
    std::size_t m_per_group = 3, kh = 3, kw = 2, group = 2;
    std::vector<std::int64_t> strides{2, 3};
    std::vector<std::int64_t> dilations{2, 1};
    std::vector<std::int64_t> pads{1, 0, 2, 1}; // begins (h, w), then ends
    std::vector<std::int64_t> output_padding{1, 2};

    dims x_lens() const { return {n, c, h, w}; }
    dims w_lens() const { return {c, m_per_group, kh, kw}; }
    std::size_t m() const { return m_per_group * group; }

    // Output lens and values by the definition: input (ih, iw) reaches output
    // (ih * s + kh * d - pad_begin, ...) with weight (kh, kw).
    std::pair<dims, std::vector<float>> expected(const std::vector<float>& x,
                                                 const std::vector<float>& wt,
                                                 const std::vector<float>& bias) const {
        auto out_len = [&](std::size_t in, std::size_t k, std::size_t axis) {
            return std::size_t(std::int64_t(in - 1) * strides[axis] + output_padding[axis] +
                               std::int64_t(k - 1) * dilations[axis] + 1 - pads[axis] -
                               pads[2 + axis]);
        };
        const std::size_t oh = out_len(h, kh, 0), ow = out_len(w, kw, 1);
        std::vector<float> y(n * m() * oh * ow, 0.0f);
        const std::size_t c_per_group = c / group;
        for (std::size_t b = 0; b < n; ++b)
            for (std::size_t ci = 0; ci < c; ++ci)
                for (std::size_t ih = 0; ih < h; ++ih)
                    for (std::size_t iw = 0; iw < w; ++iw)
                        for (std::size_t mm = 0; mm < m_per_group; ++mm)
                            for (std::size_t a = 0; a < kh; ++a)
                                for (std::size_t e = 0; e < kw; ++e) {
                                    const auto yh = std::int64_t(ih) * strides[0] +
                                                    std::int64_t(a) * dilations[0] - pads[0];
                                    const auto yw = std::int64_t(iw) * strides[1] +
                                                    std::int64_t(e) * dilations[1] - pads[1];
                                    if (yh < 0 || yh >= std::int64_t(oh) || yw < 0 ||
                                        yw >= std::int64_t(ow))
                                        continue;
                                    const std::size_t mo = ci / c_per_group * m_per_group + mm;
                                    y[((b * m() + mo) * oh + std::size_t(yh)) * ow +
                                      std::size_t(yw)] +=
                                        x[((b * c + ci) * h + ih) * w + iw] *
                                        wt[((ci * m_per_group + mm) * kh + a) * kw + e];
                                }
        for (std::size_t i = 0; i < y.size(); ++i)
            y[i] += bias[i / (oh * ow) % m()];
        return {{n, m(), oh, ow}, y};
    }

    // constant_weights: W and B as initializers (folded at import), else graph inputs.
    model_builder model(bool constant_weights, const std::vector<float>& wt,
                        const std::vector<float>& bias) const {
        model_builder b(11);
        b.input("x", TensorProto::FLOAT, i64(x_lens()));
        if (constant_weights) {
            b.initializer("w", i64(w_lens()), wt);
            b.initializer("b", {std::int64_t(m())}, bias);
        } else {
            b.input("w", TensorProto::FLOAT, i64(w_lens()));
            b.input("b", TensorProto::FLOAT, {std::int64_t(m())});
        }
        auto* node = b.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "ct");
        set_ints(node, "strides", strides);
        set_ints(node, "dilations", dilations);
        set_ints(node, "pads", pads);
        set_ints(node, "output_padding", output_padding);
        set_int(node, "group", std::int64_t(group));
        b.output("y");
        return b;
    }
};

std::string import_error(const model_builder& b) {
    return user_error_of([&] { b.import(); });
}

void check(const transposed_2d& t) {
    const auto x = small_integers(t.n * t.c * t.h * t.w, 1);
    const auto wt = small_integers(t.c * t.m_per_group * t.kh * t.kw, 2);
    const auto bias = small_integers(t.m(), 3);
    const auto [lens, want] = t.expected(x, wt, bias);
    for (bool constant_weights : {true, false}) {
        SCOPED_TRACE(constant_weights ? "constant weights" : "weights as inputs");
        auto p = t.model(constant_weights, wt, bias).import();
        ref::parameter_map params{{"x", from_vector<float>(dtype::f32, t.x_lens(), x)}};
        if (!constant_weights) {
            params["w"] = from_vector<float>(dtype::f32, t.w_lens(), wt);
            params["b"] = from_vector<float>(dtype::f32, {t.m()}, bias);
        }
        expect_values(ref::evaluate(p, params).at(0), lens, want);
        run_passes(p.main(), target_independent_passes());
        expect_values(ref::evaluate(p, params).at(0), lens, want);
    }
}

} // namespace

TEST(conv_transpose_import, stride_pads_output_padding_groups_and_dilation) {
    check(transposed_2d{});
}

TEST(conv_transpose_import, negative_pads_grow_the_output) {
    transposed_2d t;
    t.pads = {-1, 2, 0, -2};
    t.output_padding = {0, 0};
    check(t);
}

TEST(conv_transpose_import, plain_stride_one) {
    transposed_2d t;
    t.strides = {1, 1};
    t.dilations = {1, 1};
    t.pads = {0, 0, 0, 0};
    t.output_padding = {0, 0};
    t.group = 1;
    t.c = 2;
    check(t);
}

TEST(conv_transpose_import, bad_attributes_and_shapes_are_user_errors_naming_the_node) {
    const std::string prefix = "ConvTranspose (node 'ct', opset 11): ";
    auto error_with = [&](const std::function<void(transposed_2d&)>& change) {
        transposed_2d t;
        change(t);
        return import_error(t.model(false, {}, {}));
    };
    EXPECT_EQ(error_with([](transposed_2d& t) {
                  t.output_padding = {2, 0};
              }),
              prefix + "output_padding 2 of spatial axis 0 must be in [0, max(stride, dilation)) "
                       "= [0, 2)");
    EXPECT_EQ(error_with([](transposed_2d& t) { t.output_padding = {1}; }),
              prefix + "attribute 'output_padding' needs 2 values, got 1");
    EXPECT_EQ(error_with([](transposed_2d& t) { t.group = 3; }),
              prefix + "the 4 input channels do not divide into 3 groups");
    EXPECT_EQ(error_with([](transposed_2d& t) {
                  t.pads = {0, 0, 11, 0};
              }),
              prefix + "pads 0 and 11 give spatial axis 0 an output length of -1");

    model_builder b(11);
    b.input("x", TensorProto::FLOAT, {1, 4, 3, 4});
    b.input("w", TensorProto::FLOAT, {4, 3, 3});
    b.node("ConvTranspose", {"x", "w"}, {"y"}, "ct");
    b.output("y");
    EXPECT_EQ(import_error(b), prefix + "weights f32[4,3,3] must have the rank of X f32[1,4,3,4]");

    model_builder rows(11);
    rows.input("x", TensorProto::FLOAT, {1, 4, 3, 4});
    rows.input("w", TensorProto::FLOAT, {2, 3, 3, 3});
    rows.node("ConvTranspose", {"x", "w"}, {"y"}, "ct");
    rows.output("y");
    EXPECT_EQ(import_error(rows), prefix + "weights f32[2,3,3,3] need one row per input channel "
                                           "of X f32[1,4,3,4] ([C, M/group, kernel...])");

    model_builder shaped(11);
    shaped.input("x", TensorProto::FLOAT, {1, 4, 3, 4});
    shaped.input("w", TensorProto::FLOAT, {4, 3, 3, 3});
    set_ints(shaped.node("ConvTranspose", {"x", "w"}, {"y"}, "ct"), "output_shape", {5, 6, 7});
    shaped.output("y");
    EXPECT_EQ(import_error(shaped), prefix + "attribute 'output_shape' needs 2 values, got 3");
}

// output_shape fixes the pads: the spec puts the odd one at the beginning unless SAME_UPPER.
TEST(conv_transpose_import, output_shape_places_the_pads) {
    for (const char* auto_pad : {"NOTSET", "SAME_UPPER", "SAME_LOWER"}) {
        SCOPED_TRACE(auto_pad);
        model_builder b(11);
        b.input("x", TensorProto::FLOAT, {1, 1, 3});
        b.initializer("w", {1, 1, 3}, {1, 1, 1});
        auto* node = b.node("ConvTranspose", {"x", "w"}, {"y"}, "ct");
        set_ints(node, "output_shape", {2});
        set_string(node, "auto_pad", auto_pad);
        b.output("y");
        auto p = b.import();
        // Full output (5 long): [x0, x0+x1, x0+x1+x2, x1+x2, x2]; 3 of it are padded away.
        const std::vector<float> x{1, 10, 100};
        const std::vector<float> full{1, 11, 111, 110, 100};
        const std::size_t begin = std::string(auto_pad) == "SAME_UPPER" ? 1 : 2;
        auto y = ref::evaluate(p, {{"x", from_vector<float>(dtype::f32, {1, 1, 3}, x)}}).at(0);
        expect_values(y, {1, 1, 2}, {full[begin], full[begin + 1]});
    }
}

} // namespace conv_transpose_test
