// Every op family on the cuda target against the reference target, per dtype, with outputs and
// temporaries poisoned before each run. Needs a GPU; without one main() says "no CUDA device"
// and CTest reports the test as skipped (SKIP_REGULAR_EXPRESSION), never as passed.
#include "conflux/cuda/target.hpp"
#include "conflux/ir/output_comparison.hpp"
#include "conflux/ops/attention.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/resize.hpp"
#include "conflux/ops/scatter.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/ref/evaluate.hpp"
#include "cuda/codegen/attention_kernel.hpp"
#include "data_movement_cases.hpp"
#include "elementwise_cases.hpp"
#include "fused_patterns.hpp"
#include "normalisation_cases.hpp"
#include "reduction_cases.hpp"
#include "resize_cases.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace conflux {
namespace {

using builder = std::function<void(module&)>;

struct case_result {
    std::string label;
    bool passed = false;
    std::string detail;
};

std::vector<case_result>& summary() {
    static std::vector<case_result> rows;
    return rows;
}

argument random_input(const shape& s, std::mt19937& rng) {
    argument a{s};
    const std::size_t n = s.elements();
    std::vector<double> v(n);
    std::uniform_real_distribution<double> real(-1, 1);
    std::uniform_int_distribution<int> small(0, 3);
    for (auto& x : v) {
        if (s.type() == dtype::boolean)
            x = small(rng) & 1;
        else if (is_integral(s.type()))
            x = small(rng);
        else
            x = real(rng);
    }
    return from_vector<double>(s.type(), s.lens(), v);
}

// Builds the program, runs both targets on the same random inputs, compares every output.
void check_case(const std::string& label, const builder& build, unsigned seed = 1,
                const std::string& attention_config = "", const std::string& perf_config = "") {
    program reference;
    build(reference.main());
    program compiled_source;
    build(compiled_source.main());
    std::mt19937 rng(seed);
    ref::parameter_map params;
    for (instruction_ref p : reference.main().parameters()) {
        const auto* param = p->get_operator().get_if<op::param>();
        params[param->name_] = random_input(p->get_shape(), rng);
    }
    case_result row{label, false, ""};
    try {
        const auto want = ref::evaluate(reference, params);
        // Correctness of the generated kernels, not tuning: the heuristic's configs.
        cuda::compile_options o;
        o.tune = cuda::tune_mode::none;
        o.use_problem_cache = false;
        o.attention_config = attention_config;
        o.perf_config = perf_config;
        auto compiled = cuda::compile(std::move(compiled_source), o);
        const auto got = compiled.run(params, {.poison = true, .sync_each_step = true});
        ASSERT_EQ(got.size(), want.size()) << label;
        row.passed = true;
        for (std::size_t i = 0; i < want.size(); ++i) {
            const output_comparison c = compare_outputs(got[i], want[i]);
            char buf[160];
            std::snprintf(buf, sizeof buf, "rel rms %.3g, max |diff| %.3g, %zu NaN/Inf%s",
                          c.relative_rms, c.max_abs_diff, c.non_finite,
                          is_floating(want[i].get_shape().type())
                              ? ""
                              : (", " + std::to_string(c.mismatches) + " differ").c_str());
            row.detail += buf;
            row.passed = row.passed && c.passed;
            EXPECT_TRUE(c.passed) << label << " output " << i << ": " << buf;
        }
    } catch (const std::exception& e) {
        row.detail = e.what();
        ADD_FAILURE() << label << ": " << e.what();
    }
    summary().push_back(row);
}

const std::vector<dtype> float_types = {dtype::f32, dtype::f16, dtype::bf16};

instruction_ref param(module& m, const std::string& name, dtype t, dims lens) {
    return m.add_parameter(name, shape{t, std::move(lens)});
}

builder unary(const operation& op, dtype t, dims lens) {
    return [=](module& m) {
        auto x = param(m, "x", t, lens);
        m.add_return({m.add_instruction(op, {x})});
    };
}

TEST(CudaOps, EveryElementwiseKindPerDtype) {
    for (const test::elementwise_case& listed : test::elementwise_cases()) {
        // Copies, not structured bindings: Clang 14 cannot capture those in the lambda below.
        const op::elementwise e = listed.op;
        const dtype t = listed.type;
        const std::size_t n = op::arity(e.kind);
        const std::string label = "elementwise " + e.name() + " " + std::string(to_string(t));
        check_case(label, [&](module& m) {
            std::vector<instruction_ref> in;
            // Input 0 transposed, input 1 broadcast along axis 1: strides are honoured.
            auto a = param(m, "a", e.kind == op::elementwise_kind::where ? dtype::boolean : t,
                           {5, 3, 7});
            in.push_back(m.add_instruction(op::transpose{{1, 0, 2}}, {a}));
            for (std::size_t i = 1; i < n; ++i) {
                auto b = param(m, "b" + std::to_string(i), t, {3, 1, 7});
                in.push_back(m.add_instruction(op::broadcast{{3, 5, 7}}, {b}));
            }
            m.add_return({m.add_instruction(e, in)});
        });
    }
}

// Pointwise kernels of 2^20 elements or more compute four elements per thread (the tail too).
TEST(CudaOps, LargePointwiseKernels) {
    using op::elementwise_kind;
    for (dtype t : float_types) {
        const std::string ts(to_string(t));
        // Squeeze-and-excitation's scale of channels-last data, two outputs of one index space.
        check_case("large x * s and x + s, channels-last " + ts, [&](module& m) {
            auto x = param(m, "x", t, {8, 56, 56, 67});
            auto s = param(m, "s", t, {8, 1, 1, 67});
            auto b = m.add_instruction(op::broadcast{{8, 56, 56, 67}}, {s});
            auto e = m.add_instruction(op::make_elementwise(elementwise_kind::exp), {x});
            m.add_return({m.add_instruction(op::make_elementwise(elementwise_kind::mul), {e, b}),
                          m.add_instruction(op::make_elementwise(elementwise_kind::add), {x, b})});
        });
        check_case("large transposed add, odd length " + ts, [&](module& m) {
            auto x = param(m, "x", t, {1031, 1029});
            auto y = param(m, "y", t, {1029, 1031});
            auto ty = m.add_instruction(op::transpose{{1, 0}}, {y});
            m.add_return({m.add_instruction(op::make_elementwise(elementwise_kind::add), {x, ty})});
        });
    }
}

// GELU over its whole range in both forms, against values computed here in double (erfc for the
// erf form, so the negative tail does not cancel). f16 and bf16 results come from the short
// forms in math.cuh (cx_gelu_rounded_to_16) and must be within one unit in the last place of
// the exact value; f32 results compute 0.5 x (1 + erff or tanhf), which cancels for negative x
// as the reference target's does, so they are held to two units plus |x| 2^-22 (an error of
// two units of 1 in erff or tanhf). A relative-RMS comparison would not hold the tails to this.
TEST(CudaOps, GeluBothFormsOverTheWholeRange) {
    // Down to -16: the negative tail passes through bf16's subnormals (about -9.5 to -14).
    constexpr std::size_t n = 28001;
    std::vector<float> xs(n);
    for (std::size_t i = 0; i < n; ++i)
        xs[i] = -16.0f + 28.0f * float(i) / float(n - 1);
    for (dtype t : float_types)
        for (const float form : {0.0f, 1.0f}) {
            const std::string label = std::string("gelu ") + (form != 0 ? "tanh" : "erf") +
                                      " form over [-16, 12] " + std::string(to_string(t));
            // A parameter, not a literal: a literal's GELU would be folded at compile time by
            // the reference's arithmetic, and the kernel never run.
            const argument x_in = from_vector(t, {n}, xs);
            program source;
            module& m = source.main();
            m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::gelu, form),
                                            {param(m, "x", t, {n})})});
            cuda::compile_options o;
            o.tune = cuda::tune_mode::none;
            o.use_problem_cache = false;
            const auto got = to_vector<double>(
                cuda::compile(std::move(source), o).run({{"x", x_in}}, {.poison = true}).at(0));
            const auto x = to_vector<double>(x_in);
            const int digits = t == dtype::f16 ? 11 : t == dtype::bf16 ? 8 : 24;
            // The spacing of the type's subnormals (bf16 has f32's exponent range, 8 bits).
            const double smallest = t == dtype::f16    ? std::ldexp(1.0, -24)
                                    : t == dtype::bf16 ? std::ldexp(1.0, -133)
                                                       : std::ldexp(1.0, -149);
            std::size_t worse = 0;
            double worst = 0, worst_x = 0, worst_got = 0, worst_exact = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const double v = x[i];
                const double u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
                const double exact = form != 0 ? v / (1 + std::exp(-2 * u))
                                               : 0.5 * v * std::erfc(-v / std::sqrt(2.0));
                const double ulp =
                    exact == 0
                        ? smallest
                        : std::max(smallest, std::ldexp(1.0, std::ilogb(exact) + 1 - digits));
                const double allowed =
                    t == dtype::f32 ? 2 * ulp + std::abs(v) * std::ldexp(1.0, -22) : ulp;
                const double d = std::abs(got[i] - exact);
                if (d / ulp > worst) {
                    worst = d / ulp;
                    worst_x = v;
                    worst_got = got[i];
                    worst_exact = exact;
                }
                if (!(d <= allowed)) ++worse;
            }
            char buf[200];
            std::snprintf(buf, sizeof buf,
                          "%zu of %zu out of bounds, worst %.2f ulp from exact (x %.4f: %.6g, "
                          "exact %.6g)",
                          worse, n, worst, worst_x, worst_got, worst_exact);
            summary().push_back({label, worse == 0, buf});
            EXPECT_EQ(worse, 0u) << label << ": " << buf;
        }
}

