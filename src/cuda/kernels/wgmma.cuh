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
