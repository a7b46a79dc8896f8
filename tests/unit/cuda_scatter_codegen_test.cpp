// The scatter generators: every kernel compiles with NVRTC for sm_90 (no GPU needed) for each
// reduction, dtype and strided operands; a thread per column, updates applied in a loop in their
// order, indices read through cx_gather_index so that an out-of-range one fails the run.
// Results are checked against the reference target on a GPU machine (tests/gpu/op_test.cpp).
#include "conflux/ops/scatter.hpp"
#include "cuda/codegen/generator.hpp"
#include "unit/expect_compiles.hpp"

#include <gtest/gtest.h>

namespace conflux::cuda {
namespace cuda_scatter_codegen_test {

using op::scatter_reduction;

constexpr scatter_reduction all_reductions[] = {scatter_reduction::none, scatter_reduction::add,
                                                scatter_reduction::mul, scatter_reduction::max,
                                                scatter_reduction::min};

kernel_source generate(const operation& op, const std::vector<shape>& inputs, const shape& output) {
    static int serial = 0;
    kernel_request r{&op, inputs, {output}, {}, "cx_scatter_test_" + std::to_string(serial++)};
    return generate_kernel(r);
}

TEST(CudaScatterCodegen, EveryReductionAndDtypeCompiles) {
    std::vector<kernel_source> kernels;
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::i32, dtype::i64,
                    dtype::i8, dtype::u8, dtype::boolean}) {
        for (auto red : all_reductions) {
            // Data [4, 3, 5] read transposed, rows of 2 indices (i32, strided), slices of 5.
            const operation nd = op::scatter_nd{red};
            kernels.push_back(
                generate(nd,
                         {shape{t, {4, 3, 5}, {1, 4, 12}}, shape{dtype::i32, {2, 3, 2}, {1, 2, 6}},
                          shape{t, {2, 3, 5}, {15, 1, 3}}},
                         shape{t, {4, 3, 5}, {1, 4, 12}}));
            // Indices smaller than the data outside the axis, updates strided.
            const operation el = op::scatter_elements{1, red};
            kernels.push_back(generate(el,
                                       {shape{t, {3, 4, 2}}, shape{dtype::i64, {2, 5, 2}},
                                        shape{t, {2, 5, 2}, {1, 2, 10}}},
                                       shape{t, {3, 4, 2}}));
        }
    }
    expect_compiles(kernels);
}

TEST(CudaScatterCodegen, OneThreadPerColumnLoopingOverTheUpdatesInOrder) {
    const operation nd = op::scatter_nd{scatter_reduction::add};
    const auto k = generate(
        nd, {shape{dtype::f32, {6, 7, 8}}, shape{dtype::i64, {5, 1}}, shape{dtype::f32, {5, 7, 8}}},
        shape{dtype::f32, {6, 7, 8}});
    EXPECT_EQ(k.launch.grid[0], 1u); // 56 columns of 6 elements, one block
    EXPECT_NE(k.code.find("for (cx_index q = 0; q < 5; ++q)"), std::string::npos) << k.code;
    EXPECT_NE(k.code.find("cx_gather_index("), std::string::npos) << k.code;
    const operation el = op::scatter_elements{0, scatter_reduction::none};
    const auto e = generate(
        el, {shape{dtype::f32, {600, 4}}, shape{dtype::i64, {9, 3}}, shape{dtype::f32, {9, 3}}},
        shape{dtype::f32, {600, 4}});
    EXPECT_EQ(e.launch.grid[0], 1u); // 4 columns of 600
    EXPECT_NE(e.code.find("for (cx_index n = 0; n < 9; ++n)"), std::string::npos) << e.code;
    EXPECT_NE(e.code.find("if (!(c1 < 3)) return;"), std::string::npos) << e.code;
    expect_compiles({k, e});
}

TEST(CudaScatterCodegen, EmptyOutputsAndEmptyUpdates) {
    const operation nd = op::scatter_nd{};
    const auto empty = generate(
        nd, {shape{dtype::f32, {0, 3}}, shape{dtype::i64, {0, 1}}, shape{dtype::f32, {0, 3}}},
        shape{dtype::f32, {0, 3}});
    EXPECT_EQ(empty.launch.grid[0], 0u);
    // No update rows: the kernel is a copy.
    const auto copy = generate(
        nd, {shape{dtype::f32, {4, 3}}, shape{dtype::i64, {0, 1}}, shape{dtype::f32, {0, 3}}},
        shape{dtype::f32, {4, 3}});
    EXPECT_EQ(copy.code.find("cx_gather_index("), std::string::npos) << copy.code;
    const operation el = op::scatter_elements{0};
    const auto no_updates = generate(
        el, {shape{dtype::f32, {4, 3}}, shape{dtype::i64, {2, 0}}, shape{dtype::f32, {2, 0}}},
        shape{dtype::f32, {4, 3}});
    EXPECT_EQ(no_updates.code.find("cx_gather_index("), std::string::npos) << no_updates.code;
    expect_compiles({empty, copy, no_updates});
}

} // namespace cuda_scatter_codegen_test
} // namespace conflux::cuda
