// The tensor-core GEMM generator on the CPU: perf config text, problem analysis, valid() and
// its reasons, the candidate space, and NVRTC compiles of generated kernels for sm_90 (no GPU
// needed). tests/gpu/gemm_kernel_test.cpp runs the same kernels on a GPU.
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "cuda/codegen/gemm/depthwise_kernel.hpp"
#include "cuda/codegen/gemm/gemm_kernel.hpp"
#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/codegen/gemm/kernel_plan.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

namespace conflux::cuda {
namespace cuda_gemm_codegen_test {

gemm_problem dot_problem(dtype t, const shape& a, const shape& b,
                         std::array<std::size_t, 2> offsets = {0, 0}) {
    const operation op = op::dot{};
    const shape out = op.compute_shape({a, b});
    auto p = make_gemm_problem(op, {a, b}, out, offsets);
    EXPECT_TRUE(p.has_value());
    EXPECT_EQ(p->type, t);
    return *p;
}

gemm_problem dot_problem(dtype t, std::size_t m, std::size_t n, std::size_t k,
                         bool transposed_b = false) {
    const shape a{t, {m, k}};
    const shape b = transposed_b ? shape{t, {k, n}, {1, k}} : shape{t, {k, n}};
    return dot_problem(t, a, b);
}

op::convolution conv_op(std::size_t nd, std::size_t stride, std::size_t pad, std::size_t group,
                        std::size_t dilation = 1) {
    op::convolution c;
    c.channels_last = true;
    c.group = group;
    c.stride.assign(nd, stride);
    c.dilation.assign(nd, dilation);
    c.padding.assign(2 * nd, pad);
    return c;
}

// input [n, spatial..., c], weights [k, kernel..., c / group]
struct conv_case {
    gemm_problem problem;
    shape x, w, y;
};

conv_case conv_problem(dtype t, const op::convolution& c, dims x_lens, dims w_lens) {
    const operation op = c;
    const shape x{t, x_lens}, w{t, w_lens};
    const shape y = op.compute_shape({x, w});
    auto p = make_gemm_problem(op, {x, w}, y);
    EXPECT_TRUE(p.has_value());
    return {*p, x, w, y};
}

TEST(CudaGemmConfig, ParsesAndPrintsRoundTrip) {
    for (const char* text :
         {"128x128x32_w2x2_s3_k1", "128x256x32_w2x4_s4_k2_v8", "64x64x16_w2x2_s2_k1_simt",
          "16x32x32_w1x1_s2_k4_v1_simt", "256x128x64_w4x2_s3_k1"}) {
        const auto c = parse_perf_config(text);
        ASSERT_TRUE(c.has_value()) << text;
        EXPECT_EQ(to_string(*c), text);
    }
    const auto c = parse_perf_config("128x256x32_w2x4_s4_k2_v8");
    EXPECT_EQ(c->tile_m, 128u);
    EXPECT_EQ(c->tile_n, 256u);
    EXPECT_EQ(c->tile_k, 32u);
    EXPECT_EQ(c->warps_m, 2u);
    EXPECT_EQ(c->warps_n, 4u);
    EXPECT_EQ(c->stages, 4u);
    EXPECT_EQ(c->split_k, 2u);
    EXPECT_EQ(c->vector, 8u);
    EXPECT_FALSE(c->simt);
    EXPECT_EQ(c->threads(), 256u);
}

TEST(CudaGemmConfig, RejectsGarbage) {
    for (const char* text :
         {"", "garbage", "128x128x32", "128x128x32_w2x2_s3", "128x128x32_w2x2_s3_k1_",
          "128x128x32_w2x2_s3_k1_simt_v8", "0128x128x32_w2x2_s3_k1", "-1x128x32_w2x2_s3_k1",
          "128x128x32_w2x2_s3_k1_v0", "99999999999x1x1_w1x1_s2_k1", "128X128x32_w2x2_s3_k1",
          "128x128x32_w2x2_s3_k1 ", " 128x128x32_w2x2_s3_k1", "128x128x32_w2x2_s3_k1_v8_v8",
          "128x128x32_w2x2_s3_k1_simt_simt", "128x128x32_s3_w2x2_k1", "1x2x3_w4x5_s6_k7_x"})
        EXPECT_FALSE(parse_perf_config(text).has_value()) << text;
}

std::string why_not(const std::string& config, const gemm_problem& p,
                    const gemm_device_limits& limits = {}) {
    std::string why;
    const auto c = parse_perf_config(config);
    EXPECT_TRUE(c.has_value()) << config;
    EXPECT_FALSE(valid(*c, p, &why, limits)) << config << " on " << to_string(p);
    EXPECT_FALSE(why.empty());
    return why;
}

bool is_valid(const std::string& config, const gemm_problem& p) {
    std::string why;
    const bool ok = valid(*parse_perf_config(config), p, &why);
    EXPECT_TRUE(ok || !why.empty());
    return ok;
}

#define EXPECT_CONTAINS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(CudaGemmConfig, ValidRejectsWithReasons) {
    const auto big = dot_problem(dtype::f16, 4096, 4096, 4096);
    EXPECT_TRUE(is_valid("128x128x32_w2x2_s3_k1", big));
    EXPECT_TRUE(is_valid("128x256x32_w2x4_s4_k1_v8", big));
    EXPECT_CONTAINS(why_not("256x256x128_w4x4_s4_k1", big), "shared memory");
    gemm_device_limits small_device;
    small_device.shared_per_block = 48 * 1024;
    EXPECT_CONTAINS(why_not("128x128x32_w2x2_s4_k1", big, small_device), "48 KiB");
    EXPECT_EQ(shared_bytes(*parse_perf_config("128x128x32_w2x2_s4_k1"), big),
              4u * (128 * 32 + 32 * 128) * 2);
    EXPECT_CONTAINS(why_not("128x128x32_w2x2_s1_k1", big), "stages");
    EXPECT_CONTAINS(why_not("128x128x32_w3x2_s3_k1", big), "do not divide");
    EXPECT_CONTAINS(why_not("128x128x32_w16x1_s3_k1", big), "16x8");
    EXPECT_CONTAINS(why_not("128x128x24_w2x2_s3_k1", big), "multiple of the mma");
    EXPECT_CONTAINS(why_not("128x128x32_w2x2_s3_k1_v16", big), "16 bytes");
    EXPECT_CONTAINS(why_not("128x128x32_w2x2_s3_k1_v3", big), "vector width");
    EXPECT_CONTAINS(why_not("128x128x32_w8x8_s3_k1", big), "1024 threads");
    EXPECT_CONTAINS(why_not("128x128x32_w1x1_s3_k1", big), "accumulator registers");

    // K = 7: rows of A are 14 bytes apart, so no vector wider than one element.
    const auto odd = dot_problem(dtype::f16, 64, 64, 7);
    EXPECT_CONTAINS(why_not("64x64x32_w2x2_s3_k1_v8", odd), "too wide for A");
    EXPECT_CONTAINS(why_not("64x64x32_w2x2_s3_k1_v2", odd), "too wide");
    EXPECT_TRUE(is_valid("64x64x32_w2x2_s3_k1_v1", odd));
    EXPECT_TRUE(is_valid("64x64x32_w2x2_s3_k1", odd)); // auto width: element copies
    // A view that starts 2 bytes into its buffer allows no 16-byte copy.
    const auto offset =
        dot_problem(dtype::f16, shape{dtype::f16, {64, 64}}, shape{dtype::f16, {64, 64}}, {1, 0});
    EXPECT_EQ(offset.a.max_vector, 1u);
    EXPECT_EQ(offset.b.max_vector, 8u);
    EXPECT_CONTAINS(why_not("64x64x32_w2x2_s3_k1_v8", offset), "aligned");

