// The depthwise convolution kernel family (docs/ARCHITECTURE.md, "Kernel families"). A depthwise
// convolution (one input channel per group) is, as an implicit GEMM, one product per channel
// with N = the channel multiplier and K = the taps: the GEMM generator's tiles run almost
// empty. This kernel computes it directly, at memory speed where the tensors allow:
//   - each thread owns V consecutive channels (one vector load of V elements, channels last)
//     and O consecutive outputs along the innermost spatial axis; the O input windows overlap,
//     so each input column of a kernel row is loaded once and used for every output it feeds;
//   - a block's threads cover up to 32 channel vectors side by side (a warp's loads are
//     contiguous runs of channels) and block_threads / that many strips of outputs;
//   - the block's weights are copied once into shared memory as f32, tap-major, so a thread
//     reads its V weights of a tap as one or two 16-byte loads;
//   - tiled configs (_r<R>, 2-D only): a block computes R output rows x some strips x up to 64
//     bytes of channels, and first copies the input window those need into shared memory in
//     the input's type (zeros where the padding is), so every kernel row's reads are
//     shared-memory loads without bounds checks; the window's positions are padded apart so
//     that a warp's reads take the fewest bank wavefronts. Without the tile each thread reads
//     through the caches, and a 7x7 layer's reads miss L1 often enough to leave it latency-bound;
//   - tensor-core configs (dw_mma, f16 and bf16, 2-D): a block's window copied channel-major
//     into shared memory, each channel's kernel rows as Toeplitz matrices on mma.sync, and
//     outputs gathered per position before the epilogue (depthwise_mma.cuh says how, and how a
//     window with Inf or NaN in it falls back to exact f32 products); their pipelined form
//     (_p) has as many blocks as the SMs hold, each walking several spatial tiles of its
//     channels with the next tile's window loads in flight while it computes the current one;
//   - accumulation in f32 (f16, bf16 and f32 inputs), in the reference's tap order (the
//     tensor-core configs in the tensor cores' order);
//   - every output goes through the epilogue of gemm_kernel.hpp (the fused module's pointwise
//     part and layout tail, or the plain store), with b = 0, m = the output position over
//     [N, out spatial...] and n = the output channel, so fusion works as for the GEMM kernels.
//     The epilogue must be made for depthwise_epilogue_problem(p), which sees all channels as
//     one row: its vector form then covers V channels at once.
// Kernel parameters: (const S* in0 /* input */, const S* in1 /* weights */,
// <epilogue.parameters...>); grid and block in the kernel_source; dynamic shared memory
// shared_bytes (the weights).
#pragma once

#include "cuda/codegen/gemm/gemm_kernel.hpp"

#include <optional>
#include <string>
#include <vector>

namespace conflux::cuda {

// A convolution problem with one input channel per group (and more than one group) of f16,
// bf16 or f32: the problems the depthwise configs apply to.
bool is_depthwise(const gemm_problem& p);

// What the generator derives from a depthwise config and a problem; making it is where the
// constraints are checked, so valid() and the generator cannot disagree.
struct depthwise_plan {
    unsigned vector = 1;        // channels per thread
    unsigned outputs = 1;       // outputs per thread along the innermost spatial axis
    unsigned threads = 0;       // per block, as launched (block_vectors * block_strips)
    unsigned block_vectors = 0; // channel vectors side by side in a block
    unsigned block_strips = 0;  // output strips per block
    std::size_t channels = 0;   // output channels (groups * multiplier)
    std::size_t rows = 0;       // N * every out spatial extent but the innermost
    std::size_t strips = 0;     // per row: ceil(innermost out extent / outputs)
    std::size_t taps = 0;       // kernel elements
    // The distinct input columns a thread reads per kernel row, relative to its first:
    // {j * stride + t * dilation} over its outputs j and the row's taps t, ascending.
    std::vector<unsigned> columns;
    std::size_t shared_bytes = 0; // the block's weights, f32 (and a tiled block's window)
    unsigned grid_x = 0, grid_y = 0;
    // Tiled configs: a block's tile_rows x tile_strips strips of outputs; its input window of
    // window_rows x window_cols positions of the input's element type, `pitch` elements apart,
    // after the weights (window_offset bytes in); a warp's read of one column takes
    // read_wavefronts shared-memory wavefronts; the grid walks images x row tiles x column
    // tiles.
    unsigned tile_rows = 0, tile_strips = 0;
    std::size_t window_rows = 0, window_cols = 0, pitch = 0, window_offset = 0;
    std::size_t read_wavefronts = 0;
    std::size_t row_tiles = 0, col_tiles = 0;
    bool wide_offsets = false; // element offsets need 64 bits
    // dw_mma configs (depthwise_mma.cuh): block_channels x tile_rows x tile_cols outputs per
    // block; the window's row and plane pitches (elements) after weight_bytes of f32 weights,
    // the accumulators' (floats) over it.
    bool tensor_cores = false;
    unsigned block_channels = 0, tile_cols = 0;
    std::size_t window_plane = 0, stage_pitch = 0, stage_plane = 0, weight_bytes = 0;
    // images x row_tiles x col_tiles; pipelined dw_mma configs (_p): grid_x blocks walk even
    // runs of them down the columns of tiles, at least min_blocks of them resident per SM (the
    // registers' bound), each thread holding window_share items of the next window (16 bytes
    // of two positions each); the window's rows in a ring of `ring` row slots (a power of two),
    // the accumulators stage_offset bytes into shared memory.
    bool pipelined = false;
    std::size_t spatial_tiles = 0, ring = 0, stage_offset = 0;
    unsigned min_blocks = 1, window_share = 0;
};

// nullopt, with *why set when given, when config c cannot run p on a device with these limits.
std::optional<depthwise_plan> make_depthwise_plan(const perf_config& c, const gemm_problem& p,
                                                  const gemm_device_limits& limits,
                                                  std::string* why);

// The tensor-core config dw_mma_c<channels>_r<rows>_w<cols>_t<threads>[_p].
perf_config depthwise_mma_config(unsigned channels, unsigned rows, unsigned cols, unsigned threads,
                                 bool pipelined = false);

// The depthwise configs worth trying on p (every one valid), best first by a simple model:
// loads and multiply-adds per thread, times the waves of threads the device needs. Empty when
// p is not depthwise.
std::vector<perf_config> depthwise_candidates(const gemm_problem& p,
                                              const gemm_device_limits& limits = {});

// p as the epilogue of a depthwise kernel sees it: one group of every output channel (the
// kernel hands the epilogue whole vectors of channels, across groups).
gemm_problem depthwise_epilogue_problem(const gemm_problem& p);

// The kernel of depthwise config c for p; c must be valid for p (internal error otherwise).
kernel_source generate_depthwise_kernel(const gemm_problem& p, const perf_config& c,
                                        const gemm_epilogue& epilogue, const std::string& entry,
                                        const gemm_device_limits& limits = {});

} // namespace conflux::cuda