TEST(CudaOps, LayoutCopiesAndDataMovement) {
    for (dtype t : {dtype::f32, dtype::f16, dtype::i64})
        for (const auto& c : test::data_movement_cases(t))
            check_case(c.name, c.build);
}

// Resize: the kernel's taps are the reference's tables; every mode over a transposed view
// (NHWC seen as NCHW) and the crop's extrapolation.
TEST(CudaOps, Resize) {
    for (const auto& c : test::resize_cases())
        check_case(c.name, c.build);
}

// Gather and scatter indices read from an input at run time: one out of range of its axis is a
// user error (as in the reference), not the clamped element; the next run with valid indices is
// right.
TEST(CudaOps, GatherIndexOutOfRangeIsAUserError) {
    for (std::string name :
         {"gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd"}) {
        auto build = [&](module& m) {
            auto x = param(m, "x", dtype::f32, {5, 6});
            auto i = param(m, "i", dtype::i64, {5, 2});
            if (name == "gather") m.add_return({m.add_instruction(op::gather{1}, {x, i})});
            if (name == "gather_elements")
                m.add_return({m.add_instruction(op::gather_elements{1}, {x, i})});
            if (name == "gather_nd") m.add_return({m.add_instruction(op::gather_nd{}, {x, i})});
            if (name == "scatter_elements")
                m.add_return({m.add_instruction(op::scatter_elements{1},
                                                {x, i, param(m, "u", dtype::f32, {5, 2})})});
            if (name == "scatter_nd")
                m.add_return(
                    {m.add_instruction(op::scatter_nd{}, {x, i, param(m, "u", dtype::f32, {5})})});
        };
        program source;
        build(source.main());
        cuda::compile_options o;
        o.tune = cuda::tune_mode::none;
        o.use_problem_cache = false;
        auto compiled = cuda::compile(std::move(source), o);
        std::vector<float> xs(30);
        for (std::size_t k = 0; k < xs.size(); ++k)
            xs[k] = float(k);
        ref::parameter_map params{{"x", from_vector<float>(dtype::f32, {5, 6}, xs)}};
        if (name == "scatter_elements")
            params["u"] = from_vector<float>(dtype::f32, {5, 2}, std::vector<float>(10, -1.0f));
        if (name == "scatter_nd")
            params["u"] = from_vector<float>(dtype::f32, {5}, std::vector<float>(5, -1.0f));
        for (std::int64_t bad : {std::int64_t{6}, std::int64_t{-7}, std::int64_t{1} << 40}) {
            params["i"] =
                from_vector<std::int64_t>(dtype::i64, {5, 2}, {0, 1, 2, 3, 4, 5, -1, -6, 2, bad});
            std::string msg;
            try {
                compiled.run(params);
            } catch (const user_error& e) {
                msg = e.what();
            }
            EXPECT_NE(msg.find("out of range"), std::string::npos) << bad << ": " << msg;
            EXPECT_NE(msg.find(name), std::string::npos) << msg;
        }
        params["i"] =
            from_vector<std::int64_t>(dtype::i64, {5, 2}, {0, 1, 2, 3, 4, 5, -1, -6, 2, 5});
        program reference;
        build(reference.main());
        const auto want = ref::evaluate(reference, params);
        const auto got = compiled.run(params);
        EXPECT_EQ(to_vector<float>(got.at(0)), to_vector<float>(want.at(0)));
    }
}

