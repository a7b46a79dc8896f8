// The warp-specialised, persistent form of the wgmma GEMM kernel (_wgmma_ws configs; the
// generator's assembly is in src/cuda/codegen/gemm/gemm_kernel.cpp). The block's first
// warpgroup only copies operand tiles into a ring of shared-memory stages (cp.async, through the
// same loaders as every other GEMM kernel); the other warpgroups only multiply (wgmma) and store.
// The two sides hand stages to each other through mbarriers, not block-wide barriers, so the
// copies run as far ahead as the ring allows, and the block walks over output tiles (blockIdx.x,
// then every gridDim.x-th), so the copies of its next tile overlap the epilogue of this one.
//
// Two barriers per stage at `bars` (shared-state-space addresses, 8 bytes each):
//   full[s]  = bars + 8 s: completes once every producer thread's copies into stage s have
//              landed. Count: the producer threads, each arriving through
//              cp.async.mbarrier.arrive.noinc when its copies land; the consumers fence towards
//              the async proxy that wgmma reads through after their wait.
//   empty[s] = bars + 8 (STAGES + s): completes once every consumer warp's wgmma has finished
//              reading stage s. Count: the consumer warps; lane 0 arrives after the warpgroup's
//              wait.
// With a _tma config the producer is one thread: full[s] counts that thread's one arrival,
// which also sets the bytes the stage's TMA copies will bring (expect_tx); the phase completes
// when both have happened, so nobody fences or waits for copies by hand.
// The ring's iterations are counted over the block's whole tile walk, the same on both sides:
// iteration i uses stage i % STAGES for the (i / STAGES)-th time, so its full phase has parity
// (i / STAGES) & 1 and, from the second round on, the producer first waits for the empty phase
// of the round before.
#pragma once

#include "conflux/gemm.cuh"
#include "conflux/wgmma.cuh"

__device__ __forceinline__ void cx_mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void cx_mbar_arrive(unsigned bar) {
    asm volatile(
        "{\n.reg .b64 cx_state;\nmbarrier.arrive.shared::cta.b64 cx_state, [%0];\n}\n" ::"r"(bar)
        : "memory");
}

// Returns once the phase of parity `parity` has completed.
__device__ __forceinline__ void cx_mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{\n.reg .pred cx_p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 cx_p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, cx_p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

// A barrier among the consumer warps only (id 1; __syncthreads is id 0).
template <int THREADS> __device__ __forceinline__ void cx_ws_consumer_sync() {
    asm volatile("bar.sync 1, %0;\n" ::"n"(THREADS) : "memory");
}

// The register budget of a warpgroup from here on (setmaxnreg, sm_90a): the producers give
// registers back so that the consumers' accumulators fit. Every thread of the warpgroup runs it.
template <int REGS> __device__ __forceinline__ void cx_ws_release_registers() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS> __device__ __forceinline__ void cx_ws_claim_registers() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

template <int STAGES> __device__ __forceinline__ unsigned cx_ws_full(unsigned bars, int stage) {
    return bars + 8u * (unsigned)stage;
}
template <int STAGES> __device__ __forceinline__ unsigned cx_ws_empty(unsigned bars, int stage) {
    return bars + 8u * (unsigned)(STAGES + stage);
}

// One thread initialises the ring's barriers; the block-wide barrier after it publishes them.
template <int STAGES, int PRODUCERS, int CONSUMER_WARPS>
__device__ __forceinline__ void cx_ws_init(unsigned bars) {
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            cx_mbar_init(cx_ws_full<STAGES>(bars, s), PRODUCERS);
            cx_mbar_init(cx_ws_empty<STAGES>(bars, s), CONSUMER_WARPS);
        }
    }
    __syncthreads();
}

