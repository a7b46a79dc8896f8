// Fused attention on Hopper's warpgroup MMA (wgmma, sm_90a): the same algorithm and results as
// cx_attention (attention.cuh: online softmax in f32, scores never in memory), for head dims of
// 64 or 128. Included by the kernels attention_codegen writes for _wgmma configs; they define
// the shape struct CFG (as for cx_attention, with WARPS = 4 per warpgroup, MT = 1 and
// PIPELINED) and two
// instructions (wgmma_text): cx_attention_mma_s (m64 x BC x k16, q and k from shared memory)
// and cx_attention_mma_o (m64 x DVP x k16, the probabilities from registers, v from shared
// memory, N-major).
//
// Warpgroup w of the block owns query rows 64w..64w+63, its warp q rows 16q..16q+15 of those,
// with the accumulators in mma.sync's C layout, so the softmax step and the final store are
// cx_attention's (online_softmax, store_rows) and the probabilities become the next product's
// A operand in registers without moving. Per tile of BC keys: S = q . k^T as DP / 16 wgmma
// reading both tiles from shared memory, softmax, O = O * alpha + P . V as BC / 16 wgmma with
// P in registers. CFG::PIPELINED (the _wgmma_pipe configs) runs the softmax of one tile while
// the previous tile's P . V runs, the keys copied one tile ahead of the values; otherwise one
// tile at a time. Key and value tiles are double-buffered through cp.async.
//
// Shared memory holds every tile (q, k and v alike) as regions of 64 columns, each row 128
// bytes with the 16-byte chunks swizzled (chunk c of row r at c ^ (r % 8)): wgmma's 128-byte
// swizzle, read as K-major for q and k and as N-major for v (wgmma.cuh).
#pragma once

namespace cx_attention_detail {

// Byte offset of the 16-byte chunk holding columns 8c..8c+7 of row r in a swizzled tile of
// ROWS rows.
template <int ROWS> __device__ __forceinline__ unsigned swizzled_chunk(int r, int c) {
    return unsigned(c / 8) * (ROWS * 128u) + unsigned(r) * 128u +
           unsigned(((c % 8) ^ (r % 8)) * 16);
}

// Copies a ROWS x COLS tile (row r, column c at src + r * row_stride + c * col_stride; rows
// past valid_rows zero) into the swizzled layout at shared address dst, with the block's THREADS
// threads: cp.async 16 bytes at a time where the source allows it, element by element otherwise.
// The caller commits, waits and fences for the async proxy.
//
// In the 16-byte form each thread keeps one column chunk and takes every (THREADS / chunks)-th
// row. That step is a multiple of 8 rows, so the chunk's swizzled position within its row never
// changes and the loop unrolls to one cp.async per chunk at constant offsets from the thread's
// first row: the copies of a tile are no longer the bulk of the instructions the compute warps
// issue (an index division, a swizzle and a 64-bit address for each 16 bytes before).
template <class T, int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_swizzled(unsigned dst, T* dst_generic, const T* src,
                                              long long row_stride, long long col_stride,
                                              int valid_rows) {
    constexpr int chunks = COLS / 8, step = THREADS / chunks;
    static_assert(THREADS % chunks == 0 && step % 8 == 0 && ROWS % step == 0,
                  "whole rows of chunks per pass, a multiple of the swizzle's 8 rows");
    const bool vector = col_stride == 1 && row_stride % 8 == 0 &&
                        (reinterpret_cast<unsigned long long>(src) & 15) == 0;
    const int r0 = int(threadIdx.x) / chunks, c = int(threadIdx.x) % chunks;
    if (vector) {
        const unsigned d0 = dst + swizzled_chunk<ROWS>(r0, c);
        const T* const s0 = src + r0 * row_stride + c * 8;
        if (valid_rows >= ROWS) {
#pragma unroll
            for (int k = 0; k < ROWS / step; ++k)
                cx_cp_async<16>(d0 + unsigned(k * step) * 128u, s0 + k * step * row_stride, true);
        } else {
#pragma unroll
            for (int k = 0; k < ROWS / step; ++k) {
                const bool full = r0 + k * step < valid_rows;
                cx_cp_async<16>(d0 + unsigned(k * step) * 128u,
                                full ? static_cast<const void*>(s0 + k * step * row_stride)
                                     : static_cast<const void*>(src),
                                full);
            }
        }
        return;
    }
#pragma unroll 1
    for (int k = 0; k < ROWS / step; ++k) {
        const int r = r0 + k * step;
        T* d = dst_generic + swizzled_chunk<ROWS>(r, c) / sizeof(T);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            T v;
            v.bits = 0;
            if (r < valid_rows) v = src[r * row_stride + (c * 8 + e) * col_stride];
            d[e] = v;
        }
    }
}

} // namespace cx_attention_detail