TEST(CudaOps, ReductionsSoftmaxArg) {
    for (const auto& c : test::reduction_cases())
        check_case(c.name, c.build);
}

TEST(CudaOps, Normalisation) {
    for (dtype t : float_types)
        for (const auto& c : test::normalisation_cases(t))
            check_case(c.name, c.build);
}

TEST(CudaOps, PoolingConvolutionDot) {
    for (dtype t : float_types) {
        const std::string ts(to_string(t));
        check_case(
            "max_pool 3x3 s2 " + ts,
            unary(
                op::pooling{
                    op::pooling_mode::max, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false},
                t, {2, 4, 11, 11}));
        check_case(
            "average_pool ceil " + ts,
            unary(
                op::pooling{
                    op::pooling_mode::average, {2, 2}, {2, 2}, {0, 0, 1, 1}, {1, 1}, true, true},
                t, {2, 3, 9, 9}));
        // Channels-last poolings (what layout_nhwc makes of a pooling after a convolution):
        // directly, in 2-D and 3-D, and through the layout pass after a convolution.
        // 20 and 64 channels: 4 and 8 f16 channels a thread (16 bytes where the channel count
        // allows).
        const op::pooling nhwc_max{
            op::pooling_mode::max, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false, true};
        for (std::size_t channels : {20, 64})
            check_case("max_pool channels_last 3x3 s2, " + std::to_string(channels) + " channels " +
                           ts,
                       unary(nhwc_max, t, {2, 11, 11, channels}));
        check_case("average_pool channels_last 3-D ceil " + ts,
                   unary(op::pooling{op::pooling_mode::average,
                                     {2, 2, 3},
                                     {2, 1, 2},
                                     {0, 1, 0, 1, 0, 1},
                                     {1, 1, 1},
                                     true,
                                     true,
                                     true},
                         t, {2, 5, 6, 7, 3}));
        // A slice of 64 channels starting 4 elements into each pixel of 72: the view's offset
        // narrows the vector.
        check_case("average_pool channels_last of a channel slice at offset 4 " + ts,
                   [&](module& m) {
                       auto x = param(m, "x", t, {2, 9, 9, 72});
                       auto v = m.add_instruction(op::slice{{3}, {4}, {68}, {}}, {x});
                       m.add_return({m.add_instruction(op::pooling{op::pooling_mode::average,
                                                                   {3, 3},
                                                                   {2, 2},
                                                                   {1, 1, 1, 1},
                                                                   {1, 1},
                                                                   false,
                                                                   true,
                                                                   true},
                                                       {v})});
                   });
        check_case("conv + relu + max_pool (the pool runs channels-last) " + ts, [&](module& m) {
            auto x = param(m, "x", t, {2, 3, 17, 17});
            auto w = param(m, "w", t, {16, 3, 3, 3});
            auto c =
                m.add_instruction(op::convolution{{1, 1, 1, 1}, {2, 2}, {1, 1}, 1, false}, {x, w});
            auto r = m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {c});
            m.add_return({m.add_instruction(
                op::pooling{
                    op::pooling_mode::max, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, false},
                {r})});
        });
        check_case("conv 3x3 pad1 + bias + relu " + ts, [&](module& m) {
            auto x = param(m, "x", t, {2, 8, 10, 10});
            auto w = param(m, "w", t, {16, 8, 3, 3});
            auto b = param(m, "b", t, {1, 16, 1, 1});
            auto c =
                m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1, false}, {x, w});
            auto bb = m.add_instruction(op::broadcast{{2, 16, 10, 10}}, {b});
            auto add = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {c, bb});
            m.add_return(
                {m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {add})});
        });
        check_case("conv grouped strided dilated " + ts, [&](module& m) {
            auto x = param(m, "x", t, {1, 6, 13, 12});
            auto w = param(m, "w", t, {9, 2, 3, 2});
            m.add_return({m.add_instruction(op::convolution{{1, 0, 2, 1}, {2, 1}, {2, 1}, 3, false},
                                            {x, w})});
        });
        check_case("dot batched broadcast " + ts, [&](module& m) {
            auto a = param(m, "a", t, {3, 17, 33});
            auto b = param(m, "b", t, {33, 9});
            auto bb = m.add_instruction(op::broadcast{{3, 33, 9}}, {b});
            m.add_return({m.add_instruction(op::dot{}, {a, bb})});
        });
        check_case("dot transposed operand + transposed tail " + ts, [&](module& m) {
            auto a = param(m, "a", t, {40, 24});
            auto b = param(m, "b", t, {40, 24});
            auto bt = m.add_instruction(op::transpose{{1, 0}}, {b});
            auto d = m.add_instruction(op::dot{}, {a, bt});
            auto th = m.add_instruction(op::make_elementwise(op::elementwise_kind::tanh), {d});
            m.add_return({m.add_instruction(op::transpose{{1, 0}}, {th})});
        });
    }
    check_case("dot i32", [&](module& m) {
        auto a = param(m, "a", dtype::i32, {5, 7});
        auto b = param(m, "b", dtype::i32, {7, 4});
        m.add_return({m.add_instruction(op::dot{}, {a, b})});
    });
}

