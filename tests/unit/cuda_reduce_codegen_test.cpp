// The reduce, normalisation, pooling, resize and direct gemm generators: every kernel compiles with
// NVRTC for sm_90 (no GPU needed) over a spread of ops, dtypes and operand layouts, and launches
// the way its mapping says. Results are checked against the reference target on a GPU machine.
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/resize.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/generator.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"

#include <gtest/gtest.h>

#include <optional>

namespace conflux::cuda {
namespace cuda_reduce_codegen_test {

// Generates the kernel for `op` over `inputs` (the output is the op's standard result shape
// unless given) and compiles it; NVRTC must accept it without a warning.
kernel_source compile(const operation& op, const std::vector<shape>& inputs,
                      const std::optional<shape>& output = std::nullopt,
                      const std::vector<std::size_t>& input_offsets = {}) {
    static int serial = 0;
    kernel_request r;
    r.op = &op;
    r.inputs = inputs;
    r.input_offsets = input_offsets;
    r.outputs = {output ? *output : op.compute_shape(inputs)};
    r.entry = "cx_test_" + std::to_string(serial++);
    const kernel_source k = generate_kernel(r);
    EXPECT_EQ(k.entry, r.entry);
    EXPECT_EQ(k.inputs, inputs.size());
    EXPECT_EQ(k.outputs, 1u);
    const compiled_kernel c = nvrtc_compile(k, "sm_90");
    EXPECT_GT(c.cubin.size(), 4u);
    EXPECT_EQ(c.log, "") << op.to_string() << "\n" << k.code;
    return k;
}

// The lens with the given strides.
shape strided(dtype t, dims lens, dims strides) {
    return {t, std::move(lens), std::move(strides)};
}

// A packed shape whose axes lie in memory in the order `order` (outermost first), e.g. an NHWC
// tensor seen as NCHW is transposed_shape(t, {N, C, H, W}, {0, 2, 3, 1}).
shape transposed_shape(dtype t, const dims& lens, const std::vector<std::size_t>& order) {
    dims strides(lens.size());
    std::size_t s = 1;
    for (std::size_t i = order.size(); i-- > 0;) {
        strides[order[i]] = s;
        s *= lens[order[i]];
    }
    return {t, lens, strides};
}

bool uses_64bit_index(const kernel_source& k) {
    return k.code.find("typedef long long cx_index;") != std::string::npos;
}

op::reduce reduce_op(op::reduce_kind kind, std::vector<std::int64_t> axes, bool keepdims) {
    op::reduce r;
    r.kind = kind;
    r.axes = std::move(axes);
    r.keepdims = keepdims;
    return r;
}

const op::reduce_kind all_reduce_kinds[] = {
    op::reduce_kind::sum,       op::reduce_kind::mean,    op::reduce_kind::max,
    op::reduce_kind::min,       op::reduce_kind::prod,    op::reduce_kind::l1,
    op::reduce_kind::l2,        op::reduce_kind::log_sum, op::reduce_kind::log_sum_exp,
    op::reduce_kind::sum_square};

TEST(CudaReduceCodegen, EveryOpNameHasAGenerator) {
    for (auto kind : all_reduce_kinds)
        EXPECT_NE(find_generator(op::reduce{.kind = kind}.name()), nullptr);
    for (const char* name : {"softmax", "log_softmax", "argmax", "argmin", "layer_normalization",
                             "max_pool", "average_pool", "convolution", "dot"})
        EXPECT_NE(find_generator(name), nullptr) << name;
}

// Every kind in every dtype; the axes and keepdims rotate so that each kind meets inner, outer,
// several and all axes across the dtypes.
TEST(CudaReduceCodegen, EveryKindCompilesForEachDtype) {
    const std::vector<std::vector<std::int64_t>> axes_choices = {{2}, {0}, {0, 2}, {}};
    const dtype types[] = {dtype::f32, dtype::f16, dtype::bf16, dtype::i64};
    std::size_t n = 0;
    for (auto kind : all_reduce_kinds) {
        for (auto t : types) {
            const auto& axes = axes_choices[n % axes_choices.size()];
            const bool keepdims = (n / axes_choices.size()) % 2 == 0;
            ++n;
            const operation op = reduce_op(kind, axes, keepdims);
            SCOPED_TRACE(op.to_string() + " " + std::string(to_string(t)));
            compile(op, {shape{t, {3, 5, 40}}});
        }
    }
}

TEST(CudaReduceCodegen, EveryAxesChoiceWithAndWithoutKeepdims) {
    const std::vector<std::vector<std::int64_t>> axes_choices = {{3}, {0}, {1, 2}, {0, 3}, {}};
    for (const auto& axes : axes_choices) {
        for (bool keepdims : {true, false}) {
            const operation op = reduce_op(op::reduce_kind::sum, axes, keepdims);
            SCOPED_TRACE(op.to_string());
            compile(op, {shape{dtype::f32, {2, 3, 4, 50}}});
        }
    }
}

TEST(CudaReduceCodegen, LongRowsGetOneBlockPerOutput) {
    const operation op = reduce_op(op::reduce_kind::sum, {1}, false);
    const auto k = compile(op, {shape{dtype::f32, {8, 1000}}});
    EXPECT_EQ(k.launch.grid, (std::array<unsigned, 3>{8, 1, 1}));
    EXPECT_EQ(k.launch.block, (std::array<unsigned, 3>{256, 1, 1}));
    EXPECT_NE(k.code.find("cx_block_reduce"), std::string::npos);

    // A row shorter than a block gets the smallest power-of-two block that covers it.
    const auto k48 = compile(op, {shape{dtype::f32, {8, 48}}});
    EXPECT_EQ(k48.launch.grid[0], 8u);
    EXPECT_EQ(k48.launch.block[0], 64u);
}

TEST(CudaReduceCodegen, ShortRowsGetOneThreadPerOutput) {
    const operation op = reduce_op(op::reduce_kind::max, {1}, true);
    const auto k = compile(op, {shape{dtype::f32, {10000, 8}}});
    EXPECT_EQ(k.launch.grid[0], (10000u + 255) / 256);
    EXPECT_EQ(k.launch.block[0], 256u);
    EXPECT_EQ(k.code.find("cx_block_reduce"), std::string::npos);
}

TEST(CudaReduceCodegen, ManyOutputsAdjacentInMemoryGetOneThreadEach) {
    // Reducing the outer axis: neighbouring outputs read neighbouring inputs.
    const operation op = reduce_op(op::reduce_kind::sum, {0}, false);
    const auto k = compile(op, {shape{dtype::f32, {1000, 8192}}});
    EXPECT_EQ(k.launch.grid[0], 8192u / 256);
    // The same reduction of a transposed input reads its rows contiguously: rows of at most
    // 1024 elements a warp each (8 per block of 256 threads), longer rows a block each.
    const auto kt = compile(op, {transposed_shape(dtype::f32, {1000, 8192}, {1, 0})});
    EXPECT_EQ(kt.launch.grid[0], 8192u / 8);
    EXPECT_EQ(kt.launch.block[0], 256u);
    const auto long_rows = compile(op, {transposed_shape(dtype::f32, {2000, 8192}, {1, 0})});
    EXPECT_EQ(long_rows.launch.grid[0], 8192u);
    // Few rows keep a block each, so that the rows' work still spreads over the GPU.
    const auto few =
        compile(reduce_op(op::reduce_kind::sum, {1}, false), {shape{dtype::f32, {100, 1000}}});
    EXPECT_EQ(few.launch.grid[0], 100u);
}

// Squeeze-and-excitation's spatial mean of a channels-last [N, C, H, W] tensor over W: a thread
// per (n, c, h). The threads are numbered in memory order, channel fastest, so a warp reads 32
// neighbouring channels; numbered (n, c, h), neighbouring threads were a row of the image apart.
TEST(CudaReduceCodegen, ThreadPerRowNumbersRowsInMemoryOrder) {
    const operation op = reduce_op(op::reduce_kind::mean, {3}, true);
    const auto k = compile(op, {transposed_shape(dtype::f16, {32, 32, 112, 112}, {0, 2, 3, 1})});
    ASSERT_EQ(k.launch.grid[0], 32u * 32 * 112 / 256) << k.code; // a thread per row
    // The channel (axis 1) is the fastest part of the row index.
    EXPECT_NE(k.code.find("const cx_index a1 = (row) % 32;"), std::string::npos) << k.code;
    EXPECT_NE(k.code.find("#pragma unroll 8"), std::string::npos) << k.code;
}

TEST(CudaReduceCodegen, AnyInputAndOutputStrides) {
    const operation op = reduce_op(op::reduce_kind::mean, {1}, true);
    // Transposed, broadcast (stride 0) and sliced inputs; a transposed output.
    compile(op, {transposed_shape(dtype::f16, {4, 64, 6}, {2, 0, 1})});
    compile(op, {strided(dtype::f32, {4, 64, 6}, {0, 6, 1})});
    compile(op, {strided(dtype::bf16, {4, 64, 6}, {1000, 13, 2})});
    compile(op, {shape{dtype::f32, {4, 64, 6}}}, strided(dtype::f32, {4, 1, 6}, {1, 1, 4}));
}

TEST(CudaReduceCodegen, OffsetsPastInt32UseA64BitIndex) {
    const operation op = reduce_op(op::reduce_kind::sum, {1}, false);
    const auto wide = compile(op, {strided(dtype::f32, {3, 40}, {3000000000, 1})});
    EXPECT_TRUE(uses_64bit_index(wide));
    const auto narrow = compile(op, {shape{dtype::f32, {3, 40}}});
    EXPECT_FALSE(uses_64bit_index(narrow));
}

TEST(CudaReduceCodegen, EmptyReducedAxesAndEmptyOutputs) {
    // A reduced extent of 0 still writes every output (the kind's identity).
    const operation sum = reduce_op(op::reduce_kind::sum, {1}, true);
    const auto k = compile(sum, {shape{dtype::f32, {3, 0}}});
    EXPECT_FALSE(k.empty());
    for (auto kind : {op::reduce_kind::mean, op::reduce_kind::max, op::reduce_kind::log_sum_exp,
                      op::reduce_kind::l2}) {
        compile(reduce_op(kind, {1}, false), {shape{dtype::f32, {3, 0}}});
        compile(reduce_op(kind, {1}, false), {shape{dtype::i32, {3, 0}}});
    }
    // No output elements: nothing to launch.
    const auto none = compile(sum, {shape{dtype::f32, {0, 5}}});
    EXPECT_TRUE(none.empty());
}

TEST(CudaReduceCodegen, IntegerTypesAndNoopWithEmptyAxes) {
    for (auto t : {dtype::i8, dtype::u8, dtype::i32, dtype::boolean, dtype::f64}) {
        compile(reduce_op(op::reduce_kind::max, {0}, false), {shape{t, {40, 3}}});
        compile(reduce_op(op::reduce_kind::prod, {1}, true), {shape{t, {3, 40}}});
    }
    op::reduce noop = reduce_op(op::reduce_kind::sum, {}, true);
    noop.noop_with_empty_axes = true;
    const auto k = compile(noop, {transposed_shape(dtype::f16, {5, 7}, {1, 0})});
    EXPECT_EQ(k.launch.grid[0], 1u);
}

TEST(CudaReduceSoftmax, InnerAndOuterAxesTransposedAndLog) {
    for (bool log : {false, true}) {
        const operation inner = op::softmax{.axis = 1, .log = log};
        const auto k = compile(inner, {shape{dtype::f32, {4, 100}}});
        EXPECT_EQ(k.launch.grid[0], 4u); // a block per row
        compile(inner, {shape{dtype::f16, {4, 100, 3}}});
        compile(inner, {transposed_shape(dtype::bf16, {4, 100, 3}, {2, 1, 0})});
        compile(inner, {shape{dtype::f64, {4, 100}}});
        const operation outer = op::softmax{.axis = 0, .log = log};
        compile(outer, {shape{dtype::f32, {7, 5000}}});
        // Short rows: a thread each.
        const operation last = op::softmax{.axis = 2, .log = log};
        const auto s = compile(last, {shape{dtype::f32, {64, 64, 10}}});
        EXPECT_EQ(s.launch.grid[0], 64u * 64 / 256);
    }
    const operation op = op::softmax{.axis = 1, .log = false};
    compile(op, {shape{dtype::f32, {4, 100}}}, strided(dtype::f32, {4, 100}, {1, 4}));
}

TEST(CudaReduceArg, MaxMinLastIndexKeepdimsAndTypes) {
    for (bool max : {true, false}) {
        for (bool last : {false, true}) {
            const operation op =
                op::arg_reduce{.max = max, .axis = 1, .keepdims = last, .select_last_index = last};
            const auto k = compile(op, {shape{dtype::f32, {6, 300}}});
            EXPECT_EQ(k.launch.grid[0], 6u);
            compile(op, {transposed_shape(dtype::f16, {6, 300, 5}, {2, 0, 1})});
            compile(op, {shape{dtype::i64, {6, 7}}});
        }
    }
    compile(op::arg_reduce{.max = true, .axis = 0, .keepdims = false},
            {shape{dtype::bf16, {50, 4}}});
}

op::layer_norm layer_norm_op(std::int64_t axis) {
    op::layer_norm ln;
    ln.axis = axis;
    ln.epsilon = 1e-5f;
    return ln;
}

TEST(CudaNormLayerNorm, WithAndWithoutBiasAcrossTypesAndLayouts) {
    const operation last = layer_norm_op(2);
    const shape x{dtype::f32, {4, 8, 512}};
    // Dense rows: layer_norm.cuh, 128 float4 vectors per row over a warp, two rows per block.
    const auto k = compile(last, {x, shape{dtype::f32, {512}}, shape{dtype::f32, {512}}});
    EXPECT_NE(k.code.find("cx_layer_norm<float, float, 512, 4, 32, 64, true, true>"),
              std::string::npos)
        << k.code;
    EXPECT_EQ(k.launch.grid[0], 16u);
    EXPECT_EQ(k.launch.block[0], 64u);
    // f64 and rows that are not dense: the general kernel, a block per row.
    const auto g = compile(last, {shape{dtype::f64, {4, 8, 512}}, shape{dtype::f64, {512}}});
    EXPECT_EQ(g.code.find("cx_layer_norm<"), std::string::npos);
    EXPECT_EQ(g.launch.grid[0], 32u);
    EXPECT_EQ(g.launch.block[0], 256u);
    compile(last, {x, shape{dtype::f32, {512}}});
    compile(last,
            {shape{dtype::f16, {4, 8, 512}}, shape{dtype::f16, {512}}, shape{dtype::f16, {512}}});
    compile(last, {shape{dtype::bf16, {4, 8, 512}}, shape{dtype::bf16, {512}}});
    compile(last, {shape{dtype::f64, {4, 8, 512}}, shape{dtype::f64, {512}}});
    // Several normalised axes; scale broadcast along one; bias of lower rank; transposed input.
    const operation two = layer_norm_op(1);
    compile(two, {transposed_shape(dtype::f32, {4, 8, 64}, {2, 0, 1}),
                  strided(dtype::f32, {1, 64}, {0, 1}), shape{dtype::f32, {64}}});
    compile(two, {x, shape{dtype::f32, {8, 512}}, shape{dtype::f32, {8, 512}}},
            transposed_shape(dtype::f32, {4, 8, 512}, {1, 2, 0}));
    // Short dense rows: a thread each, four float4 vectors.
    const auto s = compile(last, {shape{dtype::f32, {1000, 4, 16}}, shape{dtype::f32, {16}}});
    EXPECT_NE(s.code.find("cx_layer_norm<float, float, 16, 4, 1, 64, false, true>"),
              std::string::npos);
    EXPECT_EQ(s.launch.grid[0], (4000u + 63) / 64);
    // Short rows that are not dense: a thread each in the general kernel.
    const auto st = compile(
        last, {transposed_shape(dtype::f32, {1000, 4, 16}, {2, 0, 1}), shape{dtype::f32, {16}}});
    EXPECT_EQ(st.code.find("cx_layer_norm<"), std::string::npos);
    EXPECT_EQ(st.launch.grid[0], (4000u + 255) / 256);
    // Long rows: a block per row (f16 rows of 4096: 128 threads of four 8-element vectors);
    // odd lengths load one element at a time; rows whose strides are not multiples of a vector
    // narrow the vector; a row too long for registers takes the general kernel.
    const auto l = compile(last, {shape{dtype::f16, {2, 3, 4096}}, shape{dtype::f16, {4096}},
                                  shape{dtype::f16, {4096}}});
    EXPECT_NE(l.code.find("cx_layer_norm<cx_f16, cx_f16, 4096, 8, 128, 128, true, true>"),
              std::string::npos);
    EXPECT_EQ(l.launch.grid[0], 6u);
    const auto odd = compile(last, {shape{dtype::bf16, {2, 3, 77}}, shape{dtype::bf16, {77}}});
    EXPECT_NE(odd.code.find("cx_layer_norm<cx_bf16, cx_bf16, 77, 1, 32, 64, false, true>"),
              std::string::npos);
    const auto padded =
        compile(layer_norm_op(1), {strided(dtype::f16, {6, 64}, {66, 1}), shape{dtype::f16, {64}}});
    EXPECT_NE(padded.code.find("cx_layer_norm<cx_f16, cx_f16, 64, 2, 8, 64, false, true>"),
              std::string::npos);
    // RMS normalisation (not centred): the dense kernel without the mean's sum, and the general
    // kernel without its first pass.
    op::layer_norm rms = layer_norm_op(2);
    rms.centered = false;
    const auto r = compile(rms, {shape{dtype::f16, {4, 8, 512}}, shape{dtype::f16, {512}}});
    EXPECT_NE(r.code.find("cx_layer_norm<cx_f16, cx_f16, 512, 8, 16, 64, false, false>"),
              std::string::npos)
        << r.code;
    const auto rg = compile(
        rms, {transposed_shape(dtype::f32, {4, 8, 64}, {2, 0, 1}), shape{dtype::f32, {64}}});
    EXPECT_EQ(rg.code.find("cx_layer_norm<"), std::string::npos);
    EXPECT_EQ(rg.code.find("sum = sum + v"), std::string::npos) << rg.code;
    const auto huge =
        compile(last, {shape{dtype::f32, {1, 2, 200000}}, shape{dtype::f32, {200000}}});
    EXPECT_EQ(huge.code.find("cx_layer_norm<"), std::string::npos);
    // f32 scale and bias beside f16 or bf16 x (what --fp16 makes), dense and not.
    for (dtype t : {dtype::f16, dtype::bf16}) {
        const auto mixed = compile(
            last, {shape{t, {2, 3, 768}}, shape{dtype::f32, {768}}, shape{dtype::f32, {768}}});
        EXPECT_NE(mixed.code.find("cx_layer_norm<" + storage_type(t) + ", float, 768, 8"),
                  std::string::npos);
        compile(last, {transposed_shape(t, {2, 3, 64}, {2, 0, 1}), shape{dtype::f32, {64}}});
    }
    // A negative axis counts from the end.
    compile(layer_norm_op(-1), {x, shape{dtype::f32, {512}}});
}

// A slice aliases its input's memory: rows 4 elements past an aligned base load 4 f16 (8 bytes)
// at a time, not 8, whatever the rows' strides allow.
TEST(CudaNormLayerNorm, AnInputOffsetNarrowsTheVector) {
    const operation last = layer_norm_op(1);
    const shape x = strided(dtype::f16, {6, 64}, {128, 1}), scale{dtype::f16, {64}};
    const auto aligned = compile(last, {x, scale}, std::nullopt, {0, 0});
    EXPECT_NE(aligned.code.find("cx_layer_norm<cx_f16, cx_f16, 64, 8,"), std::string::npos);
    const auto offset = compile(last, {x, scale}, std::nullopt, {4, 0});
    EXPECT_NE(offset.code.find("cx_layer_norm<cx_f16, cx_f16, 64, 4,"), std::string::npos)
        << offset.code;
    const auto scale_offset = compile(last, {x, scale}, std::nullopt, {0, 3});
    EXPECT_NE(scale_offset.code.find("cx_layer_norm<cx_f16, cx_f16, 64, 1,"), std::string::npos);
}

op::pooling pool_op(op::pooling_mode mode, std::vector<std::size_t> lengths) {
    op::pooling p;
    p.mode = mode;
    p.lengths = std::move(lengths);
    return p;
}

TEST(CudaPoolCodegen, OneTwoAndThreeSpatialAxes) {
    for (auto mode : {op::pooling_mode::max, op::pooling_mode::average}) {
        const operation p1 = pool_op(mode, {3});
        const auto k = compile(p1, {shape{dtype::f32, {2, 3, 50}}});
        EXPECT_EQ(k.launch.grid[0], 2u); // 2 * 3 * 48 outputs, a thread each
        EXPECT_EQ(k.launch.block[0], 256u);
        op::pooling p2 = pool_op(mode, {3, 3});
        p2.stride = {2, 2};
        p2.padding = {1, 1, 1, 1};
        compile(p2, {shape{dtype::f16, {2, 8, 17, 17}}});
        op::pooling p3 = pool_op(mode, {2, 3, 2});
        p3.stride = {1, 2, 2};
        compile(p3, {shape{dtype::bf16, {1, 4, 6, 9, 9}}});
    }
}

TEST(CudaPoolCodegen, CeilModeCountIncludePadDilationAndChannelsLastStrides) {
    for (bool include_pad : {false, true}) {
        op::pooling avg = pool_op(op::pooling_mode::average, {3, 2});
        avg.stride = {2, 2};
        avg.padding = {1, 0, 1, 1};
        avg.ceil_mode = true;
        avg.count_include_pad = include_pad;
        compile(avg, {shape{dtype::f32, {2, 3, 10, 11}}});
        // An NHWC buffer read as NCHW.
        compile(avg, {transposed_shape(dtype::f16, {2, 3, 10, 11}, {0, 2, 3, 1})});
    }
    op::pooling dilated = pool_op(op::pooling_mode::max, {3, 3});
    dilated.dilation = {2, 3};
    dilated.padding = {2, 2, 2, 2};
    compile(dilated, {transposed_shape(dtype::f32, {2, 16, 20, 20}, {0, 2, 3, 1})});
    compile(dilated, {shape{dtype::i32, {2, 4, 20, 20}}});
    compile(pool_op(op::pooling_mode::average, {2}), {shape{dtype::i64, {2, 4, 20}}});
    // Channels last with dense channels: 16 bytes of channels a thread (ResNet-50's stem pool,
    // 64 f16 channels: 8 a thread); fewer where the channel count, a stride or the input's
    // offset does not allow 16 bytes; NCHW and f64 a channel a thread.
    op::pooling nhwc = pool_op(op::pooling_mode::max, {3, 3});
    nhwc.channels_last = true;
    nhwc.stride = {2, 2};
    nhwc.padding = {1, 1, 1, 1};
    const auto wide = compile(nhwc, {shape{dtype::f16, {2, 16, 16, 64}}});
    EXPECT_NE(wide.code.find("cx_packed<cx_f16, 8>"), std::string::npos) << wide.code;
    EXPECT_EQ(wide.launch.grid[0], (2u * 8 * 8 * 64 / 8 + 255) / 256);
    const auto f32 = compile(nhwc, {shape{dtype::f32, {2, 16, 16, 64}}});
    EXPECT_NE(f32.code.find("cx_packed<float, 4>"), std::string::npos);
    const auto twelve = compile(nhwc, {shape{dtype::bf16, {2, 16, 16, 12}}});
    EXPECT_NE(twelve.code.find("cx_packed<cx_bf16, 4>"), std::string::npos);
    const auto offset = compile(nhwc, {shape{dtype::f16, {2, 16, 16, 64}}}, std::nullopt, {2});
    EXPECT_NE(offset.code.find("cx_packed<cx_f16, 2>"), std::string::npos);
    const auto sliced =
        compile(nhwc, {strided(dtype::f16, {2, 16, 16, 64}, {16 * 16 * 65, 16 * 65, 65, 1})});
    EXPECT_NE(sliced.code.find("cx_packed<cx_f16, 1>"), std::string::npos);
    const auto f64 = compile(nhwc, {shape{dtype::f64, {2, 16, 16, 64}}});
    EXPECT_NE(f64.code.find("cx_packed<double, 1>"), std::string::npos);
    op::pooling nhwc_avg = nhwc;
    nhwc_avg.mode = op::pooling_mode::average;
    nhwc_avg.count_include_pad = true;
    EXPECT_NE(
        compile(nhwc_avg, {shape{dtype::f16, {2, 16, 16, 64}}}).code.find("cx_packed<cx_f16, 8>"),
        std::string::npos);
    // Global pooling: the window is the whole plane.
    compile(pool_op(op::pooling_mode::average, {7, 7}), {shape{dtype::f32, {2, 64, 7, 7}}},
            strided(dtype::f32, {2, 64, 1, 1}, {1, 2, 1, 1}));
}

op::convolution conv_op(std::vector<std::size_t> padding, std::vector<std::size_t> stride,
                        std::vector<std::size_t> dilation, std::size_t group,
                        bool channels_last = false) {
    op::convolution c;
    c.padding = std::move(padding);
    c.stride = std::move(stride);
    c.dilation = std::move(dilation);
    c.group = group;
    c.channels_last = channels_last;
    return c;
}

TEST(CudaDirectConv, OneTwoAndThreeDimensions) {
    const operation c1 = conv_op({1, 1}, {2}, {1}, 1);
    const auto k = compile(c1, {shape{dtype::f32, {2, 4, 30}}, shape{dtype::f32, {8, 4, 3}}});
    EXPECT_EQ(k.launch.grid[0], 1u); // 2 * 8 * 15 outputs, a thread each
    compile(conv_op({}, {}, {}, 1),
            {shape{dtype::f16, {1, 3, 12, 12}}, shape{dtype::f16, {5, 3, 3, 3}}});
    compile(conv_op({1, 0, 1, 1, 0, 1}, {1, 2, 1}, {1, 1, 2}, 1),
            {shape{dtype::bf16, {1, 2, 5, 9, 9}}, shape{dtype::bf16, {4, 2, 2, 3, 3}}});
}

TEST(CudaDirectConv, GroupedDepthwiseStridedDilatedPadded) {
    // Grouped, strided, padded.
    compile(conv_op({1, 1, 1, 1}, {2, 2}, {1, 1}, 2),
            {shape{dtype::f32, {2, 8, 15, 15}}, shape{dtype::f32, {6, 4, 3, 3}}});
    // Depthwise, dilated.
    compile(conv_op({2, 2, 2, 2}, {1, 1}, {2, 2}, 16),
            {shape{dtype::f16, {1, 16, 14, 14}}, shape{dtype::f16, {16, 1, 3, 3}}});
    // Asymmetric padding, f64 and an integer type.
    compile(conv_op({0, 1, 2, 0}, {1, 3}, {1, 1}, 1),
            {shape{dtype::f64, {1, 2, 9, 9}}, shape{dtype::f64, {3, 2, 2, 2}}});
    compile(conv_op({}, {}, {}, 1),
            {shape{dtype::i32, {1, 2, 9, 9}}, shape{dtype::i32, {3, 2, 2, 2}}});
}

TEST(CudaDirectConv, ChannelsLastBothWays) {
    for (auto t : {dtype::f32, dtype::f16, dtype::bf16}) {
        SCOPED_TRACE(std::string(to_string(t)));
        // The channels_last op: NHWC input, KRSC weights, NHWK output.
        const operation nhwc = conv_op({1, 1, 1, 1}, {1, 1}, {1, 1}, 2, true);
        compile(nhwc, {shape{t, {2, 10, 10, 8}}, shape{t, {6, 3, 3, 4}}});
        // ... writing into an NCHW-ordered output buffer.
        compile(nhwc, {shape{t, {2, 10, 10, 8}}, shape{t, {6, 3, 3, 4}}},
                transposed_shape(t, {2, 10, 10, 6}, {0, 3, 1, 2}));
        // The NCHW op over NHWC-ordered input and KRSC-ordered weights.
        const operation nchw = conv_op({1, 1, 1, 1}, {2, 2}, {1, 1}, 1);
        compile(nchw, {transposed_shape(t, {2, 8, 10, 10}, {0, 2, 3, 1}),
                       transposed_shape(t, {6, 8, 3, 3}, {0, 2, 3, 1})});
    }
    compile(conv_op({1, 1}, {1}, {1}, 1, true),
            {shape{dtype::f32, {2, 30, 4}}, shape{dtype::f32, {8, 3, 4}}});
}

TEST(CudaDirectDot, PlainBatchedBroadcastTransposedAndTypes) {
    const operation dot = op::dot{};
    const auto k = compile(dot, {shape{dtype::f32, {64, 32}}, shape{dtype::f32, {32, 48}}});
    EXPECT_EQ(k.launch.grid[0], 64u * 48 / 256);
    EXPECT_FALSE(uses_64bit_index(k));
    // Batch dims broadcast both ways and a missing batch axis.
    compile(dot, {shape{dtype::f32, {2, 1, 16, 8}}, shape{dtype::f32, {3, 8, 4}}});
    compile(dot, {shape{dtype::f16, {16, 8}}, shape{dtype::f16, {5, 8, 4}}});
    // Transposed operands, a broadcast (stride 0) operand, a transposed output.
    compile(dot, {transposed_shape(dtype::f32, {16, 8}, {1, 0}),
                  transposed_shape(dtype::f32, {8, 4}, {1, 0})});
    compile(dot, {strided(dtype::bf16, {3, 16, 8}, {0, 8, 1}), shape{dtype::bf16, {3, 8, 4}}},
            transposed_shape(dtype::bf16, {3, 16, 4}, {0, 2, 1}));
    // Integer and double accumulation; an empty inner dimension gives zeros.
    compile(dot, {shape{dtype::i32, {16, 8}}, shape{dtype::i32, {8, 4}}});
    compile(dot, {shape{dtype::i8, {16, 8}}, shape{dtype::i8, {8, 4}}});
    compile(dot, {shape{dtype::f64, {16, 8}}, shape{dtype::f64, {8, 4}}});
    const auto k0 = compile(dot, {shape{dtype::f32, {16, 0}}, shape{dtype::f32, {0, 4}}});
    EXPECT_FALSE(k0.empty());
    EXPECT_TRUE(compile(dot, {shape{dtype::f32, {0, 8}}, shape{dtype::f32, {8, 4}}}).empty());
}

TEST(CudaDirectDot, HugeOperandsUseA64BitIndex) {
    const operation dot = op::dot{};
    // A broadcast batch keeps element_space small; the output alone passes int32.
    const auto k = compile(dot, {strided(dtype::f16, {70000, 256, 128}, {0, 128, 1}),
                                 strided(dtype::f16, {70000, 128, 256}, {0, 256, 1})});
    EXPECT_TRUE(uses_64bit_index(k));
}

TEST(CudaResize, EveryModeCompilesForItsDtypes) {
    using enum op::resize_mode;
    for (auto mode : {linear, cubic})
        for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64}) {
            const auto k = compile(op::resize{.mode = mode,
                                              .coordinates = op::resize_coordinates::half_pixel,
                                              .scales = {1, 1, 2, 0.5},
                                              .out_lens = {1, 3, 8, 2}},
                                   {shape{t, {1, 3, 4, 4}}});
            // The batch and channel axes are not resized: no tables for them.
            EXPECT_EQ(k.code.find("_offset1"), std::string::npos);
            EXPECT_NE(k.code.find("_weight3"), std::string::npos);
        }
    for (dtype t : {dtype::f32, dtype::f16, dtype::i32, dtype::i64, dtype::u8, dtype::boolean}) {
        const auto k = compile(op::resize{.mode = nearest,
                                          .coordinates = op::resize_coordinates::asymmetric,
                                          .scales = {1, 1, 2, 3},
                                          .out_lens = {1, 2, 4, 6}},
                               {shape{t, {1, 2, 2, 2}}});
        EXPECT_EQ(k.code.find("_weight"), std::string::npos); // a copy, no arithmetic
    }
}

