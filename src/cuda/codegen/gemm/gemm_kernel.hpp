// The tensor-core GEMM / implicit-GEMM convolution kernel generator.
//
// One kernel computes every output tile of a gemm_problem (gemm_problem.hpp) with the variant
// a perf_config names (perf_config.hpp):
//   - each block owns a tile_m x tile_n output tile of one batch entry z (blocks are ordered in
//     groups of 8 tile rows so that neighbouring blocks share operand tiles in L2);
//   - the block's threads copy A's and B's tile_k-deep slices into a ring of `stages`
//     shared-memory buffers with cp.async (zero-filling past the matrix edges and the
//     convolution's padding), or element by element through registers where alignment allows
//     no 4-byte copy, so that stages - 1 slices are in flight while one is consumed;
//   - warps multiply from shared memory: ldmatrix (.trans for m/n-major tiles) feeding
//     mma.sync m16n8k16 (f16, bf16) or m16n8k8 (f32 rounded to tf32), accumulating in f32; or,
//     with _simt, plain FMA in the accumulator type (f32, f64 for f64, i64 for integers and
//     bool, integers wrapping like the reference target); or, with _wgmma (sm_90a, f16 and
//     bf16), warpgroups of four warps issue wgmma.mma_async on the swizzled stage through
//     matrix descriptors and wait for it one stage later, so stages - 2 slices are in flight
//     (gemm_wgmma_compute.cpp);
//   - every accumulated element is handed to the epilogue (below) with its coordinates: straight
//     from the registers (store_walk::direct), or, for coalesced stores, after the block has
//     parked its accumulators in shared memory (reusing the pipeline's buffer) and walks the
//     tile again with consecutive threads on consecutive columns (n_major) or rows (m_major),
//     so that a warp's stores land side by side in an output whose fastest axis is n or m.
//
// Kernel parameters, in order:
//   split_k == 1:  (const TA* in0, const TB* in1, <epilogue.parameters...>)
//   split_k  > 1:  (const TA* in0, const TB* in1, ACC* cx_workspace)
// in0 / in1 point at element 0 of A's and B's views (the input and the weights for a
// convolution), TA/TB being their storage types (types.cuh). The launch's dynamic shared
// memory is shared_bytes() (perf_config.hpp); above 48 KiB the caller must opt the kernel in
// (loaded_kernel does this when given launch.shared_bytes).
//
// Split-K: the epilogue is never applied to partial sums. Split s of P writes its partial
// result for (z, m, n) to cx_workspace[((s * batch + z) * M + m) * N + n] in the accumulator
// type ACC; every element of the workspace is written (a split with no work for a tile writes
// zeros), so the caller allocates split_k_workspace_bytes() and need not clear it. Then the
// finish kernel (generate_split_k_finish_kernel) sums the P partials of each element in split
// order (deterministic) and applies the epilogue:
//   (const ACC* cx_workspace, <epilogue.parameters...>)
// launched after the first on the same stream. Both kernels' launch dims are in their
// kernel_source.
#pragma once

#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"
#include "cuda/jit/kernel_source.hpp"

#include <string>
#include <vector>