// The arrive of a producer thread on `bar` once all its cp.async copies issued so far have
// landed: the hardware arrives (noinc: the arrival is one of the barrier's expected count), so the
// thread goes on issuing the next stage's copies instead of waiting for these.
__device__ __forceinline__ void cx_mbar_arrive_on_copies(unsigned bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// The producer's walk over the ring for one output tile: for K-tiles 0 .. k_tiles - 1, once the
// iteration's stage is free (from the ring's second round on), fill(stage, kt, full barrier)
// copies the K-tile into it and announces it.
template <int STAGES, class Fill>
__device__ __forceinline__ void cx_ws_fill_ring(unsigned bars, int& it, int k_tiles, Fill&& fill) {
    for (int kt = 0; kt < k_tiles; ++kt, ++it) {
        const int stage = it % STAGES;
        if (it >= STAGES) cx_mbar_wait(cx_ws_empty<STAGES>(bars, stage), (it / STAGES - 1) & 1);
        fill(stage, kt, cx_ws_full<STAGES>(bars, stage));
    }
}

// The producer's share of one output tile: K-tiles copied into the ring by load(stage, kt),
// each stage announced full by the copies themselves landing (ASYNC: every copy is a cp.async).
// An operand copied through registers (elements too narrow for cp.async) is stored by the
// thread itself: then it waits for its copies, fences and arrives.
template <int STAGES, bool ASYNC, class Load>
__device__ __forceinline__ void cx_ws_produce_tile(unsigned bars, int& it, int k_tiles,
                                                   Load& load) {
    cx_ws_fill_ring<STAGES>(bars, it, k_tiles, [&](int stage, int kt, unsigned full) {
        load(stage, kt);
        if constexpr (ASYNC) {
            cx_mbar_arrive_on_copies(full);
        } else {
            cx_cp_async_commit();
            cx_cp_async_wait<0>();
            cx_fence_proxy_async();
            cx_mbar_arrive(full);
        }
    });
}

// After the producer's last tile: its copies land before it exits.
__device__ __forceinline__ void cx_ws_produce_drain() {
    cx_cp_async_wait<0>();
}

// The consumers' share of one output tile: multiply(stage) issues a stage's wgmma and waits
// until only that group is running (cx_wgmma_stage), so the stage before it is released then,
// and the last one after the final wait. ROLLED keeps the loop a loop whatever the count: a
// _pp warpgroup's loop over one to three K-tiles, unrolled, made ptxas insert warpgroup waits
// around its wgmma or serialise them (C7517-C7520); rolled, every _pp kernel compiles clean.
template <int STAGES, bool ROLLED = false, class Multiply>
__device__ __forceinline__ void cx_ws_consume_tile(unsigned bars, int& it, int k_tiles, int lane,
                                                   Multiply& multiply) {
    auto step = [&](int kt) {
        const int stage = it % STAGES;
        cx_mbar_wait(cx_ws_full<STAGES>(bars, stage), (it / STAGES) & 1);
        // The copies were made through the generic proxy, wgmma reads through the async one.
        cx_fence_proxy_async();
        multiply(stage);
        if (kt > 0 && lane == 0) cx_mbar_arrive(cx_ws_empty<STAGES>(bars, (it - 1) % STAGES));
    };
    if constexpr (ROLLED) {
        // The count hidden from the compiler: a loop of one K-tile is not dissolved either.
        int count = k_tiles;
        asm volatile("" : "+r"(count));
#pragma unroll 1
        for (int kt = 0; kt < count; ++kt, ++it)
            step(kt);
    } else {
        for (int kt = 0; kt < k_tiles; ++kt, ++it)
            step(kt);
    }
    cx_wgmma_wait<0>();
    if (k_tiles > 0 && lane == 0) cx_mbar_arrive(cx_ws_empty<STAGES>(bars, (it - 1) % STAGES));
}

// _pp (ping-pong): the two multiplying warpgroups take the block's tiles in turn, warpgroup
// q % 2 the q-th. Tile q's multiply starts once tile q - 1's has ended, so one warpgroup stores
// its tile while the other multiplies, and every iteration of the ring before tile q has been
// read when a warpgroup waits on tile q's first stage: its waits on the ring's parities cannot
// be fooled by a phase two rounds back. Named barriers 2 + g (warpgroup g waits: its 128
// threads sync, the other warpgroup's 128 arrive) and 4 + g (warpgroup g's own sync).
__device__ __forceinline__ void cx_pp_wait_turn(int group, int tile_of_block) {
    if (tile_of_block > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(2 + group) : "memory");
}

// After a warpgroup's multiply: the other one's turn, if it has a tile after this one.
__device__ __forceinline__ void cx_pp_pass_turn(int group, bool next_exists) {
    if (next_exists) asm volatile("bar.arrive %0, 256;\n" ::"r"(3 - group) : "memory");
}

__device__ __forceinline__ void cx_pp_group_sync(int group) {
    asm volatile("bar.sync %0, 128;\n" ::"r"(4 + group) : "memory");
}

// --- TMA (_tma configs) ---------------------------------------------------------------------

// A tensor map as the kernel receives it (const __grid_constant__): 128 opaque bytes the host
// encoded (cuTensorMapEncodeTiled); the copies name it by its generic address.
struct __align__(64) cx_tensor_map {
    unsigned long long opaque[16];
};

// Arrives on `bar` and adds `bytes` to the transactions its current phase waits for.
__device__ __forceinline__ void cx_mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("{\n.reg .b64 cx_state;\n"
                 "mbarrier.arrive.expect_tx.shared::cta.b64 cx_state, [%0], %1;\n}\n" ::"r"(bar),
                 "r"(bytes)
                 : "memory");
}

