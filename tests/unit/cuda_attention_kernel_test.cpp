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

#include <gtest/gtest.h>

namespace conflux::cuda {
namespace {

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

kernel_source generate(const std::vector<shape>& in, bool zero_nan = false) {
    const operation op = op::attention{0.125f, zero_nan};
    const shape out = op.compute_shape(in);
    return generate_kernel({&op, in, {out}, {}, "cx_attention_test"});
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
            EXPECT_EQ(k.launch.block[0], in[0].lens()[in[0].rank() - 2] >= 512 ? 256u : 128u);
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
    compile_options o;
    o.arch = "sm_90";
    o.tune = tune_mode::none;
    o.use_problem_cache = false;
    o.use_kernel_cache = false;
    const auto compiled = compile(std::move(p), o);
    EXPECT_EQ(compiled.stats().kernels, 1u);
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
        compile_options o;
        o.arch = "sm_90";
        o.tune = tune_mode::none;
        o.use_problem_cache = false;
        o.use_kernel_cache = false;
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

} // namespace
} // namespace conflux::cuda
