// Everything the GEMM kernel generator derives from a perf config and a problem before writing
// code: how the block's threads copy each operand's tile into shared memory, the shared-memory
// layout, the fragment shapes. Making the plan is the one place the kernel's constraints are
// checked, so valid() (perf_config.hpp) and the generator cannot disagree.
#pragma once

#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"

#include <cstddef>
#include <optional>
#include <string>

namespace conflux::cuda::gemm {

// One operand's tile in shared memory, per pipeline stage: `outer` rows of `inner` elements,
// inner being the operand's contiguous axis (k for a k-major tile, m or n for an mn-major one).
// Rows are swizzled in 16-byte chunks: chunk c of row r is stored at chunk c ^ swizzle(r),
// swizzle(r) = (r / swizzle_div) % swizzle_mod, so that the eight rows one ldmatrix reads (and
// the eight of a SIMT column) fall into distinct banks whatever the row length.
struct tile_plan {
    operand_major major = operand_major::k;
    unsigned rows = 0;      // of the GEMM: tile_m for A, tile_n for B
    unsigned outer = 0;     // rows of the shared tile
    unsigned inner = 0;     // elements per row of the shared tile
    unsigned row_bytes = 0; // inner * element size (a multiple of 16)
    unsigned swizzle_div = 1;
    unsigned swizzle_mod = 1;
    // wgmma tiles: rows longer than the swizzle width are cut into blocks of block_bytes,
    // stored one after the other (block b of every row, then block b + 1): element (o, i) is
    // at (i * size / block_bytes) * outer * block_bytes + o * block_bytes + the swizzled
    // position inside the block. Equal to row_bytes for every other tile (one block).
    unsigned block_bytes = 0;
    std::size_t stage_bytes = 0;
    unsigned vector = 1;           // elements per global load along `inner`
    bool async = false;            // cp.async (vector bytes 4, 8 or 16); else through registers
    unsigned loads_per_thread = 0; // vectors each thread copies per stage (last may be partial)
    bool loads_exact = true;       // every thread's last load is inside the tile
};

struct kernel_plan {
    perf_config config;
    unsigned threads = 0;
    // Threads that copy the operand tiles and threads that multiply and store: all of the block,
    // or for a _ws config the producer warpgroup (threads 0-127) and the warps after it.
    unsigned load_threads = 0, compute_threads = 0;
    // _ws with two or more multiplying warpgroups: the registers each side keeps (setmaxnreg),
    // 0 when every thread keeps what the launch bounds give.
    unsigned producer_registers = 0, consumer_registers = 0;
    unsigned element_bytes = 0;
    bool mma = false;    // tensor cores (else SIMT FMA)
    bool wgmma = false;  // warpgroup MMA from swizzled shared memory (else mma.sync)
    bool tf32 = false;   // f32 inputs on tensor cores
    unsigned k_step = 0; // mma K (16, or 8 for tf32); 1 for SIMT
    unsigned warp_tile_m = 0, warp_tile_n = 0;
    unsigned frag_m = 0, frag_n = 0;     // mma: 16x8 tiles per warp; SIMT: elements per thread;
                                         // wgmma: m64 instructions and 8-column blocks per group
    unsigned groups_m = 0, groups_n = 0; // wgmma: warpgroups along M and N (_pp: 1 and 1,
                                         // each of its two warpgroups computing whole tiles)
    unsigned group_tile_m = 0, group_tile_n = 0; // wgmma: each warpgroup's share of the tile
    tile_plan a, b;
    std::size_t shared_bytes = 0;
    std::size_t k_tiles = 0;           // tiles of tile_k along K
    std::size_t k_tiles_per_split = 0; // each split's share (the last may have fewer)
    std::size_t tiles_m = 0, tiles_n = 0, blocks = 0;
    // Blocks launched: one per output tile (and split), or for a _ws config at most one per SM,
    // each walking over the tiles. The ring's barriers (_ws) follow the stages in shared memory.
    std::size_t grid = 0;
    std::size_t barrier_bytes = 0;
};

// nullopt with *why set when the kernel cannot run the problem with this config.
std::optional<kernel_plan> make_kernel_plan(const perf_config& c, const gemm_problem& p,
                                            const gemm_device_limits& limits, std::string* why);

// "48 KiB", or "1000 bytes" when not a whole number of KiB: shared memory in reasons.
std::string kib(std::size_t bytes);

// Whether the tensor-core path supports this input type (f16, bf16, f32 as tf32).
bool mma_supports(dtype t);

} // namespace conflux::cuda::gemm