// A fused epilogue reads an extra input a vector at a time where its lanes are consecutive and
// aligned (fused_epilogue.cpp, load_input_vectors), else a lane at a time: residuals that are
// slices starting 8 columns in (aligned in f16) and 3 columns in (never aligned), and a bias, on
// the heuristic's config and on each kernel form (a config that cannot run here falls back to
// the heuristic's).
TEST(CudaOps, FusedEpilogueInputsFromSlices) {
    for (dtype t : float_types)
        for (const char* config :
             {"", "64x64x32_w2x2_s3_k1", "128x128x64_w8x1_s4_k1_wgmma",
              "128x128x64_w8x1_s4_k1_wgmma_pp_tma", "128x192x64_w8x1_s4_k1_wgmma_ws_tma"})
            check_case(
                "dot+bias+sliced residuals " + std::string(to_string(t)) + " " + config,
                [=](module& m) {
                    auto add = op::make_elementwise(op::elementwise_kind::add);
                    auto a = param(m, "a", t, {200, 64});
                    auto w = param(m, "w", t, {64, 32});
                    auto b = param(m, "b", t, {32});
                    auto r = param(m, "r", t, {200, 48});
                    auto d = m.add_instruction(op::dot{}, {a, w});
                    auto x = m.add_instruction(
                        add, {d, m.add_instruction(op::broadcast{{200, 32}}, {b})});
                    x = m.add_instruction(
                        add, {x, m.add_instruction(op::slice{{1}, {8}, {40}, {}}, {r})});
                    x = m.add_instruction(
                        add, {x, m.add_instruction(op::slice{{1}, {3}, {35}, {}}, {r})});
                    m.add_return(
                        {m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {x})});
                },
                1, "", config);
}