    const auto f64 = dot_problem(dtype::f64, 64, 64, 64);
    EXPECT_CONTAINS(why_not("64x64x32_w2x2_s3_k1", f64), "_simt");
    EXPECT_TRUE(is_valid("64x64x16_w2x2_s3_k1_simt", f64));
    EXPECT_CONTAINS(why_not("64x64x16_w2x2_s3_k8_simt", f64), "split-K");
    EXPECT_CONTAINS(why_not("128x128x16_w1x1_s3_k1_simt", f64), "accumulator registers");
    const auto i8 = dot_problem(dtype::i8, 64, 64, 64);
    EXPECT_CONTAINS(why_not("64x64x8_w2x2_s3_k1_simt", i8), "16 bytes");
    EXPECT_CONTAINS(why_not("64x64x16_w2x2_s3_k1_v2_simt", i8), "cp.async");
    EXPECT_TRUE(is_valid("64x64x16_w2x2_s3_k1_v16_simt", i8));

    // Split-K needs a K-tile for every split.
    const auto short_k = dot_problem(dtype::f16, 64, 64, 64);
    EXPECT_TRUE(is_valid("64x64x32_w2x2_s3_k2", short_k));
    EXPECT_CONTAINS(why_not("64x64x32_w2x2_s3_k4", short_k), "split-K 4");
}

TEST(CudaGemmProblem, DotOperandsLayoutsAndBroadcast) {
    const auto p = dot_problem(dtype::f16, 128, 256, 64);
    EXPECT_EQ(p.family, gemm_family::dot);
    EXPECT_EQ(p.m, 128u);
    EXPECT_EQ(p.n, 256u);
    EXPECT_EQ(p.k, 64u);
    EXPECT_EQ(p.batch(), 1u);
    EXPECT_EQ(p.a.major, operand_major::k);
    EXPECT_EQ(p.b.major, operand_major::mn);
    EXPECT_EQ(p.a.max_vector, 8u);
    EXPECT_EQ(p.b.max_vector, 8u);
    const auto t = dot_problem(dtype::f16, 128, 256, 64, true);
    EXPECT_EQ(t.b.major, operand_major::k);
    EXPECT_EQ(t.b.row_stride, 64);

    // [2, 1, M, K] x [3, K, N]: batch [2, 3]; A broadcasts along the 3, B along the 2.
    const auto b =
        dot_problem(dtype::f32, shape{dtype::f32, {2, 1, 5, 6}}, shape{dtype::f32, {3, 6, 7}});
    EXPECT_EQ(b.batch_lens, (dims{2, 3}));
    EXPECT_EQ(b.a.batch_strides, (dims{30, 0}));
    EXPECT_EQ(b.b.batch_strides, (dims{0, 42}));
    EXPECT_EQ(b.a.max_vector, 2u); // K = 6
    EXPECT_EQ(b.b.max_vector, 1u); // N = 7
    EXPECT_CONTAINS(b.b.vector_limit_reason, "stride 42");
    EXPECT_CONTAINS(to_string(b), "dot f32 z[2,3] m5 n7 k6");
}

TEST(CudaGemmProblem, RowsEndingInsideAVectorCopyAPartialLastVector) {
    // B's rows of 37 start 16-byte aligned (padded to 40): 8-element copies, the last one of a
    // row partial. Along K (k-major A) a partial vector is not allowed: element copies.
    const auto p = dot_problem(dtype::f16, shape{dtype::f16, {128, 37}, {40, 1}},
                               shape{dtype::f16, {37, 37}, {40, 1}});
    EXPECT_EQ(p.b.major, operand_major::mn);
    EXPECT_EQ(p.b.max_vector, 8u);
    EXPECT_TRUE(p.b.partial_last_vector);
    EXPECT_CONTAINS(to_string(p), "B{mn-major 256B v8p");
    EXPECT_EQ(p.a.major, operand_major::k);
    EXPECT_EQ(p.a.max_vector, 1u);
    EXPECT_FALSE(p.a.partial_last_vector);
    EXPECT_CONTAINS(p.a.vector_limit_reason, "contiguous extent 37");
    // Unpadded rows of 37 start anywhere: element copies, as before.
    const auto q =
        dot_problem(dtype::f16, shape{dtype::f16, {128, 64}}, shape{dtype::f16, {64, 37}});
    EXPECT_EQ(q.b.max_vector, 1u);
    EXPECT_FALSE(q.b.partial_last_vector);
}

TEST(CudaGemmProblem, ConvolutionIsImplicitGemm) {
    // 2 images 9x9x16 -> 3x3 kernel, stride 2, pad 1, 2 groups of 8 channels, 32 filters.
    const auto c = conv_problem(dtype::f16, conv_op(2, 2, 1, 2), {2, 9, 9, 16}, {32, 3, 3, 8});
    const auto& p = c.problem;
    EXPECT_EQ(p.family, gemm_family::convolution);
    EXPECT_EQ(p.m, 2u * 5 * 5);
    EXPECT_EQ(p.n, 16u);
    EXPECT_EQ(p.k, 3u * 3 * 8);
    EXPECT_EQ(p.batch_lens, dims{2});
    ASSERT_TRUE(p.conv.has_value());
    EXPECT_EQ(p.conv->output_spatial, (dims{5, 5}));
    EXPECT_EQ(p.a.max_vector, 8u);
    EXPECT_EQ(p.b.major, operand_major::k);
    EXPECT_EQ(p.b.max_vector, 8u);
    // 3 channels (an RGB stem): element copies of the input.
    const auto rgb = conv_problem(dtype::f16, conv_op(2, 2, 3, 1), {1, 32, 32, 3}, {8, 7, 7, 3});
    EXPECT_EQ(rgb.problem.a.max_vector, 1u);
    EXPECT_EQ(rgb.problem.k, 7u * 7 * 3);
    // NCHW is the same problem on permuted views.
    op::convolution nchw = conv_op(2, 1, 1, 1);
    nchw.channels_last = false;
    const operation op = nchw;
    const shape x{dtype::f32, {1, 4, 6, 6}}, w{dtype::f32, {8, 4, 3, 3}};
    const auto q = make_gemm_problem(op, {x, w}, op.compute_shape({x, w}));
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(q->m, 36u);
    EXPECT_EQ(q->n, 8u);
    EXPECT_EQ(q->k, 36u);
    EXPECT_FALSE(q->conv->channels_last);
    EXPECT_FALSE(make_gemm_problem(operation(op::dot{}), {x}, x).has_value());
}

// Evaluates the GEMM a problem describes on the CPU, reading the operands only through the
// problem's fields (batch/row/depth strides, the convolution geometry), and storing (b, m, n)
// where the epilogue contract says it goes: so the analysis can be checked against the
// reference op without a GPU.
std::vector<double> emulate(const gemm_problem& p, const std::vector<double>& a,
                            const std::vector<double>& b, const shape& out) {
    std::vector<double> result(out.element_space(), 0.0);
    auto batch_offset = [&](const gemm_operand& o, std::size_t z) {
        long long off = 0;
        for (std::size_t d = p.batch_lens.size(); d-- > 0;) {
            off += static_cast<long long>((z % p.batch_lens[d]) * o.batch_strides[d]);
            z /= p.batch_lens[d];
        }
        return off;
    };
    auto depth = [&](const gemm_operand& o, std::size_t k, dims& idx) {
        long long off = 0;
        idx.assign(o.k_lens.size(), 0);
        for (std::size_t d = o.k_lens.size(); d-- > 0;) {
            idx[d] = k % o.k_lens[d];
            k /= o.k_lens[d];
            off += static_cast<long long>(idx[d]) * o.k_strides[d];
        }
        return off;
    };
    dims taps;
    for (std::size_t z = 0; z < p.batch(); ++z)
        for (std::size_t m = 0; m < p.m; ++m)
            for (std::size_t n = 0; n < p.n; ++n) {
                double acc = 0;
                for (std::size_t k = 0; k < p.k; ++k) {
                    long long a_off = batch_offset(p.a, z) + depth(p.a, k, taps);
                    bool inside = true;
                    if (p.conv) {
                        const conv_geometry& g = *p.conv;
                        std::size_t rest = m;
                        for (std::size_t d = g.nd(); d-- > 0;) {
                            const long long o = static_cast<long long>(rest % g.output_spatial[d]);
                            rest /= g.output_spatial[d];
                            const long long start = o * static_cast<long long>(g.stride[d]) -
                                                    static_cast<long long>(g.pad_begin[d]);
                            const long long pos =
                                start + static_cast<long long>(taps[d] * g.dilation[d]);
                            inside = inside && pos >= 0 &&
                                     pos < static_cast<long long>(g.input_spatial[d]);
                            a_off += start * g.input_spatial_strides[d];
                        }
                        a_off += static_cast<long long>(rest) * g.image_stride;
                    } else {
                        a_off += static_cast<long long>(m) * p.a.row_stride;
                    }
                    const long long b_off = batch_offset(p.b, z) +
                                            static_cast<long long>(n) * p.b.row_stride +
                                            depth(p.b, k, taps);
                    if (inside) acc += a[std::size_t(a_off)] * b[std::size_t(b_off)];
                }
                // The epilogue's (b, m, n) and where the default epilogue stores it.
                dims index;
                if (p.family == gemm_family::dot) {
                    std::size_t rest = z;
                    index.assign(p.batch_lens.size(), 0);
                    for (std::size_t d = p.batch_lens.size(); d-- > 0;) {
                        index[d] = rest % p.batch_lens[d];
                        rest /= p.batch_lens[d];
                    }
                    index.push_back(m);
                    index.push_back(n);
                } else {
                    const conv_geometry& g = *p.conv;
                    std::size_t rest = m;
                    dims spatial(g.nd());
                    for (std::size_t d = g.nd(); d-- > 0;) {
                        spatial[d] = rest % g.output_spatial[d];
                        rest /= g.output_spatial[d];
                    }
                    const std::size_t channel = z * g.group_filters + n;
                    index = {rest};
                    if (!g.channels_last) index.push_back(channel);
                    index.insert(index.end(), spatial.begin(), spatial.end());
                    if (g.channels_last) index.push_back(channel);
                }
                result[out.index(index)] = acc;
            }
    return result;
}

std::vector<double> iota_values(std::size_t n, double scale) {
    std::vector<double> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = double((i * 7919) % 23) * scale - 0.25;
    return v;
}

void expect_emulation_matches_reference(const operation& op, const shape& a, const shape& b) {
    const shape out = op.compute_shape({a, b});
    SCOPED_TRACE(op.to_string() + " " + to_string(a) + " x " + to_string(b));
    const auto p = make_gemm_problem(op, {a, b}, out);
    ASSERT_TRUE(p.has_value());
    const auto av = iota_values(a.element_space(), 0.125),
               bv = iota_values(b.element_space(), 0.0625);
    auto as_argument = [](const shape& s, const std::vector<double>& v) {
        argument arg{shape{s.type(), {v.size()}}};
        std::copy(v.begin(), v.end(), arg.typed<double>());
        return arg.view(s);
    };
    const argument want = op.eval(out, {as_argument(a, av), as_argument(b, bv)}, {}, {});
    const auto got = emulate(*p, av, bv, out);
    const auto want_values = to_vector<double>(want);
    ASSERT_EQ(want_values.size(), out.elements());
    for (std::size_t e = 0; e < out.elements(); ++e)
        ASSERT_NEAR(got[out.index_of_element(e)], want_values[e], 1e-9) << "element " << e;
}

TEST(CudaGemmProblem, DescribesTheSameComputationAsTheReferenceOp) {
    const dtype t = dtype::f64;
    const operation dot = op::dot{};
    expect_emulation_matches_reference(dot, shape{t, {5, 7}}, shape{t, {7, 3}});
    expect_emulation_matches_reference(dot, shape{t, {2, 1, 4, 6}, {24, 24, 1, 4}},
                                       shape{t, {3, 6, 5}, {1, 3, 18}});
    expect_emulation_matches_reference(dot, shape{t, {4, 3}}, shape{t, {2, 3, 2}});
    auto conv = [&](op::convolution c, dims x, dims w) {
        expect_emulation_matches_reference(c, shape{t, x}, shape{t, w});
    };
    conv(conv_op(2, 1, 1, 1), {2, 5, 6, 3}, {4, 3, 3, 3});
    conv(conv_op(2, 2, 1, 2, 2), {1, 9, 8, 4}, {6, 3, 2, 2});
    conv(conv_op(1, 3, 2, 1), {2, 11, 2}, {3, 4, 2});
    conv(conv_op(3, 1, 1, 3), {1, 3, 4, 5, 3}, {3, 2, 3, 2, 1});
    op::convolution nchw = conv_op(2, 2, 2, 2, 2);
    nchw.channels_last = false;
    conv(nchw, {1, 4, 10, 9}, {6, 2, 3, 3});
    // A channels-last convolution whose input is an NCHW buffer seen through permuted strides.
    expect_emulation_matches_reference(conv_op(2, 1, 1, 1), shape{t, {1, 5, 6, 3}, {90, 6, 1, 30}},
                                       shape{t, {2, 3, 3, 3}});
    // Weights stored [R, S, C, K]: their filters are the contiguous axis.
    expect_emulation_matches_reference(conv_op(2, 1, 1, 1), shape{t, {1, 5, 6, 3}},
                                       shape{t, {4, 3, 3, 3}, {1, 36, 12, 4}});
}

TEST(CudaGemmConfig, EveryProblemHasAValidConfig) {
    const dtype types[] = {dtype::f32, dtype::f16, dtype::bf16, dtype::f64,    dtype::i8,
                           dtype::u8,  dtype::i32, dtype::i64,  dtype::boolean};
    const std::size_t sizes[] = {1, 3, 7, 16, 33};
    std::size_t problems = 0;
    for (dtype t : types)
        for (std::size_t m : sizes)
            for (std::size_t n : sizes)
                for (std::size_t k : {std::size_t(0), std::size_t(1), std::size_t(3),
                                      std::size_t(7), std::size_t(40)})
                    for (bool tb : {false, true}) {
                        const auto p = dot_problem(t, m, n, k, tb);
                        const auto cs = candidate_configs(p);
                        ASSERT_FALSE(cs.empty()) << to_string(p);
                        for (const auto& c : cs)
                            EXPECT_TRUE(valid(c, p)) << to_string(c) << " " << to_string(p);
                        ++problems;
                    }
    for (dtype t : types)
        for (std::size_t channels : {1, 3, 7, 8}) {
            const auto c =
                conv_problem(t, conv_op(2, 2, 1, 1), {1, 5, 5, channels}, {3, 3, 3, channels});
            EXPECT_FALSE(candidate_configs(c.problem).empty()) << to_string(c.problem);
            ++problems;
        }
    EXPECT_GT(problems, 2000u);
}

TEST(CudaGemmConfig, CandidatesAreRankedSensibly) {
    const auto big = dot_problem(dtype::f16, 4096, 4096, 4096);
    const auto cs = candidate_configs(big);
    EXPECT_GE(cs.size(), 20u);
    EXPECT_LE(cs.size(), 80u); // mma.sync and wgmma configs: exhaustive tuning stays short
    EXPECT_GE(cs.front().tile_m * cs.front().tile_n, 128u * 128u) << to_string(cs.front());
    EXPECT_EQ(cs.front().split_k, 1u);
    // A skinny problem with long K: one output tile row cannot fill 132 SMs without split-K or
    // small tiles.
    const auto skinny = dot_problem(dtype::f16, 64, 256, 8192);
    const auto s = candidate_configs(skinny).front();
    EXPECT_TRUE(s.split_k > 1 || s.tile_m * s.tile_n <= 64u * 64u) << to_string(s);
    bool any_split = false;
    for (const auto& c : candidate_configs(skinny))
        any_split = any_split || c.split_k > 1;
    EXPECT_TRUE(any_split);
    // f64 and integers only have SIMT configs.
    for (const auto& c : candidate_configs(dot_problem(dtype::f64, 256, 256, 256)))
        EXPECT_TRUE(c.simt) << to_string(c);
}

// K = 16 against N = 96 (EfficientNet's first expand convolution as a product): about 7
// multiply-adds per byte moved, memory-bound. The small mma.sync tiles measured best on such
// problems take every other place among the first six (what quick tuning times) and the first;
// the model's own best stay among them. A compute-bound problem keeps the model's order.
TEST(CudaGemmConfig, MemoryBoundProblemsRankSmallTilesFirst) {
    const auto expand = dot_problem(dtype::f16, 401408, 96, 16);
    const auto cs = candidate_configs(expand);
    ASSERT_GE(cs.size(), 6u);
    EXPECT_EQ(to_string(cs[0]), "128x64x32_w2x2_s3_k1");
    EXPECT_EQ(to_string(cs[2]), "64x64x32_w2x2_s3_k1");
    EXPECT_EQ(to_string(cs[4]), "64x32x32_w2x1_s2_k1");
    for (std::size_t i = 0; i < 6; i += 2)
        EXPECT_FALSE(cs[i + 1].simt || cs[i + 1] == cs[0] || cs[i + 1] == cs[2]) << i;
    // Each config appears once.
    for (std::size_t i = 0; i < cs.size(); ++i)
        for (std::size_t j = i + 1; j < cs.size(); ++j)
            EXPECT_FALSE(cs[i] == cs[j]) << to_string(cs[i]);
    // The same configs as without the reordering.
    const auto big = dot_problem(dtype::f16, 4096, 4096, 4096);
    EXPECT_NE(to_string(candidate_configs(big).front()), "128x64x32_w2x2_s3_k1");
    EXPECT_TRUE(candidate_configs(big).front().wgmma);
    // A memory-bound problem too small to fill the GPU with those tiles (ShuffleNet's 1x1
    // convolution at batch 1: 784 x 58 x 24, 7 x 1 tiles of 128x64) keeps the model's order; a
    // larger one of the same shape promotes only the tiles that fill a wave.
    const auto small = dot_problem(dtype::f16, 784, 58, 24);
    const auto sc = candidate_configs(small);
    ASSERT_FALSE(sc.empty());
    for (const char* t : {"128x64x32_w2x2_s3_k1", "64x64x32_w2x2_s3_k1", "64x32x32_w2x1_s2_k1"})
        EXPECT_NE(to_string(sc[0]), t);
    const auto medium = dot_problem(dtype::f16, 3136 * 4, 58, 24); // 98 x 1 tiles of 128x64
    const auto mc = candidate_configs(medium);
    ASSERT_FALSE(mc.empty());
    EXPECT_NE(to_string(mc[0]), "128x64x32_w2x2_s3_k1");
    EXPECT_EQ(to_string(mc[0]), "64x64x32_w2x2_s3_k1"); // 196 x 1 tiles
}

// Where the ping-pong form measured fastest on an H100 (2026-12-06, `gpu_gemm_kernel_test
// shapes`: K of 768 and 96), quick tuning (the first six) times it; where it measured 1.3x
// slower than the best (K = 3072), it ranks behind the ordinary tiles.
TEST(CudaGemmConfig, PingPongIsTimedWhereItMeasuredFastest) {
    auto rank_of_pp = [](std::size_t m, std::size_t n, std::size_t k) {
        const auto cs = candidate_configs(dot_problem(dtype::f16, m, n, k));
        for (std::size_t i = 0; i < cs.size(); ++i)
            if (cs[i].ping_pong) return i;
        return cs.size();
    };
    EXPECT_LT(rank_of_pp(4096, 3072, 768), 6u);
    EXPECT_LT(rank_of_pp(6304, 2304, 768), 6u);
    EXPECT_LT(rank_of_pp(100352, 384, 96), 6u);
    EXPECT_GE(rank_of_pp(4096, 768, 3072), 6u);
}

TEST(CudaGemmKernel, DefaultEpilogueStoresThroughTheOutputStrides) {
    const auto p =
        dot_problem(dtype::f16, shape{dtype::f16, {3, 4, 5}}, shape{dtype::f16, {3, 5, 6}});
    const shape out{dtype::f16, {3, 4, 6}, {1, 18, 3}}; // a permuted output
    const auto e = default_epilogue(p, out);
    ASSERT_EQ(e.parameters.size(), 1u);
    EXPECT_EQ(e.parameters[0], "cx_f16* __restrict__ cx_epi_out0");
    EXPECT_EQ(e.arguments, std::vector<std::string>{"cx_epi_out0"});
    EXPECT_CONTAINS(e.code, "cx_epilogue(float v, long long b, long long m, long long n");
    EXPECT_CONTAINS(e.code, "out0[cx_eb + cx_em * 18 + cx_en * 3] = ");
    // Neither n nor m is the output's fastest axis here: no staged walk would coalesce.
    EXPECT_EQ(e.walk, store_walk::direct);
    // A row-major output: n-major walk, 8 f16 per thread step, one 16-byte store.
    const auto rows = default_epilogue(p, shape{dtype::f16, {3, 4, 6}});
    EXPECT_EQ(rows.walk, store_walk::n_major);
    EXPECT_EQ(rows.lanes, 1u); // N = 6 is not a multiple of 8
    const auto p16 = dot_problem(dtype::f16, 16, 16, 16);
    const auto wide = default_epilogue(p16, shape{dtype::f16, {16, 16}});
    EXPECT_EQ(wide.lanes, 8u);
    EXPECT_CONTAINS(wide.code, "*reinterpret_cast<uint4*>(&out0[");
    const auto f64 = default_epilogue(dot_problem(dtype::f64, 4, 4, 4), shape{dtype::f64, {4, 4}});
    EXPECT_CONTAINS(f64.code, "cx_epilogue(double v");
    const auto i32 = default_epilogue(dot_problem(dtype::i32, 4, 4, 4), shape{dtype::i32, {4, 4}});
    EXPECT_CONTAINS(i32.code, "cx_epilogue(long long v");
    EXPECT_TRUE(applies_epilogue_in_kernel(*parse_perf_config("64x64x32_w2x2_s3_k1")));
    EXPECT_FALSE(applies_epilogue_in_kernel(*parse_perf_config("64x64x32_w2x2_s3_k2")));
}

// Compiles p's kernel for c (and the finish kernel for split-K) with NVRTC.
void expect_compiles(const gemm_problem& p, const shape& out, const perf_config& c) {
    SCOPED_TRACE(to_string(c) + " for " + to_string(p));
    const auto e = default_epilogue(p, out);
    const kernel_source k = generate_gemm_kernel(p, c, e, "cx_gemm_test");
    // A depthwise block holds what the layer needs of the config's threads (a tiled block's
    // rows and strips), never more.
    if (c.is_depthwise()) {
        const auto plan = make_depthwise_plan(c, p, {}, nullptr);
        ASSERT_TRUE(plan.has_value());
        EXPECT_EQ(k.launch.block[0], p.empty() ? c.threads() : plan->threads);
        EXPECT_LE(k.launch.block[0], c.threads());
    } else {
        EXPECT_EQ(k.launch.block[0], c.threads());
    }
    if (p.empty()) {
        EXPECT_TRUE(k.empty());
    } else {
        // The staged store reuses the pipeline's shared memory (a _ws kernel's comes after it:
        // its producers fill the pipeline meanwhile), and is dropped when it does not fit (the
        // default limits are an H200's).
        const std::size_t staged = staged_store_bytes(p, c, e.walk);
        const std::size_t pipeline = shared_bytes(c, p);
        // _pp: a staging buffer (16-byte aligned) for each of its two warpgroups.
        const std::size_t both = c.ping_pong          ? pipeline + 2 * ((staged + 15) / 16 * 16)
                                 : c.warp_specialised ? pipeline + staged
                                                      : std::max(pipeline, staged);
        EXPECT_EQ(k.launch.shared_bytes, both <= 227 * 1024 ? both : pipeline);
        EXPECT_FALSE(k.empty());
    }
    try {
        // ptxas serialises wgmma (a wait after each) where it cannot prove a warpgroup issues
        // them together, and says so in the log (the attention kernel's did until 2026-12-06).
        const compiled_kernel out = nvrtc_compile(k, "sm_90");
        EXPECT_EQ(out.log.find("serialized"), std::string::npos) << out.log;
        if (c.split_k > 1) {
            EXPECT_GT(split_k_workspace_bytes(p, c), 0u);
            nvrtc_compile(generate_split_k_finish_kernel(p, c, e, "cx_gemm_finish"), "sm_90");
        }
    } catch (const std::exception& ex) {
        ADD_FAILURE() << ex.what() << "\n" << k.code;
    }
}

TEST(CudaGemmKernel, CandidateConfigsCompileWithNvrtc) {
    struct named {
        gemm_problem p;
        shape out;
    };
    std::vector<named> problems;
    auto dot = [&](dtype t, std::size_t m, std::size_t n, std::size_t k, bool tb) {
        const auto p = dot_problem(t, m, n, k, tb);
        problems.push_back({p, shape{t, {m, n}}});
    };
    dot(dtype::f16, 512, 512, 512, false);
    dot(dtype::bf16, 96, 200, 72, true);
    dot(dtype::f32, 128, 128, 256, false);
    dot(dtype::f32, 33, 65, 20, true);
    {
        const shape a{dtype::f16, {4, 64, 64}}, b{dtype::f16, {64, 32}};
        problems.push_back({dot_problem(dtype::f16, a, b), shape{dtype::f16, {4, 64, 32}}});
    }
    auto conv = [&](dtype t, const op::convolution& c, dims x, dims w) {
        auto cc = conv_problem(t, c, x, w);
        problems.push_back({cc.problem, cc.y});
    };
    conv(dtype::f16, conv_op(2, 1, 1, 1), {2, 14, 14, 64}, {64, 3, 3, 64});
    conv(dtype::f16, conv_op(2, 1, 0, 1), {2, 14, 14, 64}, {128, 1, 1, 64});
    conv(dtype::bf16, conv_op(2, 2, 3, 1), {1, 32, 32, 3}, {16, 7, 7, 3});
    conv(dtype::f16, conv_op(2, 1, 1, 4), {1, 8, 8, 32}, {32, 3, 3, 8});
    conv(dtype::f32, conv_op(2, 1, 1, 16), {1, 8, 8, 16}, {16, 3, 3, 1}); // depthwise
    conv(dtype::f16, conv_op(1, 1, 1, 1), {2, 30, 16}, {24, 3, 16});
    conv(dtype::f16, conv_op(3, 1, 1, 1), {1, 4, 6, 6, 8}, {8, 3, 3, 3, 8});
    dot(dtype::f64, 40, 50, 60, false);
    dot(dtype::i8, 40, 48, 64, true);
    dot(dtype::i32, 17, 9, 5, false);
    dot(dtype::boolean, 8, 8, 8, false);

    // Every other candidate of the first problem; for the others the top one, the middle one
    // and the first split-K one: every config family is covered while NVRTC time stays well
    // under a minute.
    const auto start = std::chrono::steady_clock::now();
    std::size_t compiled = 0;
    for (std::size_t i = 0; i < problems.size(); ++i) {
        const auto cs = candidate_configs(problems[i].p);
        bool split_done = false;
        for (std::size_t j = 0; j < cs.size(); ++j) {
            const bool first_split = cs[j].split_k > 1 && !split_done;
            split_done = split_done || cs[j].split_k > 1;
            if (i == 0 ? j % 2 == 0 : j == 0 || j == cs.size() / 2 || first_split) {
                expect_compiles(problems[i].p, problems[i].out, cs[j]);
                ++compiled;
            }
        }
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("compiled %zu gemm kernels in %.1f s\n", compiled, seconds);
}

TEST(CudaGemmKernel, ExplicitVectorWidthsAndLayoutsCompile) {
    const auto p = dot_problem(dtype::f16, 256, 256, 256, true);
    for (const char* c : {"128x128x32_w2x2_s3_k1_v2", "128x128x32_w2x2_s3_k1_v1",
                          "64x64x64_w2x2_s4_k1_v4", "16x24x16_w1x1_s2_k1"})
        expect_compiles(p, shape{dtype::f16, {256, 256}}, *parse_perf_config(c));
    // A column-major A (m contiguous) and row-major B: both tiles mn-major.
    const auto cm =
        dot_problem(dtype::f32, shape{dtype::f32, {96, 64}, {1, 96}}, shape{dtype::f32, {64, 80}});
    EXPECT_EQ(cm.a.major, operand_major::mn);
    for (const char* c : {"64x64x16_w2x2_s3_k1", "32x32x16_w1x1_s2_k1_simt", "32x16x32_w2x1_s3_k2"})
        expect_compiles(cm, shape{dtype::f32, {96, 80}}, *parse_perf_config(c));
    // An empty problem and K = 0.
    expect_compiles(dot_problem(dtype::f16, 0, 8, 8), shape{dtype::f16, {0, 8}},
                    *parse_perf_config("32x32x32_w1x1_s2_k1"));
    expect_compiles(dot_problem(dtype::f16, 8, 8, 0), shape{dtype::f16, {8, 8}},
                    *parse_perf_config("32x32x32_w1x1_s2_k1"));
}

TEST(CudaGemmConfig, WgmmaConfigsParseAndStateTheirConstraints) {
    const auto c = parse_perf_config("128x256x64_w8x1_s4_k1_wgmma");
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(c->wgmma);
    EXPECT_EQ(to_string(*c), "128x256x64_w8x1_s4_k1_wgmma");
    EXPECT_EQ(c->threads(), 256u);
    EXPECT_FALSE(c->rounds_f32_to_tf32());
    EXPECT_FALSE(parse_perf_config("128x256x64_w8x1_s4_k1_simt_wgmma").has_value());
    EXPECT_FALSE(parse_perf_config("128x256x64_w8x1_s4_k1_wgmma_v8").has_value());

    const auto big = dot_problem(dtype::f16, 4096, 4096, 4096);
    EXPECT_TRUE(is_valid("128x256x64_w8x1_s4_k1_wgmma", big));
    EXPECT_TRUE(is_valid("128x256x64_w4x2_s3_k1_wgmma", big));
    gemm_device_limits ampere;
    ampere.wgmma = false;
    EXPECT_CONTAINS(why_not("128x128x64_w8x1_s4_k1_wgmma", big, ampere), "sm_90");
    EXPECT_CONTAINS(why_not("128x128x64_w8x1_s4_k1_wgmma", dot_problem(dtype::f32, 256, 256, 256)),
                    "f16 or bf16");
    EXPECT_CONTAINS(why_not("128x128x64_w2x4_s4_k1_wgmma", big), "warpgroups of 4");
    EXPECT_CONTAINS(why_not("96x128x64_w4x1_s4_k1_wgmma", big), "multiple of wgmma's 64");
    EXPECT_CONTAINS(why_not("64x512x64_w4x1_s3_k1_wgmma", big), "up to 256");
    EXPECT_CONTAINS(why_not("128x256x64_w4x1_s3_k1_wgmma", big), "accumulator registers");
    EXPECT_CONTAINS(why_not("64x8x64_w4x1_s4_k1_wgmma", big), "swizzle blocks"); // 16-byte rows
    EXPECT_CONTAINS(why_not("256x256x64_w16x1_s4_k1_wgmma", big), "shared memory");
    // An n-major B cut between warpgroups inside a 128-byte swizzle block.
    EXPECT_CONTAINS(why_not("64x64x64_w4x2_s4_k1_wgmma", big), "swizzle block");
    // Candidates: wgmma only where the device has it.
    bool any = false;
    for (const auto& cc : candidate_configs(big))
        any = any || cc.wgmma;
    EXPECT_TRUE(any);
    for (const auto& cc : candidate_configs(big, ampere))
        EXPECT_FALSE(cc.wgmma) << to_string(cc);
    EXPECT_TRUE(arch_has_wgmma("sm_90"));
    EXPECT_FALSE(arch_has_wgmma("sm_89"));
    EXPECT_FALSE(arch_has_wgmma("sm_100"));
}

TEST(CudaGemmConfig, WarpSpecialisedConfigsParseAndStateTheirConstraints) {
    const auto c = parse_perf_config("128x256x64_w8x1_s3_k1_wgmma_ws");
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(c->wgmma);
    EXPECT_TRUE(c->warp_specialised);
    EXPECT_EQ(to_string(*c), "128x256x64_w8x1_s3_k1_wgmma_ws");
    EXPECT_EQ(c->threads(), 384u); // the producer warpgroup besides the 8 multiplying warps
    EXPECT_FALSE(parse_perf_config("128x256x64_w8x1_s3_k1_ws").has_value());
    EXPECT_FALSE(parse_perf_config("128x256x64_w8x1_s3_k1_simt_ws").has_value());
    EXPECT_FALSE(parse_perf_config("128x256x64_w8x1_s3_k1_wgmma_ws_ws").has_value());
    EXPECT_NE(*c, *parse_perf_config("128x256x64_w8x1_s3_k1_wgmma"));

    const auto big = dot_problem(dtype::f16, 4096, 4096, 4096);
    EXPECT_TRUE(is_valid("128x256x64_w8x1_s3_k1_wgmma_ws", big));
    EXPECT_CONTAINS(why_not("128x128x64_w8x1_s4_k2_wgmma_ws", big), "split-K must be 1");
    EXPECT_CONTAINS(why_not("64x64x64_w32x1_s4_k1_wgmma_ws", big), "1024 threads");
    // Four stages of a 128x256 tile fit without staging, but not with the staging beside them.
    EXPECT_TRUE(is_valid("128x256x64_w8x1_s4_k1_wgmma_ws", big));
    const auto plan = gemm::make_kernel_plan(*c, big, {}, nullptr);
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->load_threads, 128u);
    EXPECT_EQ(plan->compute_threads, 256u);
    EXPECT_EQ(plan->grid, 132u); // one block per SM walks over the 512 tiles
    EXPECT_EQ(plan->blocks, 512u);
    EXPECT_EQ(plan->barrier_bytes, 48u);
    // The producers give registers to the two multiplying warpgroups, within the block's pool
    // of 384 x 168 (the launch bounds' share): 128 x 88 + 256 x 208.
    EXPECT_EQ(plan->producer_registers, 88u);
    EXPECT_EQ(plan->consumer_registers, 208u);
    EXPECT_LE(plan->load_threads * plan->producer_registers +
                  plan->compute_threads * plan->consumer_registers,
              384u * 168u);
    // One multiplying warpgroup keeps the launch bounds' registers.
    const auto one = gemm::make_kernel_plan(*parse_perf_config("64x256x64_w4x1_s4_k1_wgmma_ws"),
                                            big, {}, nullptr);
    ASSERT_TRUE(one.has_value());
    EXPECT_EQ(one->consumer_registers, 0u);
    // A grid smaller than the device: one block per tile.
    const auto small =
        gemm::make_kernel_plan(*c, dot_problem(dtype::f16, 256, 512, 64), {}, nullptr);
    ASSERT_TRUE(small.has_value());
    EXPECT_EQ(small->grid, 4u);
    // In the tuning space, ranked behind the same tile in the ordinary form until measured.
    const auto cs = candidate_configs(big);
    const auto at = [&](const char* text) {
        return std::find(cs.begin(), cs.end(), *parse_perf_config(text)) - cs.begin();
    };
    EXPECT_LT(at("128x256x64_w8x1_s3_k1_wgmma_ws"), std::ptrdiff_t(cs.size()));
    EXPECT_LT(at("128x256x64_w8x1_s3_k1_wgmma"), at("128x256x64_w8x1_s3_k1_wgmma_ws"));
    // Four stages leave no room for the staged store beside the ring: stored from registers,
    // measured slower than three (RESULTS.md, 2026-12-06g).
    EXPECT_LT(at("128x256x64_w8x1_s3_k1_wgmma_ws"), at("128x256x64_w8x1_s4_k1_wgmma_ws"));
    EXPECT_LT(at("128x192x64_w8x1_s4_k1_wgmma_ws"), at("128x256x64_w8x1_s4_k1_wgmma_ws"));
}

TEST(CudaGemmKernel, WarpSpecialisedKernelsCompileForSm90a) {
    // Both majors of B, odd sizes (partial tiles, a K tail), a batched product, K = 0, an
    // implicit-GEMM convolution with padding and a grouped one; direct and staged stores.
    const auto rm = dot_problem(dtype::f16, 300, 200, 136);        // B n-major
    const auto tb = dot_problem(dtype::bf16, 256, 192, 100, true); // B k-major
    for (const char* c : {"128x256x64_w8x1_s3_k1_wgmma_ws", "256x128x64_w8x1_s4_k1_wgmma_ws",
                          "128x128x64_w8x1_s4_k1_wgmma_ws", "64x256x64_w4x1_s4_k1_wgmma_ws"}) {
        expect_compiles(rm, shape{dtype::f16, {300, 200}}, *parse_perf_config(c));
        expect_compiles(tb, shape{dtype::bf16, {256, 192}}, *parse_perf_config(c));
    }
    expect_compiles(dot_problem(dtype::f16, 64, 64, 0), shape{dtype::f16, {64, 64}},
                    *parse_perf_config("128x128x64_w8x1_s3_k1_wgmma_ws"));
    auto conv = conv_problem(dtype::f16, conv_op(2, 2, 1, 1), {2, 15, 15, 64}, {128, 3, 3, 64});
    expect_compiles(conv.problem, conv.y, *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_ws"));
    auto grouped = conv_problem(dtype::f16, conv_op(2, 1, 1, 2), {1, 8, 8, 64}, {64, 3, 3, 32});
    expect_compiles(grouped.problem, grouped.y,
                    *parse_perf_config("64x256x64_w4x1_s4_k1_wgmma_ws"));
    const auto k = generate_gemm_kernel(rm, *parse_perf_config("128x256x64_w8x1_s3_k1_wgmma_ws"),
                                        default_epilogue(rm, shape{dtype::f16, {300, 200}}), "k");
    EXPECT_TRUE(k.arch_specific);
    EXPECT_EQ(k.launch.block[0], 384u);
    EXPECT_EQ(k.launch.grid[0], 3u); // 3 x 1 tiles of 128 x 256
    EXPECT_CONTAINS(k.code, "cx_ws_produce_tile<3, true>");
    EXPECT_CONTAINS(k.code, "cx_ws_claim_registers<208>");
    EXPECT_CONTAINS(k.code, "cx_ws_release_registers<88>");
}

TEST(CudaGemmConfig, PingPongConfigsParseAndStateTheirConstraints) {
    const auto c = parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp");
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(c->warp_specialised);
    EXPECT_TRUE(c->ping_pong);
    EXPECT_EQ(to_string(*c), "128x128x64_w8x1_s4_k1_wgmma_pp");
    EXPECT_EQ(c->threads(), 384u);
    EXPECT_FALSE(parse_perf_config("128x128x64_w8x1_s4_k1_pp").has_value());
    EXPECT_FALSE(parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_ws_pp").has_value());
    EXPECT_NE(*c, *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_ws"));

    const auto big = dot_problem(dtype::f16, 4096, 3072, 768);
    EXPECT_TRUE(is_valid("128x128x64_w8x1_s4_k1_wgmma_pp", big));
    // Each warpgroup holds a whole tile: 128x128 is 128 accumulators a thread, 128x256 twice.
    EXPECT_CONTAINS(why_not("128x256x64_w8x1_s3_k1_wgmma_pp", big),
                    "more than 128 accumulator registers");
    EXPECT_CONTAINS(why_not("128x128x64_w4x1_s4_k1_wgmma_pp", big), "two multiplying warpgroups");
    EXPECT_CONTAINS(why_not("128x128x64_w4x2_s4_k1_wgmma_pp", big), "two multiplying warpgroups");
    const auto plan = gemm::make_kernel_plan(*c, big, {}, nullptr);
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->groups_m, 1u);
    EXPECT_EQ(plan->group_tile_m, 128u);
    EXPECT_EQ(plan->group_tile_n, 128u);
    EXPECT_EQ(plan->frag_m, 2u);
    EXPECT_EQ(plan->grid, 132u);
    EXPECT_EQ(plan->consumer_registers, 208u);
    // Candidates: the two forms timed on a GPU, every one of them valid, each behind its TMA
    // form where TMA can copy the operands (it measured faster on every such shape).
    std::vector<std::string> pp;
    for (const auto& cand : candidate_configs(big))
        if (cand.ping_pong) pp.push_back(to_string(cand));
    EXPECT_EQ(pp, (std::vector<std::string>{
                      "128x128x64_w8x1_s4_k1_wgmma_pp_tma", "128x128x64_w8x1_s4_k1_wgmma_pp",
                      "64x256x64_w8x1_s4_k1_wgmma_pp_tma", "64x256x64_w8x1_s4_k1_wgmma_pp"}));
}

TEST(CudaGemmKernel, PingPongKernelsCompileForSm90a) {
    // The warpgroups alternate tiles: each reads its own tiles' stages of the ring (4 reading
    // warps a stage), takes turns through named barriers, and stages its store in its own
    // buffer. Odd sizes, both majors of B, a convolution, K = 0, direct and staged stores.
    const auto rm = dot_problem(dtype::f16, 300, 200, 136);
    const auto tb = dot_problem(dtype::bf16, 256, 192, 100, true);
    for (const char* c : {"128x128x64_w8x1_s4_k1_wgmma_pp", "64x256x64_w8x1_s4_k1_wgmma_pp",
                          "64x128x64_w8x1_s6_k1_wgmma_pp"}) {
        expect_compiles(rm, shape{dtype::f16, {300, 200}}, *parse_perf_config(c));
        expect_compiles(tb, shape{dtype::bf16, {256, 192}}, *parse_perf_config(c));
    }
    expect_compiles(dot_problem(dtype::f16, 64, 64, 0), shape{dtype::f16, {64, 64}},
                    *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp"));
    // One K-tile (a rolled loop of one), and a transposed output: each warpgroup stages its
    // tile in its own buffer.
    expect_compiles(dot_problem(dtype::f16, 64, 64, 64), shape{dtype::f16, {64, 64}},
                    *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp"));
    expect_compiles(rm, shape{dtype::f16, {300, 200}, {1, 300}},
                    *parse_perf_config("128x128x64_w8x1_s3_k1_wgmma_pp"));
    auto conv = conv_problem(dtype::f16, conv_op(2, 2, 1, 1), {2, 15, 15, 64}, {128, 3, 3, 64});
    expect_compiles(conv.problem, conv.y, *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp"));
    const auto k = generate_gemm_kernel(rm, *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp"),
                                        default_epilogue(rm, shape{dtype::f16, {300, 200}}), "k");
    EXPECT_EQ(k.launch.block[0], 384u);
    EXPECT_EQ(k.launch.grid[0], 6u); // 3 x 2 tiles of 128 x 128
    EXPECT_CONTAINS(k.code, "cx_ws_init<4, 128, 4>");
    EXPECT_CONTAINS(k.code, "cx_pp_wait_turn(cx_wg, cx_q);");
    EXPECT_CONTAINS(k.code, "cx_ws_consume_tile<4, true>");
    EXPECT_CONTAINS(k.code, "cx_it = cx_q * 3;");
}

TEST(CudaGemmConfig, TmaConfigsParseAndStateTheirConstraints) {
    const auto c = parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp_tma");
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(c->tma && c->ping_pong && c->warp_specialised);
    EXPECT_EQ(to_string(*c), "128x128x64_w8x1_s4_k1_wgmma_pp_tma");
    EXPECT_EQ(to_string(*parse_perf_config("128x256x64_w8x1_s3_k1_wgmma_ws_tma")),
              "128x256x64_w8x1_s3_k1_wgmma_ws_tma");
    EXPECT_FALSE(parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_tma").has_value());
    EXPECT_FALSE(parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_tma_pp").has_value());
    EXPECT_NE(*c, *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp"));

    const auto big = dot_problem(dtype::f16, 4096, 3072, 768);
    EXPECT_TRUE(is_valid("128x128x64_w8x1_s4_k1_wgmma_pp_tma", big));
    EXPECT_TRUE(is_valid("128x256x64_w8x1_s4_k1_wgmma_ws_tma", big));
    // Reasons: a gathered convolution input, a row stride TMA cannot step (K = 100 f16 rows are
    // 200 bytes), a view starting 8 bytes into its buffer.
    auto conv = conv_problem(dtype::f16, conv_op(2, 1, 1, 1), {2, 15, 15, 64}, {128, 3, 3, 64});
    EXPECT_CONTAINS(why_not("128x128x64_w8x1_s4_k1_wgmma_pp_tma", conv.problem), "im2col");
    // A 1x1 convolution with stride 1 is a matrix product of its pixels; with stride 2 it
    // gathers.
    auto pointwise =
        conv_problem(dtype::f16, conv_op(2, 1, 0, 1), {2, 14, 14, 64}, {128, 1, 1, 64});
    EXPECT_TRUE(is_valid("128x128x64_w8x1_s4_k1_wgmma_pp_tma", pointwise.problem));
    auto strided = conv_problem(dtype::f16, conv_op(2, 2, 0, 1), {2, 14, 14, 64}, {128, 1, 1, 64});
    EXPECT_CONTAINS(why_not("128x128x64_w8x1_s4_k1_wgmma_pp_tma", strided.problem),
                    "strided or padded");
    EXPECT_CONTAINS(
        why_not("128x128x64_w8x1_s4_k1_wgmma_pp_tma", dot_problem(dtype::f16, 256, 256, 100)),
        "not a positive multiple of 16 bytes");
    const auto offset = dot_problem(dtype::f16, shape{dtype::f16, {256, 128}},
                                    shape{dtype::f16, {128, 256}}, {4, 0});
    EXPECT_CONTAINS(why_not("128x128x64_w8x1_s4_k1_wgmma_pp_tma", offset), "TMA needs 16");
    // The maps: A k-major (K contiguous, rows of 768), B n-major (N contiguous, K rows),
    // 128-byte swizzle boxes of 64 elements; B's 128-wide tile is two boxes a stage.
    const auto k =
        generate_gemm_kernel(big, *c, default_epilogue(big, shape{dtype::f16, {4096, 3072}}), "k");
    ASSERT_EQ(k.tensor_maps.size(), 2u);
    const tensor_map_spec& a = k.tensor_maps[0];
    const tensor_map_spec& b = k.tensor_maps[1];
    EXPECT_EQ(a.argument, 0u);
    EXPECT_EQ(a.rank, 2u);
    EXPECT_EQ(a.dims[0], 768u);
    EXPECT_EQ(a.dims[1], 4096u);
    EXPECT_EQ(a.strides[0], 768u * 2);
    EXPECT_EQ(a.box[0], 64u);
    EXPECT_EQ(a.box[1], 128u);
    EXPECT_EQ(b.argument, 1u);
    EXPECT_EQ(b.dims[0], 3072u);
    EXPECT_EQ(b.dims[1], 768u);
    EXPECT_EQ(b.strides[0], 3072u * 2);
    EXPECT_EQ(b.box[0], 64u);
    EXPECT_EQ(b.box[1], 64u);
    EXPECT_EQ(b.swizzle_bytes, 128u);
    // Candidates: the TMA forms where valid, ahead of their cp.async twins; none for a
    // convolution.
    const auto cs = candidate_configs(big);
    const auto at = [&](const char* text) {
        return std::find(cs.begin(), cs.end(), *parse_perf_config(text)) - cs.begin();
    };
    EXPECT_LT(at("128x192x64_w8x1_s4_k1_wgmma_ws_tma"), at("128x192x64_w8x1_s4_k1_wgmma_ws"));
    EXPECT_LT(at("128x256x64_w8x1_s3_k1_wgmma_ws_tma"), std::ptrdiff_t(cs.size()));
    for (const auto& cand : candidate_configs(conv.problem))
        EXPECT_FALSE(cand.tma) << to_string(cand);
    EXPECT_CONTAINS(k.code, "cx_ws_init<4, 1, 4>");
    EXPECT_CONTAINS(k.code, "cx_ws_produce_tile_tma<4, 32768u>");
    EXPECT_CONTAINS(k.code, "const __grid_constant__ cx_tensor_map cx_tmap_b");
    // A batched product whose B broadcasts: A's map has the batch axis, B's does not.
    const auto batched =
        dot_problem(dtype::bf16, shape{dtype::bf16, {3, 200, 64}}, shape{dtype::bf16, {64, 96}});
    const auto kb =
        generate_gemm_kernel(batched, *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp_tma"),
                             default_epilogue(batched, shape{dtype::bf16, {3, 200, 96}}), "kb");
    ASSERT_EQ(kb.tensor_maps.size(), 2u);
    EXPECT_EQ(kb.tensor_maps[0].rank, 3u);
    EXPECT_EQ(kb.tensor_maps[0].strides[1], 200u * 64 * 2);
    EXPECT_TRUE(kb.tensor_maps[0].bfloat16);
    EXPECT_EQ(kb.tensor_maps[1].rank, 2u);
}

TEST(CudaGemmKernel, TmaKernelsCompileForSm90a) {
    // Both majors of both operands, partial tiles and a K tail (the boxes read zeros past the
    // ends), a batched product, K = 0, both forms, staged and direct stores.
    const auto rm = dot_problem(dtype::f16, 300, 200, 136);
    const auto tb = dot_problem(dtype::bf16, 256, 192, 104, true);
    const auto cm = dot_problem(dtype::f16, shape{dtype::f16, {128, 64}, {1, 128}},
                                shape{dtype::f16, {64, 96}});
    for (const char* c :
         {"128x128x64_w8x1_s4_k1_wgmma_pp_tma", "64x256x64_w8x1_s4_k1_wgmma_pp_tma",
          "128x256x64_w8x1_s3_k1_wgmma_ws_tma", "128x128x32_w8x1_s4_k1_wgmma_ws_tma"}) {
        expect_compiles(rm, shape{dtype::f16, {300, 200}}, *parse_perf_config(c));
        expect_compiles(tb, shape{dtype::bf16, {256, 192}}, *parse_perf_config(c));
        expect_compiles(cm, shape{dtype::f16, {128, 96}}, *parse_perf_config(c));
    }
    expect_compiles(rm, shape{dtype::f16, {300, 200}, {1, 300}},
                    *parse_perf_config("128x128x64_w8x1_s3_k1_wgmma_pp_tma"));
    // K = 0: operands without memory, which no map can describe.
    EXPECT_CONTAINS(
        why_not("128x128x64_w8x1_s4_k1_wgmma_pp_tma", dot_problem(dtype::f16, 64, 64, 0)),
        "nothing for TMA to copy");
    const auto batched = dot_problem(dtype::f16, shape{dtype::f16, {2, 3, 80, 64}},
                                     shape{dtype::f16, {2, 3, 64, 48}});
    expect_compiles(batched, shape{dtype::f16, {2, 3, 80, 48}},
                    *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_ws_tma"));
    auto pointwise = conv_problem(dtype::bf16, conv_op(2, 1, 0, 1), {3, 7, 9, 96}, {80, 1, 1, 96});
    expect_compiles(pointwise.problem, pointwise.y,
                    *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp_tma"));
    const auto k = generate_gemm_kernel(pointwise.problem,
                                        *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma_pp_tma"),
                                        default_epilogue(pointwise.problem, pointwise.y), "k");
    ASSERT_EQ(k.tensor_maps.size(), 2u);
    EXPECT_EQ(k.tensor_maps[0].dims[0], 96u);        // channels
    EXPECT_EQ(k.tensor_maps[0].dims[1], 3u * 7 * 9); // pixels
    EXPECT_EQ(k.tensor_maps[1].dims[1], 80u);        // filters
}

TEST(CudaGemmKernel, WgmmaKernelsCompileForSm90a) {
    // Both majors of both operands, each swizzle width (64-, 32- and 16-column n-major B tiles
    // are 128-, 64- and 32-byte rows), warpgroups along N, split-K and convolutions.
    const auto rm = dot_problem(dtype::f16, 300, 200, 136);        // B n-major
    const auto tb = dot_problem(dtype::bf16, 256, 192, 100, true); // B k-major
    const auto cm = dot_problem(dtype::f16, shape{dtype::f16, {128, 64}, {1, 128}},
                                shape{dtype::f16, {64, 96}}); // A m-major
    EXPECT_EQ(cm.a.major, operand_major::mn);
    for (const char* c :
         {"128x256x64_w8x1_s4_k1_wgmma", "128x128x64_w4x2_s3_k1_wgmma", "64x32x64_w4x1_s6_k1_wgmma",
          "64x16x32_w4x1_s6_k1_wgmma", "128x128x64_w8x1_s4_k2_wgmma"})
        expect_compiles(rm, shape{dtype::f16, {300, 200}}, *parse_perf_config(c));
    for (const char* c : {"256x128x64_w8x1_s3_k1_wgmma", "64x64x64_w4x1_s4_k1_wgmma"})
        expect_compiles(tb, shape{dtype::bf16, {256, 192}}, *parse_perf_config(c));
    expect_compiles(cm, shape{dtype::f16, {128, 96}},
                    *parse_perf_config("128x64x64_w8x1_s4_k1_wgmma"));
    auto conv = conv_problem(dtype::f16, conv_op(2, 2, 1, 1), {2, 15, 15, 64}, {128, 3, 3, 64});
    expect_compiles(conv.problem, conv.y, *parse_perf_config("128x128x64_w8x1_s4_k1_wgmma"));
    auto grouped = conv_problem(dtype::f16, conv_op(2, 1, 1, 2), {1, 8, 8, 64}, {64, 3, 3, 32});
    expect_compiles(grouped.problem, grouped.y, *parse_perf_config("64x32x32_w4x1_s4_k1_wgmma"));
    // The instruction is in the code and the kernel asks for the architecture-specific target.
    const auto k = generate_gemm_kernel(rm, *parse_perf_config("128x256x64_w8x1_s4_k1_wgmma"),
                                        default_epilogue(rm, shape{dtype::f16, {300, 200}}), "k");
    EXPECT_TRUE(k.arch_specific);
    EXPECT_EQ(target_arch(k, "sm_90"), "sm_90a");
    EXPECT_CONTAINS(k.code, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16");
}

TEST(CudaGemmKernel, InvalidConfigIsAnInternalError) {
    const auto p = dot_problem(dtype::f64, 8, 8, 8);
    EXPECT_THROW(generate_gemm_kernel(p, *parse_perf_config("32x32x32_w1x1_s2_k1"),
                                      default_epilogue(p, shape{dtype::f64, {8, 8}}), "k"),
                 internal_error);
}

} // namespace cuda_gemm_codegen_test
} // namespace conflux::cuda
