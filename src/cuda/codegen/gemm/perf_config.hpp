// A perf config names one variant of the generated GEMM / implicit-GEMM convolution kernel
// (gemm_kernel.hpp). Its text is what the problem cache stores and what --perf-config takes:
//
//   <M>x<N>x<K>_w<A>x<B>_s<S>_k<P>[_v<V>][_simt|_wgmma[_ws|_pp][_tma]]
//
//   M x N x K   the block's tile: rows of A / the output, columns of B / the output, and the
//               depth of one pipeline step along the reduction
//   wA x B      warps per block along M and along N (each warp owns an (M/A) x (N/B) sub-tile)
//   sS          shared-memory pipeline stages (cp.async multistage; >= 2)
//   kP          split-K: P blocks share one output tile, each reducing 1/P of K (see
//               gemm_kernel.hpp for how partial sums are combined)
//   vV          elements per global load of both operands (1, 2, 4, 8, 16; at most 16 bytes);
//               absent: each operand uses the widest its alignment allows
//   simt        plain FMA in the accumulator type instead of tensor cores: the path for f64,
//               integers and exact fp32
//   wgmma       Hopper's warpgroup MMA (sm_90a) instead of mma.sync, for f16 and bf16: every 4
//               consecutive warps along M form a warpgroup that multiplies its
//               (M / (A/4)) x (N / B) share of the tile straight from shared memory, the
//               tiles laid out in the swizzled form wgmma reads (gemm_wgmma_compute.cpp)
//   ws          (after wgmma) warp-specialised and persistent (kernels/gemm_ws.cuh): one more
//               warpgroup that only copies tiles into the S-stage ring, the A x B warps only
//               multiply and store, the stages handed over through mbarriers, and each block
//               walks over output tiles so that the next tile's copies overlap this one's
//               epilogue; split-K 1 only
//   pp          (after wgmma, instead of ws) the same producer and ring, the two multiplying
//               warpgroups taking whole tiles in turn so one stores while the other multiplies
//   tma         (after ws or pp) the producer is one thread issuing Hopper's tensor-memory
//               accelerator copies (cp.async.bulk.tensor) of both operand tiles, already
//               swizzled, through tensor maps the runtime encodes from the pointers; each stage
//               completes by its bytes arriving (mbarrier transaction count). Matrix products
//               whose operands are plain strided matrices only (valid() says why not)
//
// e.g. "128x128x32_w2x2_s3_k1", "64x64x16_w2x2_s2_k1_simt", "128x256x32_w2x4_s3_k2_v8",
// "128x256x64_w8x1_s4_k1_wgmma", "128x256x64_w8x1_s3_k1_wgmma_ws",
// "128x128x64_w8x1_s4_k1_wgmma_pp_tma".
//
// A depthwise convolution (one input channel per group) may also run on the depthwise kernel
// family (depthwise_kernel.hpp), whose configs read
//
//   dw_c<V>_o<O>[_r<R>]_t<T>
//
//   cV   channels per thread, loaded as one vector of V elements (1, 2, 4, 8; at most 16 bytes)
//   oO   outputs per thread along the innermost spatial axis (1 to 8): their input windows
//        overlap, so each input column is loaded once for all O
//   rR   (2-D convolutions) a block computes a tile of R output rows whose input window it
//        first copies into shared memory as f32, so the kernel rows' reads hit shared memory
//        instead of the caches (1 to 16); without it each thread reads its inputs directly
//   tT   threads per block (a multiple of 32, at most 1024)
//
// or, on tensor cores (f16 and bf16, 2-D, the columns' stride 1, (kernel width - 1) x the
// columns' dilation <= 8: each channel's kernel rows as Toeplitz matrices, depthwise_mma.cuh),
//
//   dw_mma_c<C>_r<R>_w<W>_t<T>[_p]
//
//   cC   channels per block (8, 16 or 32)
//   rR   output rows per block (8 or 16)
//   wW   output columns per block (16, 32 or 64)
//   tT   threads per block (64, 128 or 256; a warp takes C / (T / 32) channels whole)
//   _p   pipelined: as many blocks as the SMs hold, each walking several tiles and loading the
//        next tile's window into registers while it computes and stores the current one
//
// e.g. "dw_c8_o4_t128", "dw_c4_o4_r4_t256", "dw_mma_c16_r16_w32_t128". Both kinds live in one
// tuning space: the tuner times them side by side.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conflux::cuda {