// The fused attention kernel (issue 16) against the reference op: head dims, sequence lengths
// that are not multiples of the 64-row / 64-key tiles, Whisper's 1500 positions, kt as the
// transposed view the exporters give, keys and values broadcast over heads (grouped-query
// attention), a broadcast mask with zero strides, -inf rows with and without the safe softmax.
TEST(CudaOps, AttentionKernel) {
    struct attention_case {
        std::string name;
        dtype t;
        dims batch;
        std::size_t sq, sk, d, dv;
        int bias; // 0 none, 1 random [.., sq, sk], 2 broadcast [b, 1, 1, sk], 3 -inf rows
        bool zero_nan;
        bool grouped;                            // k and v broadcast over the head axis
        std::vector<std::int64_t> out_perm = {}; // the output written transposed
        bool every_config = false; // run every attention config, not only the heuristic's
        float scale = 0.3f;        // negative: the kernel cannot keep raw scores' maximum
    };
    const std::vector<attention_case> cases{
        {"vit 197x197 d64", dtype::f16, {2, 3}, 197, 197, 64, 64, 0, false, false, {}, true},
        {"whisper 1500 d64", dtype::f16, {1, 2}, 1500, 1500, 64, 64, 0, false, false},
        {"d128 mask", dtype::f16, {1, 2}, 100, 77, 128, 128, 1, false, false, {}, true},
        {"bf16 d72 dv40", dtype::bf16, {2, 2}, 33, 45, 72, 40, 1, false, false, {}, true},
        {"broadcast mask safe softmax", dtype::f16, {2, 2}, 70, 65, 32, 32, 2, true, false},
        {"-inf rows safe softmax", dtype::f16, {1, 2}, 20, 20, 16, 16, 3, true, false, {}, true},
        {"-inf rows plain", dtype::bf16, {1, 1}, 20, 20, 16, 16, 3, false, false},
        {"grouped query", dtype::f16, {1, 4}, 64, 130, 64, 64, 0, false, true, {}, true},
        {"one row one key", dtype::f16, {1}, 1, 1, 16, 16, 0, false, false},
        // 128-row blocks (sequences of 512 and more) with d128, a mask and key tails; and head
        // dims that are not multiples of 8 (q and k copied at once, v by cp.async).
        {"long bf16 d128 mask", dtype::bf16, {1, 2}, 600, 700, 128, 128, 1, false, false, {}, true},
        {"d20 dv24 long", dtype::f16, {1, 2}, 530, 130, 20, 24, 1, false, false, {}, true},
        // The heads written back merged ([batch, Sq, heads, Dv]), as fuse_attention absorbs the
        // transpose before the output projection; and sequence-first ([Sq, batch, heads, Dv]).
        {"vit heads merged",
         dtype::f16,
         {2, 3},
         197,
         197,
         64,
         64,
         0,
         false,
         false,
         {0, 2, 1, 3},
         true},
        {"bf16 seq first", dtype::bf16, {2, 3}, 70, 90, 32, 48, 1, false, false, {2, 0, 1, 3}},
        {"negative scale", dtype::f16, {1, 2}, 150, 90, 64, 64, 0, false, false, {}, true, -0.2f},
    };
    for (const auto& c : cases) {
        // The heuristic's config, then (the every-config harness) each one that can run it.
        std::vector<std::string> configs{""};
        if (c.every_config)
            for (const auto& ac : cuda::attention_configs())
                if (cuda::attention_config_obstacle(ac, c.d, c.dv).empty())
                    configs.push_back(ac.name());
        for (const std::string& config : configs)
            check_case(
                "attention " + c.name + (config.empty() ? "" : " " + config),
                [&](module& m) {
                    auto with = [&](dims b, std::size_t x, std::size_t y) {
                        b.push_back(x);
                        b.push_back(y);
                        return b;
                    };
                    dims kv_batch = c.batch;
                    if (c.grouped) kv_batch.back() = 1;
                    auto q = param(m, "q", c.t, with(c.batch, c.sq, c.d));
                    auto keys = param(m, "k", c.t, with(kv_batch, c.sk, c.d));
                    auto v0 = param(m, "v", c.t, with(kv_batch, c.sk, c.dv));
                    std::vector<std::int64_t> perm;
                    for (std::size_t i = 0; i < c.batch.size(); ++i)
                        perm.push_back(std::int64_t(i));
                    perm.push_back(std::int64_t(c.batch.size() + 1));
                    perm.push_back(std::int64_t(c.batch.size()));
                    instruction_ref kt = m.add_instruction(op::transpose{perm}, {keys});
                    instruction_ref v = v0;
                    if (c.grouped) {
                        kt = m.add_instruction(op::broadcast{with(c.batch, c.d, c.sk)}, {kt});
                        v = m.add_instruction(op::broadcast{with(c.batch, c.sk, c.dv)}, {v});
                    }
                    std::vector<instruction_ref> in{q, kt, v};
                    const dims scores = with(c.batch, c.sq, c.sk);
                    if (c.bias == 1) in.push_back(param(m, "bias", c.t, scores));
                    if (c.bias == 2) {
                        dims small(c.batch.size(), 1);
                        small[0] = c.batch[0];
                        auto b = param(m, "mask", c.t, with(small, 1, c.sk));
                        in.push_back(m.add_instruction(op::broadcast{scores}, {b}));
                    }
                    if (c.bias == 3) {
                        // Rows 3 and 11 see no key at all; the others all but key 0.
                        std::size_t elements = 1;
                        for (auto l : scores)
                            elements *= l;
                        std::vector<float> values(elements, 0.0f);
                        for (std::size_t i = 0; i < values.size(); ++i) {
                            const std::size_t row = i / c.sk % c.sq, key = i % c.sk;
                            if (row == 3 || row == 11 || key == 0)
                                values[i] = -std::numeric_limits<float>::infinity();
                        }
                        in.push_back(m.add_literal(from_vector(c.t, scores, values)));
                    }
                    m.add_return(
                        {m.add_instruction(op::attention{c.scale, c.zero_nan, c.out_perm}, in)});
                },
                1, config);
    }
}

