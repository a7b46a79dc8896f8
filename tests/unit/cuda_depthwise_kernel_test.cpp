// The depthwise kernel family on the CPU: its config text, which problems and configs it takes
// (and why not), its place in the tuning space, and NVRTC compiles of its kernels with plain
// and fused epilogues. tests/gpu/gemm_kernel_test.cpp runs every depthwise config on a GPU
// against an independent reference.
#include "conflux/ops/convolution.hpp"
#include "cuda/codegen/gemm/depthwise_kernel.hpp"
#include "cuda/codegen/gemm/gemm_kernel.hpp"
#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"
#include "cuda/tuning/problem_key.hpp"

#include <gtest/gtest.h>

namespace conflux::cuda {
namespace cuda_depthwise_kernel_test {

op::convolution conv_op(std::size_t nd, std::size_t stride, std::size_t pad, std::size_t group,
                        std::size_t dilation = 1, bool channels_last = true) {
    op::convolution c;
    c.channels_last = channels_last;
    c.group = group;
    c.stride.assign(nd, stride);
    c.dilation.assign(nd, dilation);
    c.padding.assign(2 * nd, pad);
    return c;
}

struct conv_case {
    gemm_problem problem;
    shape y;
};

conv_case problem_of(const op::convolution& c, const shape& x, const shape& w,
                     std::array<std::size_t, 2> offsets = {0, 0}) {
    const operation op = c;
    const shape y = op.compute_shape({x, w});
    auto p = make_gemm_problem(op, {x, w}, y, offsets);
    EXPECT_TRUE(p.has_value());
    return {*p, y};
}

// ConvNeXt-tiny's first 7x7 depthwise layer at batch 32, f16, channels last.
conv_case convnext_7x7() {
    return problem_of(conv_op(2, 1, 3, 96), shape{dtype::f16, {32, 56, 56, 96}},
                      shape{dtype::f16, {96, 7, 7, 1}});
}

perf_config dw(unsigned v, unsigned o, unsigned t) {
    perf_config c;
    c.family = kernel_family::depthwise;
    c.vector = v;
    c.outputs = o;
    c.block_threads = t;
    return c;
}

perf_config tiled(unsigned v, unsigned o, unsigned rows, unsigned t) {
    perf_config c = dw(v, o, t);
    c.tile_rows = rows;
    return c;
}

perf_config mma(unsigned channels, unsigned rows, unsigned cols, unsigned t,
                bool pipelined = false) {
    return depthwise_mma_config(channels, rows, cols, t, pipelined);
}

std::string reason(const perf_config& c, const gemm_problem& p) {
    std::string why;
    EXPECT_FALSE(valid(c, p, &why)) << to_string(c);
    return why;
}

TEST(CudaDepthwiseConfig, ParsesAndPrintsRoundTrip) {
    for (const char* text : {"dw_c8_o4_t128", "dw_c1_o1_t32", "dw_c4_o8_t256", "dw_c4_o4_r4_t256",
                             "dw_c1_o2_r16_t32"}) {
        const auto c = parse_perf_config(text);
        ASSERT_TRUE(c.has_value()) << text;
        EXPECT_TRUE(c->is_depthwise());
        EXPECT_FALSE(c->rounds_f32_to_tf32());
        EXPECT_EQ(to_string(*c), text);
    }
    const auto c = parse_perf_config("dw_c8_o4_t128");
    EXPECT_EQ(c->vector, 8u);
    EXPECT_EQ(c->outputs, 4u);
    EXPECT_EQ(c->threads(), 128u);
    EXPECT_TRUE(parse_perf_config("128x128x32_w2x2_s3_k1")->rounds_f32_to_tf32());
    EXPECT_EQ(c->tile_rows, 0u);
    EXPECT_EQ(parse_perf_config("dw_c4_o4_r4_t256")->tile_rows, 4u);
}

TEST(CudaDepthwiseConfig, TensorCoreConfigsParseAndPrint) {
    for (const char* text :
         {"dw_mma_c16_r16_w32_t128", "dw_mma_c8_r8_w16_t64", "dw_mma_c16_r8_w32_t256_p"}) {
        const auto c = parse_perf_config(text);
        ASSERT_TRUE(c.has_value()) << text;
        EXPECT_TRUE(c->is_depthwise() && c->tensor_cores);
        EXPECT_EQ(to_string(*c), text);
    }
    const auto c = parse_perf_config("dw_mma_c32_r8_w64_t256");
    EXPECT_EQ(*c, mma(32, 8, 64, 256));
    EXPECT_EQ(c->threads(), 256u);
    EXPECT_FALSE(c->pipelined);
    EXPECT_EQ(*parse_perf_config("dw_mma_c32_r8_w64_t256_p"), mma(32, 8, 64, 256, true));
    for (const char* text :
         {"dw_mma_c16_r16_w32", "dw_mma_c16_w32_r16_t128", "dw_mma_c016_r16_w32_t128",
          "dw_mma_c16_r16_w32_t128_x", "dw_mma_r16_w32_t128", "dw_mma_c16_r16_w32_t128_p_p",
          "dw_mma_c16_r16_w32_p_t128", "dw_mma_c16_r16_w32_t128_P", "dw_c8_o4_t128_p"})
        EXPECT_FALSE(parse_perf_config(text).has_value()) << text;
}

// What a Toeplitz product cannot hold, and the block shapes it is not made for, with reasons.
TEST(CudaDepthwiseConfig, TensorCoreConfigsRejectWithReasons) {
    const auto d = convnext_7x7();
    EXPECT_TRUE(valid(mma(16, 16, 32, 256), d.problem));
    const auto f32 = problem_of(conv_op(2, 1, 3, 96), shape{dtype::f32, {2, 14, 14, 96}},
                                shape{dtype::f32, {96, 7, 7, 1}});
    EXPECT_NE(reason(mma(16, 16, 32, 256), f32.problem).find("f16 or bf16"), std::string::npos);
    const auto strided = problem_of(conv_op(2, 2, 1, 32), shape{dtype::f16, {1, 15, 15, 32}},
                                    shape{dtype::f16, {32, 3, 3, 1}});
    EXPECT_NE(reason(mma(16, 8, 16, 128), strided.problem).find("columns' stride is 2"),
              std::string::npos);
    const auto wide = problem_of(conv_op(2, 1, 5, 16), shape{dtype::f16, {1, 15, 15, 16}},
                                 shape{dtype::f16, {16, 11, 11, 1}});
    EXPECT_NE(reason(mma(16, 8, 16, 128), wide.problem).find("spans 11 input columns"),
              std::string::npos);
    const auto dilated = problem_of(conv_op(2, 1, 6, 16, 3), shape{dtype::f16, {1, 15, 15, 16}},
                                    shape{dtype::f16, {16, 5, 5, 1}});
    EXPECT_NE(reason(mma(16, 8, 16, 128), dilated.problem).find("spans 13"), std::string::npos);
    const auto odd = problem_of(conv_op(2, 1, 1, 12), shape{dtype::f16, {1, 9, 9, 12}},
                                shape{dtype::f16, {12, 3, 3, 1}});
    EXPECT_NE(reason(mma(8, 8, 16, 64), odd.problem).find("not a multiple of 8"),
              std::string::npos);
    const auto mult = problem_of(conv_op(2, 1, 1, 8), shape{dtype::f16, {1, 6, 6, 8}},
                                 shape{dtype::f16, {16, 3, 3, 1}});
    EXPECT_NE(reason(mma(8, 8, 16, 64), mult.problem).find("multiplier"), std::string::npos);
    EXPECT_NE(reason(mma(16, 16, 64, 128), d.problem).find("accumulators"), std::string::npos);
    EXPECT_NE(reason(mma(8, 8, 16, 512), d.problem).find("threads"), std::string::npos);
    EXPECT_NE(reason(mma(12, 8, 16, 128), d.problem).find("8, 16 or 32"), std::string::npos);
    EXPECT_NE(reason(mma(16, 4, 16, 128), d.problem).find("rows"), std::string::npos);
    EXPECT_NE(reason(mma(16, 8, 24, 128), d.problem).find("columns"), std::string::npos);
}

// The pipelined form: as many blocks as the SMs hold at 128 registers a thread, each walking
// several tiles; a thread's share of the next window must fit in its registers.
TEST(CudaDepthwiseConfig, PipelinedPlanWalksTilesOnTheResidentBlocks) {
    const auto d = convnext_7x7(); // 56x56 outputs, 96 channels, batch 32
    std::string why;
    const auto plain = make_depthwise_plan(mma(16, 8, 32, 256), d.problem, {}, &why);
    ASSERT_TRUE(plain.has_value()) << why;
    EXPECT_FALSE(plain->pipelined);
    EXPECT_EQ(plain->min_blocks, 4u);
    EXPECT_EQ(plain->grid_x, 32u * 7 * 2);
    const auto walking = make_depthwise_plan(mma(16, 8, 32, 256, true), d.problem, {}, &why);
    ASSERT_TRUE(walking.has_value()) << why;
    EXPECT_TRUE(walking->pipelined);
    EXPECT_EQ(walking->min_blocks, 2u);
    EXPECT_EQ(walking->spatial_tiles, 32u * 7 * 2);
    EXPECT_EQ(walking->grid_y, 6u);
    EXPECT_EQ(walking->grid_x, 132u * 2 / 6); // 44 blocks of each channel block
    // A window of 14 rows x 20 column pairs x 2 channel vectors: 560 items, 3 per thread of 256.
    EXPECT_EQ(walking->window_share, 3u);
    // Its 14 window rows in a ring of 16 row slots of 40 columns (a plane of 644 elements, 4 mod
    // 8), and the accumulators beside the window, not over it: 16 channels x (8 x 40 + 2)
    // floats after 7 KiB of weights (16 channels x 7 rows x 32 diagonals of f16) and the window.
    EXPECT_EQ(walking->ring, 16u);
    EXPECT_EQ(walking->window_plane, 644u);
    EXPECT_EQ(walking->stage_offset, 7168u + 16 * 644 * 2);
    EXPECT_EQ(walking->shared_bytes, 7168u + 16 * 644 * 2 + 16 * 322 * 4);
    // The plain form's 14 rows (a plane of 564) and its accumulators share one region.
    EXPECT_EQ(plain->window_plane, 564u);
    EXPECT_EQ(plain->stage_offset, 7168u);
    EXPECT_EQ(plain->shared_bytes, 7168u + std::max(16 * 564 * 2, 16 * 322 * 4));
    // A device of one SM: a block of each channel block, walking every tile.
    gemm_device_limits one_sm;
    one_sm.sm_count = 1;
    EXPECT_EQ(make_depthwise_plan(mma(16, 8, 32, 256, true), d.problem, one_sm, &why)->grid_x, 1u);
    // Fewer tiles than the SMs hold: one block a tile.
    const auto small = problem_of(conv_op(2, 1, 3, 96), shape{dtype::f16, {1, 14, 14, 96}},
                                  shape{dtype::f16, {96, 7, 7, 1}});
    EXPECT_EQ(make_depthwise_plan(mma(16, 8, 32, 256, true), small.problem, {}, &why)->grid_x, 2u);
    // Rows strided by 2: a window of 21 rows x 24 columns x 2 channel vectors is 504 items,
    // 8 for each of 64 threads; the plain form takes it.
    op::convolution rows = conv_op(2, 1, 3, 96);
    rows.stride = {2, 1};
    const auto strided =
        problem_of(rows, shape{dtype::f16, {32, 56, 56, 96}}, shape{dtype::f16, {96, 7, 7, 1}});
    EXPECT_TRUE(valid(mma(16, 8, 16, 64), strided.problem));
    EXPECT_NE(reason(mma(16, 8, 16, 64, true), strided.problem).find("8 items"), std::string::npos);
}

TEST(CudaDepthwiseConfig, RejectsGarbage) {
    for (const char* text :
         {"dw_c8_o4", "dw_c08_o4_t128", "dw_c8_o4_t128_simt", "dw_", "dw_c_o4_t128",
          "dw_c8_t128_o4", "dw_c8_o4_t128x", "DW_c8_o4_t128", "dw_c8_o4_r0_t128", "dw_c8_o4_r_t128",
          "dw_c8_o4_t128_r4", "dw_c8_r4_o4_t128"})
        EXPECT_FALSE(parse_perf_config(text).has_value()) << text;
}

TEST(CudaDepthwiseConfig, TakesDepthwiseProblemsOnly) {
    const auto d = convnext_7x7();
    EXPECT_TRUE(is_depthwise(d.problem));
    EXPECT_TRUE(valid(dw(8, 4, 128), d.problem));
    // Not depthwise: a grouped convolution with 8 channels per group, a dense one, f64.
    const auto grouped = problem_of(conv_op(2, 1, 1, 4), shape{dtype::f16, {1, 8, 8, 32}},
                                    shape{dtype::f16, {32, 3, 3, 8}});
    EXPECT_FALSE(is_depthwise(grouped.problem));
    EXPECT_NE(reason(dw(1, 1, 128), grouped.problem).find("one input channel per group"),
              std::string::npos);
    const auto f64 = problem_of(conv_op(2, 1, 1, 8), shape{dtype::f64, {1, 8, 8, 8}},
                                shape{dtype::f64, {8, 3, 3, 1}});
    EXPECT_FALSE(is_depthwise(f64.problem));
    // A GEMM config is not a depthwise plan and a depthwise config is not a GEMM plan.
    EXPECT_NE(reason(dw(8, 4, 128), grouped.problem), "");
}

TEST(CudaDepthwiseConfig, ValidRejectsWithReasons) {
    const auto d = convnext_7x7();
    EXPECT_NE(reason(dw(3, 4, 128), d.problem).find("1, 2, 4 or 8"), std::string::npos);
    EXPECT_NE(reason(dw(8, 9, 128), d.problem).find("1 to 8"), std::string::npos);
    EXPECT_NE(reason(dw(8, 4, 100), d.problem).find("multiple of 32"), std::string::npos);
    // 8 outputs of 8 channels with a 7-wide window: 14 input columns, far too many registers.
    EXPECT_NE(reason(dw(8, 8, 128), d.problem).find("registers"), std::string::npos);
    // 20 channels: no vector of 8.
    const auto c20 = problem_of(conv_op(2, 1, 2, 20, 2), shape{dtype::f32, {2, 9, 9, 20}},
                                shape{dtype::f32, {20, 5, 5, 1}});
    EXPECT_NE(reason(dw(8, 1, 128), c20.problem).find("more than 16 bytes"), std::string::npos);
    const auto c20h = problem_of(conv_op(2, 1, 2, 20, 2), shape{dtype::f16, {2, 9, 9, 20}},
                                 shape{dtype::f16, {20, 5, 5, 1}});
    EXPECT_NE(reason(dw(8, 1, 128), c20h.problem).find("not a multiple of 8"), std::string::npos);
    EXPECT_TRUE(valid(dw(4, 2, 128), c20h.problem));
    // A channel multiplier of 2: output channels 2g and 2g+1 read input channel g.
    const auto mult = problem_of(conv_op(2, 1, 1, 8), shape{dtype::f16, {1, 6, 6, 8}},
                                 shape{dtype::f16, {16, 3, 3, 1}});
    EXPECT_TRUE(is_depthwise(mult.problem));
    EXPECT_NE(reason(dw(2, 1, 128), mult.problem).find("multiplier"), std::string::npos);
    EXPECT_TRUE(valid(dw(1, 4, 128), mult.problem));
    // NCHW: channels are not contiguous, so one channel per thread.
    const auto nchw = problem_of(conv_op(2, 1, 1, 16, 1, false), shape{dtype::f16, {1, 16, 8, 8}},
                                 shape{dtype::f16, {16, 1, 3, 3}});
    EXPECT_NE(reason(dw(2, 1, 128), nchw.problem).find("not contiguous"), std::string::npos);
    // An input view 2 elements into its buffer is 4-byte aligned: no 16-byte vectors.
    const auto offset = problem_of(conv_op(2, 1, 1, 32), shape{dtype::f16, {1, 8, 8, 32}},
                                   shape{dtype::f16, {32, 3, 3, 1}}, {2, 0});
    EXPECT_NE(reason(dw(8, 1, 128), offset.problem).find("aligned"), std::string::npos);
    EXPECT_TRUE(valid(dw(2, 1, 128), offset.problem));
    // A 31x31 kernel: 8 channels of 31 columns do not fit in registers; a 61x61 kernel over
    // 256 channels: the block's weights do not fit in shared memory.
    const auto large = problem_of(conv_op(2, 1, 15, 256), shape{dtype::f16, {1, 32, 32, 256}},
                                  shape{dtype::f16, {256, 31, 31, 1}});
    EXPECT_NE(reason(dw(8, 1, 128), large.problem).find("registers"), std::string::npos);
    const auto huge = problem_of(conv_op(2, 1, 30, 256), shape{dtype::f16, {1, 64, 64, 256}},
                                 shape{dtype::f16, {256, 61, 61, 1}});
    EXPECT_NE(reason(dw(1, 1, 128), huge.problem).find("shared memory"), std::string::npos);
}

// A tiled block: its threads, window and shared memory follow from the config and the layer.
TEST(CudaDepthwiseConfig, TiledPlanCoversTheLayer) {
    const auto d = convnext_7x7();
    std::string why;
    const auto k = make_depthwise_plan(tiled(4, 4, 4, 256), d.problem, {}, &why);
    ASSERT_TRUE(k.has_value()) << why;
    // 32 f16 channels (8 vectors of 4, 64 bytes) per block; 56 columns are 14 strips of 4, and
    // 4 rows of 8 vectors leave room for 8 strips in 256 threads, so a row takes two column
    // tiles, of 7 strips each: 8 x 7 x 4 = 224 threads, 28 columns a tile.
    EXPECT_EQ(k->block_vectors, 8u);
    EXPECT_EQ(k->tile_strips, 7u);
    EXPECT_EQ(k->threads, 224u);
    EXPECT_EQ(k->col_tiles, 2u);
    EXPECT_EQ(k->row_tiles, 14u);
    EXPECT_EQ(k->grid_x, 32u * 14u * 2u);
    EXPECT_EQ(k->grid_y, 3u);
    // The window: 4 + 6 rows, 28 + 6 columns; positions at least 32 elements apart, aligned;
    // after the f32 weights.
    EXPECT_EQ(k->window_rows, 10u);
    EXPECT_EQ(k->window_cols, 34u);
    EXPECT_GE(k->pitch, 32u);
    EXPECT_EQ(k->pitch % 4, 0u);
    EXPECT_EQ(k->window_offset, 49u * 32 * 4);
    EXPECT_EQ(k->shared_bytes, 49 * 32 * 4 + 10 * 34 * k->pitch * 2);
    EXPECT_GE(k->read_wavefronts, 1u);
    // Stride 2: the window spans (rows - 1) * 2 + the kernel.
    const auto s2 = problem_of(conv_op(2, 2, 1, 32), shape{dtype::f16, {2, 15, 15, 32}},
                               shape{dtype::f16, {32, 3, 3, 1}});
    const auto k2 = make_depthwise_plan(tiled(4, 2, 2, 128), s2.problem, {}, &why);
    ASSERT_TRUE(k2.has_value()) << why;
    EXPECT_EQ(k2->window_rows, 2u * 1 * 2 + 1);
}

TEST(CudaDepthwiseConfig, TiledRejectsWithReasons) {
    const auto d = convnext_7x7();
    EXPECT_NE(reason(tiled(4, 4, 17, 256), d.problem).find("16 output rows"), std::string::npos);
    // 8 rows of 4 vectors are 32 threads at least.
    EXPECT_NE(reason(tiled(2, 4, 16, 32), d.problem).find("threads"), std::string::npos);
    const auto d1 = problem_of(conv_op(1, 1, 2, 24), shape{dtype::f16, {2, 40, 24}},
                               shape{dtype::f16, {24, 5, 1}});
    EXPECT_NE(reason(tiled(4, 4, 2, 128), d1.problem).find("2-D"), std::string::npos);
    EXPECT_TRUE(valid(dw(4, 4, 128), d1.problem));
    const auto mult = problem_of(conv_op(2, 1, 1, 8), shape{dtype::f16, {1, 6, 6, 8}},
                                 shape{dtype::f16, {16, 3, 3, 1}});
    EXPECT_NE(reason(tiled(1, 4, 2, 128), mult.problem).find("multiplier"), std::string::npos);
    // A 61x61 kernel: its weights and window do not fit in shared memory.
    const auto wide = problem_of(conv_op(2, 1, 30, 16), shape{dtype::f32, {1, 64, 64, 16}},
                                 shape{dtype::f32, {16, 61, 61, 1}});
    EXPECT_NE(reason(tiled(1, 1, 2, 128), wide.problem).find("weights and input window"),
              std::string::npos);
}

TEST(CudaDepthwiseConfig, ComesFirstInTheTuningSpaceBesideTheGemmConfigs) {
    const auto d = convnext_7x7();
    const auto cs = candidate_configs(d.problem);
    ASSERT_FALSE(cs.empty());
    bool any_gemm = false;
    for (const auto& c : cs) {
        EXPECT_TRUE(valid(c, d.problem)) << to_string(c);
        any_gemm = any_gemm || !c.is_depthwise();
    }
    EXPECT_TRUE(any_gemm);
    // The four depthwise forms among the first few, which quick tuning times: pipelined tensor
    // cores (the heuristic's pick), a tile through shared memory, tensor cores, direct.
    ASSERT_GE(cs.size(), 4u);
    EXPECT_TRUE(cs[0].tensor_cores && cs[0].pipelined && cs[1].tile_rows != 0 &&
                !cs[1].tensor_cores && cs[2].tensor_cores && !cs[2].pipelined &&
                !cs[3].tensor_cores && cs[3].tile_rows == 0)
        << to_string(cs[0]) << " " << to_string(cs[1]) << " " << to_string(cs[2]) << " "
        << to_string(cs[3]);
    EXPECT_GE(cs[1].vector, 4u) << to_string(cs[1]);
    EXPECT_GE(cs[2].block_channels, 16u) << to_string(cs[2]);
    // The ranking counts the window rows a pipelined tile shares with the one above it: on
    // ConvNeXt's 56-column layer, tiles 64 columns wide (one column of tiles, so each block
    // loads the input rows it needs once, and most tiles walk on from the one above) come first,
    // 16 x 32 second: the H100's two fastest there (2026-12-07f).
    EXPECT_EQ(to_string(cs[0]), "dw_mma_c16_r8_w64_t256_p");
    EXPECT_EQ(to_string(cs[4]), "dw_mma_c16_r16_w32_t256_p");
    // Where the pipelined blocks would have a tile or so each, the tiled form comes first: inside
    // ConvNeXt-tiny on the H100 (2026-12-07f) the pipelined pick took 1.25x the tiled form's time
    // on the 7x7x768 layer at batch 32, 1.19x and 1.34x on the 14x14x384 and 7x7x768 layers at
    // batch 1; on the 14x14x384 layer at batch 32 (three tiles a block) it took 0.60x.
    auto first_two = [](std::size_t n, std::size_t h, std::size_t c) {
        const auto l = problem_of(conv_op(2, 1, 3, c), shape{dtype::f16, {n, h, h, c}},
                                  shape{dtype::f16, {c, 7, 7, 1}});
        const auto lc = candidate_configs(l.problem);
        EXPECT_GE(lc.size(), 2u);
        return lc.size() < 2 ? std::pair<perf_config, perf_config>{}
                             : std::pair<perf_config, perf_config>{lc[0], lc[1]};
    };
    for (auto [n, h, c] : {std::array<std::size_t, 3>{32, 7, 768}, {1, 14, 384}, {1, 7, 768}}) {
        const auto [a, b] = first_two(n, h, c);
        EXPECT_TRUE(a.tile_rows != 0 && !a.tensor_cores && b.tensor_cores && b.pipelined)
            << n << "x" << h << "x" << h << "x" << c << ": " << to_string(a) << " " << to_string(b);
    }
    const auto [wide, next] = first_two(32, 14, 384);
    EXPECT_TRUE(wide.tensor_cores && wide.pipelined && next.tile_rows != 0) << to_string(wide);
    // A layer whose columns are strided takes no tensor-core config: the tiled form comes first.
    const auto strided = problem_of(conv_op(2, 2, 1, 96), shape{dtype::f16, {32, 112, 112, 96}},
                                    shape{dtype::f16, {96, 3, 3, 1}});
    const auto sc = candidate_configs(strided.problem);
    ASSERT_FALSE(sc.empty());
    EXPECT_TRUE(sc.front().is_depthwise() && sc.front().tile_rows != 0 && !sc.front().tensor_cores)
        << to_string(sc.front());
    // A 31x31 kernel runs one channel per thread; no depthwise config fits a 61x61 one, whose
    // GEMM configs still run it.
    const auto large = problem_of(conv_op(2, 1, 15, 256), shape{dtype::f16, {1, 32, 32, 256}},
                                  shape{dtype::f16, {256, 31, 31, 1}});
    const auto lc = candidate_configs(large.problem);
    ASSERT_FALSE(lc.empty());
    EXPECT_TRUE(lc.front().is_depthwise() && lc.front().vector == 1) << to_string(lc.front());
    const auto huge = problem_of(conv_op(2, 1, 30, 256), shape{dtype::f16, {1, 64, 64, 256}},
                                 shape{dtype::f16, {256, 61, 61, 1}});
    const auto hc = candidate_configs(huge.problem);
    ASSERT_FALSE(hc.empty());
    for (const auto& c : hc)
        EXPECT_FALSE(c.is_depthwise()) << to_string(c);
    // A dense convolution has none.
    const auto dense = problem_of(conv_op(2, 1, 1, 1), shape{dtype::f16, {1, 8, 8, 16}},
                                  shape{dtype::f16, {16, 3, 3, 16}});
    EXPECT_TRUE(depthwise_candidates(dense.problem).empty());
}

TEST(CudaDepthwiseConfig, ProblemKeyTellsTheFamilyApart) {
    const auto d = convnext_7x7();
    EXPECT_EQ(make_problem_key(d.problem, "none", "sm_90", 132).family, "depthwise_conv2d");
    const auto dense = problem_of(conv_op(2, 1, 1, 1), shape{dtype::f16, {1, 8, 8, 16}},
                                  shape{dtype::f16, {16, 3, 3, 16}});
    EXPECT_EQ(make_problem_key(dense.problem, "none", "sm_90", 132).family, "conv2d");
    // Depthwise keys carry the depthwise family's version (entries tuned before the tensor-core
    // configs are stale and re-tuned); other convolutions keep the GEMM generator's.
    EXPECT_EQ(make_problem_key(d.problem, "none", "sm_90", 132).generator_version,
              depthwise_generator_version);
    EXPECT_EQ(make_problem_key(dense.problem, "none", "sm_90", 132).generator_version,
              gemm_generator_version);
    EXPECT_STRNE(depthwise_generator_version, gemm_generator_version);
}

TEST(CudaDepthwiseKernel, EmptyProblemLaunchesNothing) {
    const auto e = problem_of(conv_op(2, 1, 1, 8), shape{dtype::f16, {0, 8, 8, 8}},
                              shape{dtype::f16, {8, 3, 3, 1}});
    const auto k = generate_gemm_kernel(
        e.problem, dw(8, 1, 128), default_epilogue(depthwise_epilogue_problem(e.problem), e.y),
        "cx_dw_empty");
    EXPECT_TRUE(k.empty());
}

// The first, middle and last depthwise candidates of each problem, with the plain store of
// the output (through its strides, NCHW included), compiled for sm_90. The GPU harness runs
// every candidate; this keeps NVRTC's share of CI small.
TEST(CudaDepthwiseKernel, CandidatesCompileWithNvrtc) {
    std::vector<conv_case> problems{
        convnext_7x7(),
        problem_of(conv_op(2, 2, 1, 32), shape{dtype::bf16, {2, 15, 15, 32}},
                   shape{dtype::bf16, {32, 3, 3, 1}}),
        problem_of(conv_op(2, 1, 4, 20, 2), shape{dtype::f32, {2, 9, 9, 20}},
                   shape{dtype::f32, {20, 5, 5, 1}}),
        problem_of(conv_op(2, 1, 1, 8), shape{dtype::f16, {1, 6, 6, 8}},
                   shape{dtype::f16, {16, 3, 3, 1}}),
        problem_of(conv_op(1, 1, 2, 24), shape{dtype::f16, {2, 40, 24}},
                   shape{dtype::f16, {24, 5, 1}}),
        problem_of(conv_op(3, 1, 1, 16), shape{dtype::f16, {1, 4, 6, 6, 16}},
                   shape{dtype::f16, {16, 3, 3, 3, 1}}),
        problem_of(conv_op(2, 1, 1, 16, 1, false), shape{dtype::f16, {1, 16, 8, 8}},
                   shape{dtype::f16, {16, 1, 3, 3}}),
    };
    std::size_t compiled = 0;
    for (const auto& d : problems) {
        const auto cs = depthwise_candidates(d.problem);
        ASSERT_FALSE(cs.empty()) << to_string(d.problem);
        for (std::size_t j : {std::size_t(0), cs.size() / 2, cs.size() - 1}) {
            const perf_config& c = cs[j];
            SCOPED_TRACE(to_string(c) + " for " + to_string(d.problem));
            const auto k = generate_gemm_kernel(
                d.problem, c, default_epilogue(depthwise_epilogue_problem(d.problem), d.y),
                "cx_dw_test");
            EXPECT_LE(k.launch.block[0], c.block_threads);
            EXPECT_EQ(k.launch.shared_bytes, shared_bytes(c, d.problem));
            try {
                nvrtc_compile(k, "sm_90");
                ++compiled;
            } catch (const std::exception& ex) {
                ADD_FAILURE() << ex.what() << "\n" << k.code;
            }
        }
    }
    EXPECT_GE(compiled, 3 * problems.size() - 6); // a problem with fewer than 3 candidates
}

} // namespace cuda_depthwise_kernel_test
} // namespace conflux::cuda
