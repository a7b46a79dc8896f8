// Hopper warpgroup MMA (wgmma, sm_90a) for the generated GEMM kernels of _wgmma configs
// (src/cuda/codegen/gemm/gemm_wgmma_compute.cpp). Inline PTX only, like gemm.cuh.
//
// A warpgroup is 4 consecutive warps starting at a warp index divisible by 4. One
// wgmma.mma_async m64nNk16 multiplies a 64x16 tile of A by a 16xN tile of B, both read from
// shared memory through 64-bit matrix descriptors, into 64xN f32 accumulators spread over the
// warpgroup's 128 threads: warp q of the group holds rows 16q..16q+15 and, for each 8-column
// block j, thread (g = lane / 4, t = lane % 4) holds d[4j + 0, 1] = (row g, cols 8j + 2t, +1)
// and d[4j + 2, 3] = (row g + 8, the same cols): per 16x8 block the layout of mma.sync's C.
//
// Shared-memory layout the descriptors describe (PTX ISA, "Shared Memory Matrix Layout"): an
// operand tile is stored as blocks of rows of W bytes (W = 32, 64 or 128: the swizzle width),
// the 16-byte chunk c of row r at chunk c ^ ((r / (128 / W)) % (W / 16)), which is the
// hardware's swizzle when every block starts on an 8-row (8 W bytes) boundary. The descriptor
// names the start address, the byte stride between 8-row groups (SBO) and, for M/N-major
// tiles wider than one block, the byte stride between blocks along M or N (LBO).
#pragma once

// The descriptor of a swizzled tile at shared-state-space address `address`.
// swizzle_bytes: 128, 64 or 32.
__device__ __forceinline__ unsigned long long cx_wgmma_desc(unsigned address, unsigned lbo,
                                                            unsigned sbo, unsigned swizzle_bytes) {
    const unsigned long long mode = swizzle_bytes == 128 ? 1ull : swizzle_bytes == 64 ? 2ull : 3ull;
    return (unsigned long long)((address & 0x3FFFFu) >> 4) |
           ((unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16) |
           ((unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32) | (mode << 62);
}

// Orders this thread's earlier register writes (the accumulators' zeroing, the epilogue's
// reads) before the warpgroup's next wgmma reads them.
__device__ __forceinline__ void cx_wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void cx_wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most PENDING of the warpgroup's committed wgmma groups are still running.
template <int PENDING> __device__ __forceinline__ void cx_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// Shared memory written through the generic proxy (cp.async, ordinary stores) becomes visible
// to the async proxy that wgmma reads through: each writing thread fences before the barrier.
__device__ __forceinline__ void cx_fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The shared-state-space address where the share of an operand tile that starts at tile row
// (A) or column (B) `first` begins at k-step ks (16 deep) of the stage at `stage`. The tile is
// stored as blocks of W-byte rows, REGION bytes per block column. K-major: block (32 ks) / W of
// the row region plus the rest of the 16-deep slice's bytes inside the block (the hardware
// applies the swizzle to the address bits, so an offset inside a 1024-byte pattern is read
// correctly); M/N-major: the block holding the share's first row plus 16 ks rows of W bytes.
template <bool K_MAJOR, unsigned W, unsigned REGION, unsigned ELEMENT_BYTES>
__device__ __forceinline__ unsigned cx_wgmma_share(unsigned stage, unsigned first, unsigned ks) {
    if constexpr (K_MAJOR) {
        const unsigned depth = ks * (16u * ELEMENT_BYTES);
        return stage + depth / W * REGION + first * W + depth % W;
    } else {
        const unsigned bytes = first * ELEMENT_BYTES;
        return stage + bytes / W * REGION + ks * (16u * W) + bytes % W;
    }
}

// The descriptor of such a share: LBO 16 bytes for a K-major tile, one block column for an
// M/N-major one; SBO 8 rows of W bytes; W's swizzle.
template <bool K_MAJOR, unsigned W, unsigned REGION>
__device__ __forceinline__ unsigned long long cx_wgmma_share_desc(unsigned address) {
    return cx_wgmma_desc(address, K_MAJOR ? 16u : REGION, 8u * W, W);
}

// One stage of a warpgroup's multiply: TILE_K / 16 k-steps, each FRAG_M m64 instructions
// (tile(mi, a, b) issues one on accumulator block mi) on the rows from gm0 and the columns from
// gn0 of the stage's A and B tiles, then committed. The wait leaves this stage's group running
// and makes the previous stage's done: the kernel's loop refills that stage only after its next
// barrier.
template <unsigned TILE_K, unsigned FRAG_M, bool A_K_MAJOR, unsigned A_W, unsigned A_REGION,
          bool B_K_MAJOR, unsigned B_W, unsigned B_REGION, unsigned ELEMENT_BYTES, class Tile>
__device__ __forceinline__ void cx_wgmma_stage(unsigned a_stage, unsigned b_stage, unsigned gm0,
                                               unsigned gn0, Tile&& tile) {
    cx_wgmma_fence();
#pragma unroll
    for (unsigned ks = 0; ks < TILE_K / 16; ++ks) {
        const unsigned long long b = cx_wgmma_share_desc<B_K_MAJOR, B_W, B_REGION>(
            cx_wgmma_share<B_K_MAJOR, B_W, B_REGION, ELEMENT_BYTES>(b_stage, gn0, ks));
#pragma unroll
        for (unsigned mi = 0; mi < FRAG_M; ++mi)
            tile(mi,
                 cx_wgmma_share_desc<A_K_MAJOR, A_W, A_REGION>(
                     cx_wgmma_share<A_K_MAJOR, A_W, A_REGION, ELEMENT_BYTES>(a_stage,
                                                                             gm0 + mi * 64u, ks)),
                 b);
    }
    cx_wgmma_commit();
    cx_wgmma_wait<1>();
}
