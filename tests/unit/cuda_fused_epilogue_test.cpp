// can_fuse and the fused epilogue (src/cuda/codegen/gemm/fused_epilogue.hpp): each of can_fuse's
// constraints rejects with its reason, the store walk follows the output's fastest axis, and
// the generated kernels compile with NVRTC for sm_90. Their results are checked on the GPU
// (tests/gpu: the fused-pattern matrix against the reference).
#include "conflux/ir/program.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "cuda/codegen/gemm/fused_epilogue.hpp"
#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"

#include <gtest/gtest.h>

#include <functional>

namespace conflux::cuda {
namespace cuda_fused_epilogue_test {

using op::elementwise_kind;

// An NHWC conv [2, 8, 8, 16] x [32, 3, 3, 16] -> [2, 8, 8, 32] and its epilogue module:
// + bias (broadcast) + residual, relu, then `tail` (applied to the relu).
struct fixture {
    program prog;
    module* epi = nullptr;
    gemm_problem problem;
    epilogue_module e;

    explicit fixture(const std::function<instruction_ref(module&, instruction_ref)>& tail,
                     std::size_t extra_residuals = 1) {
        const shape out{dtype::f16, {2, 8, 8, 32}};
        op::convolution conv{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1, true};
        auto p = make_gemm_problem(
            conv, {shape{dtype::f16, {2, 8, 8, 16}}, {dtype::f16, {32, 3, 3, 16}}}, out);
        problem = *p;
        epi = &prog.create_module("epilogue");
        auto anchor = epi->add_parameter("anchor", out);
        auto b = epi->add_parameter("bias", shape{dtype::f16, {32}});
        auto bb = epi->add_instruction(op::broadcast{out.lens()}, {b});
        auto v = epi->add_instruction(op::make_elementwise(elementwise_kind::add), {anchor, bb});
        for (std::size_t i = 0; i < extra_residuals; ++i) {
            auto r = epi->add_parameter("r" + std::to_string(i), out);
            v = epi->add_instruction(op::make_elementwise(elementwise_kind::add), {v, r});
        }
        v = epi->add_instruction(op::make_elementwise(elementwise_kind::relu), {v});
        auto result = tail(*epi, v);
        epi->add_return({result});
        e.mod = epi;
        e.anchor_slot = 0;
        for (auto param : epi->parameters())
            e.inputs.push_back(param->get_shape());
        e.outputs = {result->get_shape().as_standard()};
    }
};

instruction_ref no_tail(module&, instruction_ref v) {
    return v;
}
instruction_ref to_nchw(module& m, instruction_ref v) {
    return m.add_instruction(op::transpose{{0, 3, 1, 2}}, {v});
}

perf_config config(const char* text) {
    auto c = parse_perf_config(text);
    EXPECT_TRUE(c.has_value()) << text;
    return *c;
}

TEST(CudaFusedEpilogue, SplitKCannotFuseANonLinearEpilogue) {
    fixture f(no_tail);
    std::string why;
    EXPECT_TRUE(can_fuse(config("64x32x32_w2x1_s3_k1"), f.problem, f.e, &why)) << why;
    EXPECT_FALSE(can_fuse(config("64x32x32_w2x1_s3_k2"), f.problem, f.e, &why));
    EXPECT_NE(why.find("split-K 2"), std::string::npos) << why;
}

TEST(CudaFusedEpilogue, TheWalkFollowsTheOutputsFastestAxis) {
    fixture nhwc(no_tail), nchw(to_nchw);
    EXPECT_EQ(analyse_epilogue(nhwc.problem, nhwc.e).walk, store_walk::n_major);
    EXPECT_FALSE(analyse_epilogue(nhwc.problem, nhwc.e).walk_required);
    // NCHW: consecutive W (the fastest part of m) are adjacent in memory.
    EXPECT_EQ(analyse_epilogue(nchw.problem, nchw.e).walk, store_walk::m_major);
    EXPECT_TRUE(analyse_epilogue(nchw.problem, nchw.e).walk_required);
}

TEST(CudaFusedEpilogue, ATransposedTailNeedsItsStagedStoreToFit) {
    fixture nchw(to_nchw), nhwc(no_tail);
    // A shallow pipeline (2 x (128 + 128) x 16 f16 = 16 KiB) and the staged m-major tile it
    // would need (128 columns x (128 + 8 padding) rows of f16 = 34 KiB).
    const perf_config big = config("128x128x16_w2x2_s2_k1");
    gemm_device_limits small;
    small.shared_per_block = 24 * 1024;
    std::string why;
    ASSERT_TRUE(valid(big, nchw.problem, &why, small)) << why;
    EXPECT_EQ(staged_store_bytes(nchw.problem, big, store_walk::m_major), 128u * 136u * 2u);
    EXPECT_FALSE(can_fuse(big, nchw.problem, nchw.e, &why, small));
    EXPECT_NE(why.find("staged store"), std::string::npos) << why;
    small.shared_per_block = 36 * 1024;
    EXPECT_TRUE(can_fuse(big, nchw.problem, nchw.e, &why, small)) << why;
    small.shared_per_block = 24 * 1024;
    // An NHWC output does not need the staging: it falls back to direct stores.
    EXPECT_TRUE(can_fuse(big, nhwc.problem, nhwc.e, &why, small)) << why;
}

TEST(CudaFusedEpilogue, TooManyExtraInputsAreNotFused) {
    fixture f(no_tail, max_epilogue_inputs); // the bias makes it one too many
    std::string why;
    EXPECT_FALSE(can_fuse(config("64x32x32_w2x1_s3_k1"), f.problem, f.e, &why));
    EXPECT_NE(why.find("extra epilogue inputs"), std::string::npos) << why;
}

TEST(CudaFusedEpilogue, ALayoutChangeBeforeThePointwiseOpsIsFused) {
    // The NHWC convolution's transpose back to NCHW, then pointwise ops in NCHW order.
    fixture f([](module& m, instruction_ref v) {
        auto t = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {v});
        return m.add_instruction(op::make_elementwise(elementwise_kind::neg), {t});
    });
    std::string why;
    EXPECT_TRUE(can_fuse(config("64x32x32_w2x1_s3_k1"), f.problem, f.e, &why)) << why;
}

TEST(CudaFusedEpilogue, TheAnchorAtTwoPositionsIsNotFused) {
    // [2, 8, 8, 32] plus its (H, W) transpose: each call knows the anchor at one position only.
    fixture f([](module& m, instruction_ref v) {
        auto t = m.add_instruction(op::transpose{{0, 2, 1, 3}}, {v});
        return m.add_instruction(op::make_elementwise(elementwise_kind::add), {v, t});
    });
    std::string why;
    EXPECT_FALSE(can_fuse(config("64x32x32_w2x1_s3_k1"), f.problem, f.e, &why));
    EXPECT_NE(why.find("two different positions"), std::string::npos) << why;
}

TEST(CudaFusedEpilogue, FusedKernelsCompileWithNvrtcForBothWalks) {
    auto nchw_then_pointwise = [](module& m, instruction_ref v) {
        auto t = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {v});
        return m.add_instruction(op::make_elementwise(elementwise_kind::sigmoid), {t});
    };
    for (std::function<instruction_ref(module&, instruction_ref)> tail :
         {std::function<instruction_ref(module&, instruction_ref)>(no_tail),
          {to_nchw},
          {nchw_then_pointwise}}) {
        fixture f(tail);
        for (const char* text : {"64x32x32_w2x1_s3_k1", "32x32x8_w1x1_s2_k1_simt"}) {
            const perf_config c = config(text);
            ASSERT_TRUE(can_fuse(c, f.problem, f.e));
            const gemm_epilogue g = fused_epilogue(f.problem, f.e);
            EXPECT_EQ(g.inputs, 2u); // bias and residual; the anchor is a value, not a pointer
            const kernel_source k = generate_gemm_kernel(f.problem, c, g, "cx_fused_test");
            EXPECT_EQ(k.inputs, 4u);
            EXPECT_EQ(k.outputs, 1u);
            EXPECT_NE(k.code.find("cx_stage"), std::string::npos) << "staged walk expected";
            EXPECT_NO_THROW(nvrtc_compile(k, "sm_90")) << text << "\n" << k.code;
        }
    }
}

