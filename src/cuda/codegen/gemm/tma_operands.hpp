// How a _tma config's producer copies an operand tile: one TMA box per swizzle block of the
// shared tile (tile_plan's layout is the hardware's swizzle, so the box lands exactly where the
// wgmma descriptors read it), through a tensor map over the operand's view:
//   axis 0  the operand's contiguous axis (k for a k-major tile, m or n for an mn-major one)
//   axis 1  the tile's other axis (the tile's `outer` rows)
//   2..     the batch axes the operand does not broadcast (at most three)
// Only products whose operands are such strided views qualify: matrix products, and 1x1
// convolutions with stride 1, no padding and one group over evenly spaced pixels (their input
// is an M x C matrix; every other convolution gathers it, im2col). TMA needs 16-byte aligned
// starts and strides, nested strides (each axis's stride covers the one before it), and boxes
// of at most 256 rows.
#pragma once

#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/codegen/gemm/kernel_plan.hpp"
#include "cuda/jit/kernel_source.hpp"

#include <optional>
#include <string>
#include <vector>

namespace conflux::cuda::gemm {

struct tma_operand {
    tensor_map_spec map;
    // The batch axes of gemm_problem::batch_lens that are map axes 2, 3, ... (in that order).
    std::vector<std::size_t> batch_axes;
    unsigned boxes = 1;     // swizzle blocks per stage: one load each
    unsigned box_inner = 0; // elements of the contiguous axis per box
    unsigned box_bytes = 0; // bytes one box copies
};

// The map and boxes of A's (is_a) or B's tile, or nullopt with *why set.
std::optional<tma_operand> plan_tma_operand(const gemm_problem& p, const tile_plan& t, bool is_a,
                                            std::string* why);

} // namespace conflux::cuda::gemm