// One box of `map` at the coordinates (innermost first) into shared memory at `dst` (swizzled
// as the map says), completing `bytes` of `bar`'s transactions when it lands. Coordinates past
// the tensor's end read zeros.
__device__ __forceinline__ void cx_tma_load(unsigned dst, const cx_tensor_map& map, unsigned bar,
                                            int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(&map)), "r"(bar), "r"(c0), "r"(c1)
                 : "memory");
}
__device__ __forceinline__ void cx_tma_load(unsigned dst, const cx_tensor_map& map, unsigned bar,
                                            int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(&map)), "r"(bar), "r"(c0), "r"(c1),
                 "r"(c2)
                 : "memory");
}
__device__ __forceinline__ void cx_tma_load(unsigned dst, const cx_tensor_map& map, unsigned bar,
                                            int c0, int c1, int c2, int c3) {
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(&map)), "r"(bar), "r"(c0), "r"(c1),
                 "r"(c2), "r"(c3)
                 : "memory");
}
__device__ __forceinline__ void cx_tma_load(unsigned dst, const cx_tensor_map& map, unsigned bar,
                                            int c0, int c1, int c2, int c3, int c4) {
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];\n" ::"r"(dst),
                 "l"(reinterpret_cast<unsigned long long>(&map)), "r"(bar), "r"(c0), "r"(c1),
                 "r"(c2), "r"(c3), "r"(c4)
                 : "memory");
}

// Fetches the map's 128 bytes ahead of the first copy that reads it.
__device__ __forceinline__ void cx_tma_prefetch(const cx_tensor_map& map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(&map))
                 : "memory");
}

// The producer thread's share of one output tile: for each K-tile, once the stage is free, it
// announces the stage's BYTES and issues its boxes (load(stage, kt, full barrier)).
template <int STAGES, unsigned BYTES, class Load>
__device__ __forceinline__ void cx_ws_produce_tile_tma(unsigned bars, int& it, int k_tiles,
                                                       Load& load) {
    cx_ws_fill_ring<STAGES>(bars, it, k_tiles, [&](int stage, int kt, unsigned full) {
        cx_mbar_arrive_expect_tx(full, BYTES);
        load(stage, kt, full);
    });
}