// Extra inputs whose eight f16 lanes are consecutive and aligned are read 16 bytes at a time:
// the bias (through its broadcast) and the residual at offset 0; a residual 3 elements into its
// buffer is read a lane at a time, and so is every input whose offset is not known. The
// numbers of both paths are checked on the GPU (CudaOps.FusedEpilogueInputsFromSlices).
TEST(CudaFusedEpilogue, AlignedExtraInputsAreReadAVectorAtATime) {
    fixture f(no_tail); // anchor, bias [32], residual [2, 8, 8, 32]
    auto vector_loads_of = [&](const char* input) {
        return fused_epilogue(f.problem, f.e).code.find(std::string("*>(") + input + " + ") !=
               std::string::npos;
    };
    f.e.input_offsets = {0, 0, 0};
    EXPECT_TRUE(vector_loads_of("in1"));
    EXPECT_TRUE(vector_loads_of("in2"));
    // The walk then issues several chunks' vector reads before it stores any.
    EXPECT_TRUE(fused_epilogue(f.problem, f.e).batched_loads);
    for (const char* text : {"64x32x32_w2x1_s3_k1", "128x64x64_w8x1_s4_k1_wgmma_pp"}) {
        const kernel_source k = generate_gemm_kernel(f.problem, config(text),
                                                     fused_epilogue(f.problem, f.e), "cx_vec_test");
        EXPECT_NE(k.code.find("cx_gemm_staged_walk_batched<"), std::string::npos) << k.code;
        EXPECT_NO_THROW(nvrtc_compile(
            k, std::string(text).find("wgmma") == std::string::npos ? "sm_90" : "sm_90a"))
            << text << "\n"
            << k.code;
    }
    f.e.input_offsets = {0, 16, 3};
    EXPECT_TRUE(vector_loads_of("in1"));
    EXPECT_FALSE(vector_loads_of("in2"));
    f.e.input_offsets.clear();
    EXPECT_FALSE(vector_loads_of("in1"));
    EXPECT_FALSE(vector_loads_of("in2"));
    EXPECT_FALSE(fused_epilogue(f.problem, f.e).batched_loads);
}