struct gemm_problem;

enum class kernel_family { implicit_gemm, depthwise };

struct perf_config {
    unsigned tile_m = 128;
    unsigned tile_n = 128;
    unsigned tile_k = 32;
    unsigned warps_m = 2;
    unsigned warps_n = 2;
    unsigned stages = 3;
    unsigned split_k = 1;
    unsigned vector = 0; // 0: each operand's widest; depthwise: channels per thread
    bool simt = false;
    bool wgmma = false;
    bool warp_specialised = false; // _ws: a producer warpgroup more, persistent blocks
    // _pp (a form of _ws): the two multiplying warpgroups take alternate tiles whole, one
    // multiplying while the other stores (ping-pong), instead of sharing each tile.
    bool ping_pong = false;
    bool tma = false;           // _tma: the producer copies through TMA tensor maps
    unsigned outputs = 0;       // depthwise: outputs per thread along the innermost spatial axis
    unsigned block_threads = 0; // depthwise: threads per block
    unsigned tile_rows = 0;    // depthwise: output rows per block through shared memory (0: direct)
    bool tensor_cores = false; // depthwise: dw_mma (tile_rows, tile_cols, block_channels)
    unsigned tile_cols = 0;    // dw_mma: output columns per block
    unsigned block_channels = 0; // dw_mma: channels per block
    bool pipelined = false;      // dw_mma _p: blocks walk tiles, the next window in flight
    kernel_family family = kernel_family::implicit_gemm;

    bool is_depthwise() const { return family == kernel_family::depthwise; }
    // Whether f32 operands are rounded to tf32 (tensor cores): the SIMT and depthwise kernels
    // multiply in exact f32.
    bool rounds_f32_to_tf32() const { return !simt && !wgmma && !is_depthwise(); }
    unsigned threads() const {
        return is_depthwise() ? block_threads
                              : 32 * warps_m * warps_n + (warp_specialised ? producer_threads : 0);
    }
    // The producer warpgroup of a _ws config.
    static constexpr unsigned producer_threads = 128;
    friend bool operator==(const perf_config&, const perf_config&) = default;
};

// What the device offers a kernel; the defaults are an H100/H200's (sm_90).
struct gemm_device_limits {
    unsigned sm_count = 132;
    std::size_t shared_per_block = 227 * 1024; // the opt-in maximum of dynamic shared memory
    std::size_t shared_per_sm = 228 * 1024;
    // Warpgroup MMA (wgmma, sm_90a): only Hopper itself runs it, no later architecture.
    bool wgmma = true;
};

// Whether code for arch ("sm_90", "sm_90a", ...) can use wgmma: sm_90a's instructions run on
// compute capability 9.0 only.
bool arch_has_wgmma(std::string_view arch);

// nullopt for anything that is not exactly a config's text (no throw): every number a decimal
// without leading zeros, the optional fields in the order above, each at most once.
std::optional<perf_config> parse_perf_config(std::string_view text);
std::string to_string(const perf_config& c);

// Dynamic shared memory the kernel of c asks for on p: the pipeline's stages of both tiles.
std::size_t shared_bytes(const perf_config& c, const gemm_problem& p);

// Whether the kernel of c can run p on a device with these limits; when not and why is given,
// *why says which constraint failed, e.g. "pipeline needs 240 KiB of shared memory, the device
// allows 227 KiB".
bool valid(const perf_config& c, const gemm_problem& p, std::string* why = nullptr,
           const gemm_device_limits& limits = {});

// The configs worth trying on p, every one valid, ranked best-first by a simple model
// (candidate_configs.cpp): estimated time from wave quantisation over the device's SMs, the
// tile's arithmetic intensity, occupancy and split-K's extra traffic. Never empty: a small SIMT
// config runs every problem. A depthwise problem's depthwise configs (depthwise_kernel.hpp)
// come first, ranked by their own model.
std::vector<perf_config> candidate_configs(const gemm_problem& p,
                                           const gemm_device_limits& limits = {});

} // namespace conflux::cuda
