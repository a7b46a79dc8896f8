// The warp-level tensor-core product mma.sync (m16n8k16 for f16 and bf16, m16n8k8 for tf32)
// with f32 accumulators: d += a * b on one 16x8 tile. Register layouts are the PTX ISA's, with
// g = lane / 4 and t = lane % 4:
//   A (16x16, 16-bit): a0 = row g, cols 2t..2t+1; a1 = row g+8; a2 = cols +8; a3 = both
//   B (16x8, 16-bit):  b0 = rows (k) 2t..2t+1, col (n) g; b1 = rows +8
//   A (16x8, tf32):    a0 = (g, t); a1 = (g+8, t); a2 = (g, t+4); a3 = (g+8, t+4)
//   B (8x8, tf32):     b0 = (k t, n g); b1 = (k t+4, n g)
//   C (16x8, f32):     c0, c1 = row g, cols 2t, 2t+1; c2, c3 = row g+8
// Under the host emulator (tests/unit/kernel_emulation_shim.hpp) the 16-bit forms are computed
// from the same layouts, every lane's fragments exchanged through a per-warp buffer, so that a
// kernel's fragment indexing can be checked without a GPU (the sums in f32, k in order; the
// tensor cores' own order differs within rounding).
#pragma once

#include "conflux/types.cuh"

#ifdef CX_HOST_EMULATION

// Each lane's a0..a3, b0, b1, per warp of the block being run.
inline unsigned cx_mma_emulation_fragments[32][32][6];

template <float (*widen)(unsigned short)>
inline void cx_mma_emulated(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 32;
    unsigned(&mine)[6] = cx_mma_emulation_fragments[warp][lane];
    for (int i = 0; i < 4; ++i)
        mine[i] = a[i];
    mine[4] = b[0], mine[5] = b[1];
    __syncwarp();
    // Element (row, k) of A and (k, n) of B, from the lane and register that hold it.
    auto half = [&](unsigned from_lane, int reg, int k) {
        const unsigned word = cx_mma_emulation_fragments[warp][from_lane][reg];
        return widen(static_cast<unsigned short>(k % 2 ? word >> 16 : word & 0xffffu));
    };
    auto a_at = [&](unsigned row, int k) {
        return half(row % 8 * 4 + unsigned(k % 8 / 2), (row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0), k);
    };
    auto b_at = [&](int k, unsigned n) { return half(n * 4 + unsigned(k % 8 / 2), 4 + k / 8, k); };
    const unsigned g = lane / 4, t = lane % 4;
    for (int e = 0; e < 4; ++e) {
        const unsigned row = g + (e >= 2 ? 8 : 0), n = 2 * t + unsigned(e % 2);
        float sum = 0.0f;
        for (int k = 0; k < 16; ++k)
            sum += a_at(row, k) * b_at(k, n);
        d[e] += sum;
    }
    __syncwarp(); // every lane has read the buffer before the next product writes it
}
inline void cx_mma_f16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    cx_mma_emulated<cx_f16_to_float>(d, a, b);
}
inline void cx_mma_bf16(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    cx_mma_emulated<cx_bf16_to_float>(d, a, b);
}

#else

__device__ __forceinline__ void cx_mma_f16(float (&d)[4], const unsigned (&a)[4],
                                           const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void cx_mma_bf16(float (&d)[4], const unsigned (&a)[4],
                                            const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void cx_mma_tf32(float (&d)[4], const unsigned (&a)[4],
                                            const unsigned (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

#endif

// The 16-bit product for element type S, chosen by a pointer tag (templates over cx_f16 and
// cx_bf16 pass static_cast<const S*>(nullptr)).
__device__ __forceinline__ void cx_mma_16(float (&d)[4], const unsigned (&a)[4],
                                          const unsigned (&b)[2], const cx_f16*) {
    cx_mma_f16(d, a, b);
}
__device__ __forceinline__ void cx_mma_16(float (&d)[4], const unsigned (&a)[4],
                                          const unsigned (&b)[2], const cx_bf16*) {
    cx_mma_bf16(d, a, b);
}