TEST(CudaFusedEpilogue, AReshapeThatKeepsEightColumnsTogetherStoresVectors) {
    // The NHWC conv's [2, 8, 8, 32] output reshaped: 8 consecutive output channels (from a
    // multiple of 8) stay consecutive when the new innermost length is a multiple of 8.
    auto reshaped = [](dims lens) {
        return [lens](module& m, instruction_ref v) {
            return m.add_instruction(op::reshape{lens}, {v});
        };
    };
    auto vector_store = [](const fixture& f) {
        const gemm_epilogue g = fused_epilogue(f.problem, f.e);
        return g.code.find("*reinterpret_cast<uint4*>(&out0[") != std::string::npos;
    };
    EXPECT_TRUE(vector_store(fixture(no_tail)));
    EXPECT_TRUE(vector_store(fixture(reshaped({128, 32}))));
    EXPECT_TRUE(vector_store(fixture(reshaped({2, 8, 8, 4, 8}))));
    EXPECT_TRUE(vector_store(fixture(reshaped({2, 8, 256}))));
    EXPECT_TRUE(vector_store(fixture(reshaped({2, 8, 16, 16}))));
    // Innermost 4: 8 consecutive channels fall in two rows of the output.
    EXPECT_FALSE(vector_store(fixture(reshaped({2, 8, 8, 8, 4}))));
    // A transpose that moves the channels off the innermost axis, then a reshape.
    EXPECT_FALSE(vector_store(fixture([](module& m, instruction_ref v) {
        auto t = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {v});
        return m.add_instruction(op::reshape{{2, 32, 64}}, {t});
    })));
    // The same fused kernel compiles with the reshape's vector store and the paired staging.
    fixture f(reshaped({2, 8, 256}));
    const kernel_source k = generate_gemm_kernel(f.problem, config("64x32x32_w2x1_s3_k1"),
                                                 fused_epilogue(f.problem, f.e), "cx_fused_test");
    EXPECT_NE(k.code.find("cx_store_pair(&cx_stage["), std::string::npos) << k.code;
    EXPECT_NO_THROW(nvrtc_compile(k, "sm_90")) << k.code;
}

TEST(CudaFusedEpilogue, EightF32ResultsOfAnF16ProductAreTwo16ByteStores) {
    // An f16 product converted to f32 (a model's f32 output under --fp16: LLaMA's logits): the
    // lane group of 8 is 32 bytes, stored as two uint4s (the second at n + 4), not 8 scalars.
    fixture f([](module& m, instruction_ref v) {
        return m.add_instruction(op::make_convert(dtype::f32), {v});
    });
    const gemm_epilogue g = fused_epilogue(f.problem, f.e);
    ASSERT_EQ(g.lanes, 8u);
    const std::size_t first = g.code.find("*reinterpret_cast<uint4*>(&out0[");
    ASSERT_NE(first, std::string::npos) << g.code;
    EXPECT_NE(g.code.find("*reinterpret_cast<uint4*>(&out0[", first + 1), std::string::npos)
        << g.code;
    EXPECT_NE(g.code.find("float s[4];"), std::string::npos) << g.code;
    const kernel_source k =
        generate_gemm_kernel(f.problem, config("64x32x32_w2x1_s3_k1"), g, "cx_fused_test");
    EXPECT_NO_THROW(nvrtc_compile(k, "sm_90")) << k.code;
}

} // namespace cuda_fused_epilogue_test
} // namespace conflux::cuda