TEST(CudaResize, StridedOperandsExtrapolationAndAntialias) {
    // An NHWC input seen as NCHW, written into a transposed output.
    auto bilinear = op::resize{.mode = op::resize_mode::linear,
                               .coordinates = op::resize_coordinates::align_corners,
                               .scales = {1, 1, 2, 2},
                               .out_lens = {2, 3, 8, 8}};
    compile(bilinear, {transposed_shape(dtype::f16, {2, 3, 4, 4}, {0, 2, 3, 1})},
            transposed_shape(dtype::f16, {2, 3, 8, 8}, {0, 2, 3, 1}));
    auto crop = op::resize{.mode = op::resize_mode::nearest,
                           .coordinates = op::resize_coordinates::tf_crop_and_resize,
                           .scales = {1, 0.75},
                           .out_lens = {2, 3}};
    crop.roi = {0, 0.5, 1, 1.5};
    crop.extrapolation_value = 7;
    const auto k = compile(crop, {shape{dtype::i32, {2, 4}}});
    EXPECT_NE(k.code.find("_outside1"), std::string::npos);
    auto antialias = op::resize{.mode = op::resize_mode::cubic,
                                .coordinates = op::resize_coordinates::pytorch_half_pixel,
                                .scales = {0.25, 0.25},
                                .out_lens = {4, 4}};
    antialias.antialias = true;
    antialias.exclude_outside = true;
    compile(antialias, {strided(dtype::bf16, {16, 16}, {1, 16})});
}

} // namespace cuda_reduce_codegen_test
} // namespace conflux::cuda