namespace conflux::cuda {

// In which order the block hands its tile's elements to the epilogue (see above).
enum class store_walk { direct, n_major, m_major };

// What happens to each accumulated element: device code the caller supplies (the fused module's
// pointwise part and layout tail, fused_epilogue.hpp; or default_epilogue).
struct gemm_epilogue {
    // Extra kernel parameters after A and B, e.g. "const float* __restrict__ in2",
    // "cx_f16* __restrict__ out0".
    std::vector<std::string> parameters;
    // Their names, passed through to cx_epilogue, e.g. "in2", "out0".
    std::vector<std::string> arguments;
    // Device code placed before the kernel, defining
    //   __device__ __forceinline__ void cx_epilogue(ACC v, long long b, long long m,
    //                                               long long n, <parameters>)
    // which computes and stores the final value(s) of anchor element (b, m, n). ACC is
    // gemm_accumulator_type(problem.type): float for f16/bf16/f32, double for f64, long long for
    // integers and bool. dot: b = linear index over the output's batch axes (row-major), m row,
    // n column. convolution: b = 0, m = linear index over [N, out spatial...] (row-major),
    // n = output channel (over all groups: group * K/group + n within the group).
    // It is called once per element with m < M and n < N, never for partial sums.
    std::string code;
    // The first `inputs` parameters are read, the rest written (for listings only).
    std::size_t inputs = 0;
    // The walk the stores want. A staged walk whose shared memory does not fit the device falls
    // back to direct unless `walk_required` (can_fuse has checked that it fits).
    store_walk walk = store_walk::direct;
    bool walk_required = false;
    // lanes > 1 (n_major walks only): `code` also defines
    //   cx_epilogue_vec(const ACC* v, long long b, long long m, long long n, <parameters>)
    // for the elements n .. n + lanes - 1 of row m (n a multiple of lanes, N too), so a thread
    // reads one 16-byte chunk of the staged tile and the index arithmetic is shared.
    unsigned lanes = 1;
    // lanes > 1 and the epilogue reads vectors of other tensors: `code` also defines
    //   struct cx_epilogue_loads (those vectors),
    //   cx_epilogue_load(cx_epilogue_loads& cx_loads, long long b, long long m, long long n,
    //                    <parameters>), which reads a chunk's vectors into cx_loads, and
    //   cx_epilogue_vec_loaded(const ACC* v, const cx_epilogue_loads& cx_loads, long long b,
    //                          long long m, long long n, <parameters>), cx_epilogue_vec with them,
    // so that a walk can have several chunks' reads in flight (cx_gemm_staged_walk_batched).
    bool batched_loads = false;
};

// The shared memory a staged walk parks the block's accumulators in (0 for direct).
std::size_t staged_store_bytes(const gemm_problem& p, const perf_config& c, store_walk walk);

// The shared memory the kernel of c asks for with this walk: max(pipeline, staging), the staging
// reusing the pipeline's buffer after the K loop, except for a _ws config, whose producers fill
// the pipeline for the next tile while the consumers stage this one: pipeline + staging (_pp:
// a staging buffer for each warpgroup).
std::size_t kernel_shared_bytes(const gemm_problem& p, const perf_config& c, store_walk walk);

// "float", "double" or "long long": the type of the epilogue's v and of the split-K workspace.
std::string gemm_accumulator_type(dtype input);

// Stores v, converted with cx_store, at the output's (b, m, n) through its lens and strides.
// output: the anchor's output shape as the op has it (NCHW order for a convolution that is not
// channels_last), any strides. Parameter: "<storage type>* __restrict__ cx_epi_out0".
// (Defined in fused_epilogue.cpp: it is the fused epilogue of the module that returns the
// anchor.)
gemm_epilogue default_epilogue(const gemm_problem& p, const shape& output);

// Whether the kernel of c calls the epilogue itself (false for split-K: the finish kernel does,
// on complete sums only; so any epilogue, linear or not, is correct with every config).
bool applies_epilogue_in_kernel(const perf_config& c);

// The kernel of config c for problem p. c must be valid(c, p, ..., limits); an invalid config
// is an internal error naming the reason. kernel_source::inputs is 2 (A, B) and outputs the
// number of parameters after them. An empty problem (no output elements) gives a kernel that
// launches nothing; K = 0 gives one that stores epilogue(0) everywhere.
kernel_source generate_gemm_kernel(const gemm_problem& p, const perf_config& c,
                                   const gemm_epilogue& epilogue, const std::string& entry,
                                   const gemm_device_limits& limits = {});

// split_k > 1: the bytes of the workspace the caller passes to both kernels
// (split_k * batch * M * N accumulators); 0 for split_k == 1.
std::size_t split_k_workspace_bytes(const gemm_problem& p, const perf_config& c);

// split_k > 1: the kernel that sums the partials and applies the epilogue (one thread per
// output element).
kernel_source generate_split_k_finish_kernel(const gemm_problem& p, const perf_config& c,
                                             const gemm_epilogue& epilogue,
                                             const std::string& entry);

} // namespace conflux::cuda