// Issue 5's matrix on the GPU: every fused pattern family x f32/f16/bf16 x every candidate
// perf config of its anchor, forced, run against the reference with poisoned outputs.
TEST(CudaFusedGemmMatrix, EveryPatternDtypeAndConfigMatchesTheReference) {
    struct job {
        test::fused_pattern pattern;
        dtype type;
    };
    std::vector<job> jobs;
    for (const auto& p : test::fused_patterns())
        for (dtype t : float_types)
            jobs.push_back({p, t});
    std::mutex mutex;
    std::size_t runs = 0, failures = 0;
    std::map<std::string, std::size_t> decisions;
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t i = next++; i < jobs.size(); i = next++) {
            const job& j = jobs[i];
            auto build = [&] {
                program p;
                j.pattern.build(p.main(), j.type);
                return p;
            };
            program reference = build();
            std::mt19937 rng(unsigned(i) + 7);
            ref::parameter_map params;
            for (instruction_ref p : reference.main().parameters())
                params[p->get_operator().get_if<op::param>()->name_] =
                    random_input(p->get_shape(), rng);
            const auto want = ref::evaluate(reference, params);
            cuda::compile_options o;
            o.compile_threads = 1;
            o.tune = cuda::tune_mode::none;
            o.use_problem_cache = false;
            std::vector<std::string> configs{""};
            try {
                configs = cuda::compile(build(), o).anchor_candidates().at(0);
            } catch (const std::exception& e) {
                std::lock_guard lock(mutex);
                ADD_FAILURE() << j.pattern.name << ": " << e.what();
                continue;
            }
            // The _wgmma_pp and _tma forms are not tuning candidates until timed: every pattern
            // runs them too (a device without wgmma, or a convolution or view that TMA cannot
            // copy for the _tma forms, compiles the heuristic's config instead).
            if (j.type == dtype::f16 || j.type == dtype::bf16)
                for (const char* pp :
                     {"128x128x64_w8x1_s4_k1_wgmma_pp", "64x256x64_w8x1_s4_k1_wgmma_pp",
                      "128x128x64_w8x1_s4_k1_wgmma_pp_tma", "128x256x64_w8x1_s4_k1_wgmma_ws_tma"})
                    configs.push_back(pp);
            for (const auto& config : configs) {
                std::string label =
                    j.pattern.name + " " + std::string(to_string(j.type)) + " " + config;
                bool ok = true;
                std::string detail, decision = "?";
                try {
                    o.perf_config = config;
                    auto compiled = cuda::compile(build(), o);
                    for (const auto& line : compiled.trace())
                        for (const char* d : {"3-way", "2-way", "fused"})
                            if (line.find(std::string("-> ") + d) != std::string::npos)
                                decision = d;
                    const auto got = compiled.run(params, {.poison = true, .sync_each_step = true});
                    for (std::size_t k = 0; k < want.size(); ++k) {
                        const auto c = compare_outputs(got.at(k), want[k]);
                        ok = ok && c.passed;
                        if (!c.passed)
                            detail += "output " + std::to_string(k) + " rel rms " +
                                      std::to_string(c.relative_rms) + "; ";
                    }
                } catch (const std::exception& e) {
                    ok = false;
                    detail = e.what();
                }
                std::lock_guard lock(mutex);
                ++runs;
                ++decisions[decision];
                if (!ok) {
                    ++failures;
                    ADD_FAILURE() << label << ": " << detail;
                    summary().push_back({label, false, detail});
                }
                // Progress that survives a call's time limit.
                if (runs % 200 == 0)
                    std::printf("fused pattern matrix: %zu runs so far, %zu failures\n", runs,
                                failures);
            }
        }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t)
        threads.emplace_back(worker);
    for (auto& t : threads)
        t.join();
    std::printf("fused pattern matrix: %zu runs (", runs);
    for (const auto& [d, n] : decisions)
        std::printf(" %s %zu", d.c_str(), n);
    std::printf(" ), %zu mismatches or failures\n", failures);
}

} // namespace
} // namespace conflux

int main(int argc, char** argv) {
    if (conflux::cuda::available_devices() == 0) {
        std::cout << "no CUDA device (" << conflux::cuda::no_device_reason()
                  << "): the GPU op tests are skipped\n";
        return 0;
    }
    ::testing::InitGoogleTest(&argc, argv);
    const int rc = RUN_ALL_TESTS();
    std::size_t passed = 0;
    for (const auto& row : conflux::summary()) {
        passed += row.passed;
        if (!row.passed) std::printf("FAIL %-48s %s\n", row.label.c_str(), row.detail.c_str());
    }
    std::printf("gpu op cases: %zu passed, %zu failed\n", passed,
                conflux::summary().size() - passed);
    return rc;
}
