// The attention op's CUDA kernel on the CPU: what it takes (and why not), and NVRTC compiles for
// sm_90 over head dims, sequence lengths, layouts, dtypes and biases. tests/gpu/op_test.cpp runs
// the same kernels on a GPU against the reference target.
#include "conflux/cuda/target.hpp"
#include "conflux/ops/attention.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "cuda/codegen/attention_kernel.hpp"
#include "cuda/codegen/generator.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

namespace conflux::cuda {
namespace cuda_attention_kernel_test {

// q [.., sq, d], kt [.., d, sk] as a transposed view of keys stored [.., sk, d], v [.., sk, dv].
std::vector<shape> operands(dtype t, dims batch, std::size_t sq, std::size_t sk, std::size_t d,
                            std::size_t dv, bool bias, dtype bias_type = dtype::f32) {
    auto with = [&](std::size_t a, std::size_t b) {
        dims l = batch;
        l.push_back(a);
        l.push_back(b);
        return l;
    };
    const shape keys{t, with(sk, d)};
    dims kt_strides = keys.strides();
    std::swap(kt_strides[kt_strides.size() - 1], kt_strides[kt_strides.size() - 2]);
    std::vector<shape> in{shape{t, with(sq, d)}, shape{t, with(d, sk), kt_strides},
                          shape{t, with(sk, dv)}};
    if (bias) in.push_back(shape{bias_type, with(sq, sk)});
    return in;
}

// For a target with wgmma (sm_90) unless told otherwise.
kernel_source generate(const std::vector<shape>& in, bool zero_nan = false,
                       const std::string& config = "", bool wgmma = true) {
    const operation op = op::attention{0.125f, zero_nan};
    const shape out = op.compute_shape(in);
    return generate_kernel({&op, in, {out}, {}, "cx_attention_test", config, wgmma});
}

std::size_t rows_of(const shape& q) {
    return q.lens()[q.rank() - 2];
}
std::size_t cols_of(const shape& q) {
    return q.lens()[q.rank() - 1];
}
std::size_t batches_of(const shape& q) {
    std::size_t n = 1;
    for (std::size_t i = 0; i + 2 < q.rank(); ++i)
        n *= q.lens()[i];
    return n;
}

TEST(CudaAttentionKernel, SaysWhatItCannotTake) {
    EXPECT_NE(attention_kernel_obstacle(operands(dtype::f32, {1, 2}, 8, 8, 64, 64, false))
                  .find("f16 or bf16"),
              std::string::npos);
    EXPECT_NE(attention_kernel_obstacle(operands(dtype::f16, {1, 2}, 8, 8, 256, 64, false))
                  .find("head dims"),
              std::string::npos);
    EXPECT_EQ(attention_kernel_obstacle(operands(dtype::f16, {1, 2}, 8, 8, 128, 128, true)), "");
    EXPECT_THROW(generate(operands(dtype::f32, {1, 2}, 8, 8, 64, 64, false)), user_error);
}

TEST(CudaAttentionKernel, CompilesWithNvrtcAcrossShapes) {
    const std::vector<std::vector<shape>> cases{
        operands(dtype::f16, {2, 12}, 197, 197, 64, 64, false),       // ViT-B/16
        operands(dtype::f16, {1, 6}, 1500, 1500, 64, 64, false),      // Whisper's encoder
        operands(dtype::f16, {1, 4}, 100, 77, 128, 128, true),        // head dim 128, a mask
        operands(dtype::bf16, {2, 3}, 33, 45, 72, 40, true),          // dims not multiples of 16
        operands(dtype::f16, {1, 2}, 8, 8, 32, 32, true, dtype::f16), // an f16 bias
        operands(dtype::bf16, {3}, 64, 64, 16, 16, false),            // one batch axis
    };
    for (const auto& in : cases) {
        SCOPED_TRACE(to_string(in[0]) + " x " + to_string(in[1]));
        for (bool zero_nan : {false, true}) {
            const kernel_source k = generate(in, zero_nan);
            const attention_config c =
                choose_attention_config(batches_of(in[0]), rows_of(in[0]), cols_of(in[1]),
                                        cols_of(in[0]), cols_of(in[2]), true);
            EXPECT_EQ(k.launch.block[0], unsigned(c.warps) * 32u);
            EXPECT_GT(k.launch.shared_bytes, 0u);
            try {
                nvrtc_compile(k, "sm_90");
            } catch (const std::exception& e) {
                ADD_FAILURE() << e.what() << "\n" << k.code;
                return;
            }
        }
    }
}

TEST(CudaAttentionKernel, HeuristicPicksARunnableConfigAndNoPaddingBlocksForFewQueries) {
    for (std::size_t d = 1; d <= 128; d += 7)
        for (std::size_t dv : {std::size_t(1), std::size_t(40), std::size_t(128), d})
            for (std::size_t sq : {1, 64, 65, 197, 1500, 4096})
                for (std::size_t batches : {1, 12, 384})
                    for (bool wgmma : {false, true}) {
                        const attention_config c =
                            choose_attention_config(batches, sq, 77, d, dv, wgmma);
                        EXPECT_EQ(attention_config_obstacle(c, d, dv, wgmma), "")
                            << c.name() << " for d " << d << " dv " << dv;
                        if (sq <= 64) {
                            EXPECT_LE(std::size_t(c.rows()), std::size_t(64)) << c.name();
                        }
                    }
    // The launch covers every query row with the chosen config's blocks.
    const auto in = operands(dtype::f16, {2, 12}, 197, 197, 64, 64, false);
    const kernel_source k = generate(in, false);
    const attention_config c = choose_attention_config(24, 197, 197, 64, 64, true);
    EXPECT_EQ(k.launch.grid[1], unsigned((197 + c.rows() - 1) / c.rows()));
    EXPECT_NE(k.code.find("// attention config " + c.name()), std::string::npos);
}

// The heuristic's picks are the configs measured fastest (bench/results/
// 2026-12-06d_attention_configs_h100.json): wgmma where it runs; for launches of few blocks
// (batch-1 transformers) 64-row blocks with 128-key tiles.
TEST(CudaAttentionKernel, HeuristicTakesTheMeasuredFastestConfigs) {
    auto pick = [](std::size_t batches, std::size_t sq, std::size_t d, bool wgmma) {
        return choose_attention_config(batches, sq, sq, d, d, wgmma).name();
    };
    EXPECT_EQ(pick(384, 197, 64, false), "w4_m2_n64"); // ViT-B/16 at batch 32
    EXPECT_EQ(pick(384, 197, 64, true), "w8_m1_n64_wgmma");
    EXPECT_EQ(pick(192, 197, 128, true), "w8_m1_n64_wgmma");
    EXPECT_EQ(pick(32, 4096, 128, false), "w8_m2_n64");
    EXPECT_EQ(pick(32, 4096, 64, true), "w8_m1_n64_wgmma");
    // Head dims wgmma does not take run on mma.sync.
    EXPECT_EQ(pick(384, 197, 72, true), "w4_m2_n64");
    // BERT at batch 1: 12 heads of 128 queries would be 12 blocks of 128 rows.
    EXPECT_EQ(pick(12, 128, 64, false), "w4_m1_n128");
    EXPECT_EQ(pick(12, 128, 64, true), "w4_m1_n128_wgmma");
    // Whisper's encoder at batch 1: 6 heads of 1,500 queries would be 72 blocks of 128 rows;
    // 144 of 64 rows instead.
    EXPECT_EQ(pick(6, 1500, 64, true), "w4_m1_n128_wgmma");
    EXPECT_EQ(pick(6, 1500, 64, false), "w4_m1_n128");
}

// wgmma configs run head dims 64 and 128 on Hopper only; elsewhere a forced one leaves the
// heuristic's config in place and says why. The kernel is compiled for sm_90a.
TEST(CudaAttentionKernel, WgmmaConfigsSayWhereTheyCannotRun) {
    const attention_config c{8, 1, 64, true};
    EXPECT_EQ(c.name(), "w8_m1_n64_wgmma");
    EXPECT_EQ(parse_attention_config("w8_m1_n64_wgmma"), c);
    EXPECT_EQ(attention_config_obstacle(c, 64, 64), "");
    EXPECT_EQ(attention_config_obstacle(c, 128, 64), "");
    EXPECT_NE(attention_config_obstacle(c, 72, 72).find("wgmma configs take 64 or 128"),
              std::string::npos);
    EXPECT_NE(attention_config_obstacle(c, 64, 64, false).find("sm_90"), std::string::npos);
    const auto in = operands(dtype::f16, {2, 3}, 100, 90, 64, 64, true);
    const kernel_source on_hopper = generate(in, false, c.name());
    EXPECT_TRUE(on_hopper.arch_specific);
    EXPECT_NE(on_hopper.code.find("cx_attention_wgmma<"), std::string::npos);
    const kernel_source elsewhere = generate(in, false, c.name(), false);
    EXPECT_FALSE(elsewhere.arch_specific);
    EXPECT_NE(elsewhere.code.find("cannot run here (wgmma needs sm_90"), std::string::npos);
}

TEST(CudaAttentionKernel, ConfigNamesRoundTripAndBadOnesAreUserErrors) {
    const auto all = attention_configs();
    ASSERT_FALSE(all.empty());
    for (const attention_config& c : all) {
        const auto parsed = parse_attention_config(c.name());
        ASSERT_TRUE(parsed.has_value()) << c.name();
        EXPECT_EQ(*parsed, c);
        EXPECT_EQ(c.rows(), c.warps * 16 * c.row_tiles);
    }
    EXPECT_FALSE(parse_attention_config("w3_m1_n64").has_value());
    EXPECT_FALSE(parse_attention_config("128x128x32_w2x2_s3_k1").has_value());
    EXPECT_THROW(generate(operands(dtype::f16, {1, 2}, 40, 40, 64, 64, false), false, "w4"),
                 user_error);
    // Two row tiles of 128 keys with d64: 128 score, 64 accumulator and 32 q registers.
    const std::string why = attention_config_obstacle({4, 2, 128}, 64, 64);
    EXPECT_NE(why.find("spill"), std::string::npos) << why;
    EXPECT_EQ(attention_config_obstacle({4, 1, 64}, 64, 64), "");
    const std::string big = attention_config_obstacle({8, 2, 128}, 128, 128);
    EXPECT_NE(big.find("shared memory"), std::string::npos) << big;
}

// Two warpgroups with 64-key tiles at head dim 128 take 130 registers a thread unbounded: one
// block per SM where shared memory holds two. They ask ptxas for two (it fits them in 128
// registers without spilling: nvcc -v); the pipelined loop, which spills there, and configs that
// shared memory keeps to one block per SM do not ask.
TEST(CudaAttentionKernel, TwoWarpgroupTilesOfHeadDim128AskForTwoBlocksPerSm) {
    const auto in = operands(dtype::f16, {2, 8}, 4096, 4096, 128, 128, false);
    EXPECT_NE(generate(in, false, "w8_m1_n64_wgmma").code.find("__launch_bounds__(256, 2)"),
              std::string::npos);
    for (const char* c : {"w8_m1_n64_wgmma_pipe", "w8_m1_n128_wgmma", "w4_m1_n64_wgmma"}) {
        SCOPED_TRACE(c);
        const std::string code = generate(in, false, c).code;
        EXPECT_EQ(code.find("__launch_bounds__(256, "), std::string::npos);
        EXPECT_EQ(code.find("__launch_bounds__(128, "), std::string::npos);
    }
}

// Every config the kernel has, forced, compiles with NVRTC for sm_90 on the shapes it can run
// (and launches its own block); a config that cannot run a shape leaves the heuristic's in
// place and says so in the source. The GPU op tests run the same configs against the reference.
TEST(CudaAttentionKernel, EveryConfigCompilesOrSaysWhyNot) {
    const std::vector<std::vector<shape>> cases{
        operands(dtype::f16, {2, 12}, 197, 197, 64, 64, false),
        operands(dtype::bf16, {1, 4}, 600, 700, 128, 128, true),
        operands(dtype::f16, {2, 3}, 33, 45, 72, 40, true),
    };
    std::size_t compiled = 0;
    for (const auto& in : cases)
        for (const attention_config& c : attention_configs()) {
            SCOPED_TRACE(to_string(in[0]) + " " + c.name());
            const kernel_source k = generate(in, false, c.name());
            const std::string why = attention_config_obstacle(c, cols_of(in[0]), cols_of(in[2]));
            if (!why.empty()) {
                EXPECT_NE(k.code.find("cannot run here (" + why + ")"), std::string::npos);
                continue;
            }
            EXPECT_NE(k.code.find("// attention config " + c.name()), std::string::npos);
            EXPECT_EQ(k.launch.block[0], unsigned(c.warps) * 32u);
            EXPECT_EQ(k.launch.grid[1], unsigned((rows_of(in[0]) + c.rows() - 1) / c.rows()));
            try {
                const compiled_kernel out = nvrtc_compile(k, "sm_90");
                ++compiled;
                // ptxas serialises a warpgroup's wgmma (a wait after each) where it cannot
                // prove the warpgroup issues them together; it says so in the log. That cost
                // the _wgmma configs a third of their speed before 2026-12-06d.
                EXPECT_EQ(out.log.find("serialized"), std::string::npos) << out.log;
            } catch (const std::exception& e) {
                ADD_FAILURE() << e.what();
            }
        }
    EXPECT_GE(compiled, 2 * cases.size());
}

// Compile options for sm_90 that need no GPU and touch no cache.
compile_options compile_only_for_sm90() {
    compile_options o;
    o.arch = "sm_90";
    o.tune = tune_mode::none;
    o.use_problem_cache = false;
    o.use_kernel_cache = false;
    return o;
}

// Through the whole CUDA target (no GPU needed to compile): the op lowers to its one kernel.
TEST(CudaAttentionKernel, LowersThroughTheCudaTarget) {
    program p;
    module& m = p.main();
    const auto in = operands(dtype::f16, {1, 2}, 40, 40, 64, 64, true, dtype::f16);
    auto q = m.add_parameter("q", in[0]);
    auto k = m.add_parameter("k", shape{dtype::f16, {1, 2, 40, 64}});
    auto kt = m.add_instruction(op::transpose{{0, 1, 3, 2}}, {k});
    auto v = m.add_parameter("v", in[2]);
    auto b = m.add_parameter("b", in[3]);
    m.add_return({m.add_instruction(op::attention{0.125f, true}, {q, kt, v, b})});
    compile_options o = compile_only_for_sm90();
    const auto compiled = compile(std::move(p), o);
    EXPECT_EQ(compiled.stats().kernels, 1u);
}

// A layer's q, k and v projections of one input, as Hugging Face exports them (bias, heads by
// reshape and transpose, q and k scaled): merge_sibling_gemms makes them one GEMM, whose output
// the attention kernel reads as three strided slices. Two launches; four without the merge.
TEST(CudaAttentionKernel, MergedProjectionsFeedAttentionAsSlices) {
    auto compile_layer = [](std::vector<std::string> skip) {
        program p;
        module& m = p.main();
        auto x = m.add_parameter("x", shape{dtype::f16, {1, 40, 64}});
        auto project = [&](unsigned seed, bool scaled) {
            std::mt19937 rng(seed);
            auto w =
                m.add_literal(from_vector(dtype::f16, {64, 64}, test::random_values(64 * 64, rng)));
            auto b = m.add_literal(from_vector(dtype::f16, {64}, test::random_values(64, rng)));
            auto y = m.add_instruction(op::make_elementwise(op::elementwise_kind::add),
                                       {m.add_instruction(op::dot{}, {x, w}),
                                        m.add_instruction(op::broadcast{{1, 40, 64}}, {b})});
            if (scaled) {
                auto c = m.add_literal(from_vector(dtype::f16, {1}, std::vector<float>{0.354f}));
                y = m.add_instruction(op::make_elementwise(op::elementwise_kind::mul),
                                      {y, m.add_instruction(op::broadcast{{1, 40, 64}}, {c})});
            }
            return m.add_instruction(op::reshape{{1, 40, 2, 32}}, {y});
        };
        auto q = m.add_instruction(op::transpose{{0, 2, 1, 3}}, {project(1, true)});
        auto kt = m.add_instruction(op::transpose{{0, 2, 3, 1}}, {project(2, true)});
        auto v = m.add_instruction(op::transpose{{0, 2, 1, 3}}, {project(3, false)});
        auto prob = m.add_instruction(op::softmax{3}, {m.add_instruction(op::dot{}, {q, kt})});
        m.add_return({m.add_instruction(op::dot{}, {prob, v})});
        compile_options o = compile_only_for_sm90();
        o.skip_passes = std::move(skip);
        return compile(std::move(p), o);
    };
    EXPECT_EQ(compile_layer({}).stats().launches, 2u);
    EXPECT_EQ(compile_layer({"merge_sibling_gemms"}).stats().launches, 4u);
}

// softmax(q . kt * 0.125) . v as an exporter writes it: the CUDA target fuses it into the one
// attention kernel when the kernel takes it (f16), and keeps the chain with the reason in the
// trace when not (f32).
TEST(CudaAttentionKernel, TheCudaPipelineFusesWhatTheKernelTakes) {
    auto compile_chain = [](dtype t, bool fuse = true) {
        program p;
        module& m = p.main();
        auto q = m.add_parameter("q", shape{t, {1, 2, 40, 64}});
        auto k = m.add_parameter("k", shape{t, {1, 2, 40, 64}});
        auto v = m.add_parameter("v", shape{t, {1, 2, 40, 64}});
        auto kt = m.add_instruction(op::transpose{{0, 1, 3, 2}}, {k});
        auto s = m.add_instruction(op::dot{}, {q, kt});
        auto c = m.add_literal(from_vector(t, {}, std::vector<float>{0.125f}));
        auto scaled =
            m.add_instruction(op::make_elementwise(op::elementwise_kind::mul),
                              {s, m.add_instruction(op::broadcast{s->get_shape().lens()}, {c})});
        auto prob = m.add_instruction(op::softmax{3}, {scaled});
        m.add_return({m.add_instruction(op::dot{}, {prob, v})});
        compile_options o = compile_only_for_sm90();
        o.fuse_attention = fuse;
        return compile(std::move(p), o);
    };
    auto attention_notes = [](const compiled_program& c) {
        std::vector<std::string> notes;
        for (const auto& line : c.trace())
            if (line.rfind("attention ", 0) == 0) notes.push_back(line);
        return notes;
    };
    const auto f16 = compile_chain(dtype::f16);
    EXPECT_EQ(f16.stats().launches, 1u);
    EXPECT_TRUE(attention_notes(f16).empty());
    EXPECT_GT(compile_chain(dtype::f16, false).stats().launches, 1u); // fusion turned off
    const auto f32 = compile_chain(dtype::f32);
    EXPECT_GT(f32.stats().launches, 1u);
    const auto notes = attention_notes(f32);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("unfused"), std::string::npos) << notes[0];
    EXPECT_NE(notes[0].find("f16 or bf16"), std::string::npos) << notes[0];
}

} // namespace cuda_attention_kernel_test
} // namespace conflux::cuda
