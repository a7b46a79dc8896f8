// Internal to the GEMM generator: the pieces of kernel text that gemm_kernel.cpp assembles.
// Names in generated code start with cx_; the kernel's locals every piece may use are
//   cx_tid, cx_lane, cx_warp        thread, lane and warp index
//   cx_z, cx_m0, cx_n0              batch entry and the block tile's first row and column
//   cx_a, cx_b                      A and B at batch entry z (storage-type pointers)
//   cx_smem, cx_smem_base           the dynamic shared memory (generic / shared address)
// and the shared memory holds all A stages first, then all B stages.
#pragma once

#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/codegen/gemm/kernel_plan.hpp"

#include <string>

namespace conflux::cuda::gemm {

struct codegen_context {
    const gemm_problem& problem;
    const kernel_plan& plan;
    std::string storage;     // element storage type, e.g. "cx_f16"
    std::string accumulator; // "float", "double", "long long"
    std::string offset_type; // "int", or "long long" when an offset may exceed int32
};

// The byte offset of element (outer, inner) in one stage of an operand's tile, swizzled:
// defines `__device__ __forceinline__ unsigned <name>(unsigned outer, unsigned inner)`.
std::string tile_offset_function(const std::string& name, const tile_plan& t,
                                 unsigned element_bytes);

// The copy of A's (is_a) or B's tiles from global to shared memory. `setup` declares the
// per-thread state (kernel scope, after cx_a / cx_b / cx_m0 / cx_n0); `load` is the body of
// a lambda of (int cx_slot, int cx_kt) that issues the copy of K-tile cx_kt into stage cx_slot.
struct loader_text {
    std::string definitions; // the operand's view for cx_tile_loader, before the kernel
    std::string setup;
    std::string load;
};
loader_text operand_loader(const codegen_context& c, bool is_a);

// The warps' multiply: `setup` declares the accumulators cx_acc and per-lane addressing;
// `tile` is the body of a lambda of (int cx_slot) that multiplies the tiles of one stage into
// cx_acc; `store` hands every accumulated element inside the matrix to `store_call`, a store
// format (fill_store_format) whose row and column are cx_offset-typed and within batch entry
// cx_z. `pair_store_call`, when not empty, stores the two elements of columns n and n + 1 at
// once (placeholders $V and $W for their values, $M and $N for the row and the even column n);
// the walks over register pairs use it where N is even, so a pair is inside the matrix whole.
struct compute_text {
    std::string functions; // device functions placed before the kernel (wgmma's instruction)
    std::string setup;
    std::string tile;
    std::string finish; // after the K loop, before the store (wgmma: the last wait)
    std::string store;
};
compute_text warp_compute(const codegen_context& c, const std::string& store_call,
                          const std::string& pair_store_call = "");
// The same for a _wgmma config (gemm_wgmma_compute.cpp); warp_compute dispatches to it.
compute_text wgmma_compute(const codegen_context& c, const std::string& store_call,
                           const std::string& pair_store_call);

// The walk over accumulators laid out as 16x8 blocks (mma.sync's C, each wgmma m64 block per
// warp), as an instantiation of cx_gemm_fragment_store (gemm.cuh): for mi < frag_m,
// ni < frag_n, h < 2, thread (cx_g, cx_t) stores the values `value` names (mi, ni, h and $E,
// the column within the pair: " + e") at row `row0` + `row_step` mi + cx_g + 8h and column
// cx_n0 + `col0` + 8 ni + 2 cx_t, those inside the matrix, through `store_call` (or both
// columns through `pair_store_call`, see warp_compute).
std::string fragment_store(const codegen_context& c, const std::string& store_call,
                           const std::string& pair_store_call, unsigned frag_m, unsigned frag_n,
                           unsigned row_step, const std::string& row0, const std::string& col0,
                           const std::string& value);

// A store format is a statement with the placeholders $V, $M and $N for the value and the row
// and column it stores. Returns it with every occurrence of each placeholder replaced by `v`,
// `m` and `n` (C++ expressions, which hold no placeholder). A format that lacks one of the
// placeholders would drop a value: an internal error.
std::string fill_store_format(const std::string& format, const std::string& v, const std::string& m,
                              const std::string& n);

} // namespace conflux::cuda::gemm