template <class CFG, class T, class TB, class TO>
__device__ __forceinline__ void
cx_attention_wgmma(const T* __restrict__ q, const T* __restrict__ kt, const T* __restrict__ v,
                   const TB* __restrict__ bias, TO* __restrict__ out, unsigned char* smem) {
    using namespace cx_attention_detail;
    constexpr int BC = CFG::BC, BR = CFG::WARPS * 16, DP = CFG::DP, DVP = CFG::DVP;
    constexpr int NS = BC / 8, NV = DVP / 8, THREADS = CFG::WARPS * 32;
    static_assert(CFG::WARPS % 4 == 0 && CFG::MT == 1, "whole warpgroups, 16 rows a warp");
    static_assert(DP % 64 == 0 && DVP % 64 == 0, "tiles of whole 64-column regions");
    constexpr unsigned Q_BYTES = BR * DP * 2, K_BYTES = BC * DP * 2, V_BYTES = BC * DVP * 2;
    const unsigned base = cx_shared_address(smem);
    const unsigned qs = base, ks0 = qs + Q_BYTES, vs0 = ks0 + 2 * K_BYTES;
    T* const generic = reinterpret_cast<T*>(smem);
    auto generic_at = [&](unsigned address) { return generic + (address - base) / sizeof(T); };
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, group = warp / 4;
    const int g = lane / 4, t4 = lane % 4;
    const int q0 = blockIdx.y * BR;
    const T* type_tag = nullptr;
    const float ninf = -__int_as_float(0x7f800000);

    // Key tile i in k buffer i % 2, value tile i in v buffer i % 2.
    auto load_k = [&](int tile) {
        const unsigned d = ks0 + (tile % 2) * K_BYTES;
        load_swizzled<T, BC, DP, THREADS>(d, generic_at(d), kt + tile * BC * CFG::K_ROW, CFG::K_ROW,
                                          CFG::K_COL, CFG::SK - tile * BC);
    };
    auto load_v = [&](int tile) {
        const unsigned d = vs0 + (tile % 2) * V_BYTES;
        load_swizzled<T, BC, DVP, THREADS>(d, generic_at(d), v + tile * BC * CFG::V_ROW, CFG::V_ROW,
                                           CFG::V_COL, CFG::SK - tile * BC);
    };
    constexpr int TILES = (CFG::SK + BC - 1) / BC;
    load_swizzled<T, BR, DP, THREADS>(qs, generic_at(qs), q + q0 * CFG::Q_ROW, CFG::Q_ROW,
                                      CFG::Q_COL, CFG::SQ - q0);
    load_k(0);
    if (CFG::PIPELINED && TILES > 1) load_k(1);
    load_v(0);
    cx_cp_async_commit();

    float o[NV * 4];
#pragma unroll
    for (int i = 0; i < NV * 4; ++i)
        o[i] = 0.0f;
    float m_run[2] = {ninf, ninf}, l_run[2] = {0.0f, 0.0f};
    const int row0 = q0 + warp * 16 + g;

    // Every branch around the wgmma instructions is uniform in the tile index alone: ptxas
    // serialises the warpgroup's wgmma (a wait after each) where one is issued on a path it
    // cannot prove every thread of the warpgroup takes. So a warpgroup whose rows are all past
    // the end computes on its zero-filled q rows (store_rows writes none of them), and the last
    // tile's P . V runs over every 16 keys: the probabilities past the end are 0 and so are the
    // value rows (load_swizzled fills them with zeros).
    float s[NS * 4];
    // S = q . k^T of key tile `tile` into s, which the caller zeroed before the wgmma fence:
    // 16 columns of depth at a time, 32 bytes into a 128-byte row. Committed, not waited for.
    auto issue_scores = [&](int tile) {
        const unsigned kb = ks0 + (tile % 2) * K_BYTES;
#pragma unroll
        for (int ks = 0; ks < DP / 16; ++ks) {
            const unsigned depth = unsigned(ks % 4) * 32u;
            const unsigned qa = qs + unsigned(ks / 4) * (BR * 128u) + group * 64u * 128u + depth;
            const unsigned ka = kb + unsigned(ks / 4) * (BC * 128u) + depth;
            cx_attention_mma_s(s, cx_wgmma_desc(qa, 16u, 1024u, 128u),
                               cx_wgmma_desc(ka, 16u, 1024u, 128u));
        }
        cx_wgmma_commit();
    };
    // O += P . V of value tile `tile`: the probabilities of keys 16kk..16kk+15 as the A
    // operand; v's rows 16kk.. of every 64-column region (LBO: the region's size).
    unsigned p[BC / 16][4];
    auto issue_values = [&](int tile) {
        const unsigned vb = vs0 + (tile % 2) * V_BYTES;
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
            cx_attention_mma_o(
                o, p[kk], cx_wgmma_desc(vb + unsigned(kk) * 16u * 128u, BC * 128u, 1024u, 128u));
        cx_wgmma_commit();
    };
    auto zero_scores = [&] {
#pragma unroll
        for (int i = 0; i < NS * 4; ++i)
            s[i] = 0.0f;
    };
    auto scores_arrived = [&] {
#pragma unroll
        for (int i = 0; i < NS * 4; ++i)
            asm volatile("" : "+f"(s[i])::"memory");
    };
    auto outputs_arrived = [&] {
#pragma unroll
        for (int i = 0; i < NV * 4; ++i)
            asm volatile("" : "+f"(o[i])::"memory");
    };
    auto pack = [&] {
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
            pack_probabilities(p[kk], &s[8 * kk], type_tag);
    };
    auto is_tail = [](int tile) { return (tile + 1) * BC > CFG::SK; };
    // Every thread's copies, visible to wgmma after the barrier.
    auto tiles_arrived = [] {
        cx_cp_async_wait<0>();
        cx_fence_proxy_async();
        __syncthreads();
    };

    float alpha[2];
    if constexpr (!CFG::PIPELINED) {
        // One key tile at a time: its scores, their softmax, then its P . V; the next tile's
        // copies run meanwhile. Two warpgroups of a block, or several blocks on an SM, overlap
        // one's softmax with another's products.
        for (int tile = 0; tile < TILES; ++tile) {
            // Here k and v tile have arrived; every warp is done with tile - 1's buffers.
            tiles_arrived();
            if (tile + 1 < TILES) {
                load_k(tile + 1);
                load_v(tile + 1);
            }
            cx_cp_async_commit();
            zero_scores();
            cx_wgmma_fence();
            issue_scores(tile);
            cx_wgmma_wait<0>();
            scores_arrived();
            softmax_step<CFG, NS>(s, bias, row0, tile * BC, t4, is_tail(tile), m_run, l_run, alpha);
            rescale_rows<NV>(o, alpha);
            pack();
            cx_wgmma_fence();
            issue_values(tile);
            cx_wgmma_wait<0>();
            outputs_arrived();
        }
    } else {
        // Software-pipelined over key tiles: while the tensor cores run tile i's P . V, this
        // warpgroup turns tile i + 1's scores (their product issued just before) into
        // probabilities. The output accumulators are rescaled for tile i + 1 only once P . V of
        // tile i is done, and then the probabilities packed into the A fragments it reads.
        tiles_arrived();
        zero_scores();
        cx_wgmma_fence();
        issue_scores(0);
        cx_wgmma_wait<0>();
        scores_arrived();
        softmax_step<CFG, NS>(s, bias, row0, 0, t4, is_tail(0), m_run, l_run, alpha);
        pack();
        for (int tile = 0; tile + 1 < TILES; ++tile) {
            // Here k tile + 1 and v tile have arrived. Every warp is done with k tile (its scores
            // were waited for) and v tile - 1 (its P . V was): their buffers take k tile + 2 and
            // v tile + 1, one iteration ahead of their use.
            tiles_arrived();
            if (tile + 2 < TILES) load_k(tile + 2);
            load_v(tile + 1);
            cx_cp_async_commit();
            zero_scores();
            cx_wgmma_fence();
            issue_scores(tile + 1);
            issue_values(tile);
            cx_wgmma_wait<1>(); // the scores, committed first
            scores_arrived();
            softmax_step<CFG, NS>(s, bias, row0, (tile + 1) * BC, t4, is_tail(tile + 1), m_run,
                                  l_run, alpha);
            cx_wgmma_wait<0>();
            outputs_arrived();
            rescale_rows<NV>(o, alpha);
            pack();
        }
        tiles_arrived();
        cx_wgmma_fence();
        issue_values(TILES - 1);
        cx_wgmma_wait<0>();
        outputs_arrived();
    }
    store_rows<CFG, NV>(o, out, row0, t4, l_run);
}
