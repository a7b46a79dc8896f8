// The depthwise convolution on tensor cores (the dw_mma configs of depthwise_kernel.hpp;
// docs/ARCHITECTURE.md, "Kernel families"). A 2-D depthwise convolution is, per channel and
// kernel row r, a product with a Toeplitz matrix: along a row of outputs,
//   out[h, 8i + j] += sum_u in[h * SH + r * DH, 8i + u] * T_r[u, j],
//   T_r[u, j] = w[r, (u - j) / DW] where u - j is a multiple of DW below KW * DW, else 0,
// with u < 16 as long as (KW - 1) * DW <= 8. So one mma.sync m16n8k16 (mma.cuh) per channel
// and kernel row computes 128 outputs: M = 16 = 8 output rows x 2 groups of 8 columns
// (row g + 8 is the next group of the same row), N = the 8 columns of a group, K = the 16
// input columns they read. That is 16 / KW times the multiply-adds of a direct kernel, on
// units that have them to spare, and it leaves the kernel bound by memory instead of by f32
// multiply-adds (a 7x7 layer does 49 of those per output).
//
// A block computes CB channels x TR output rows x TW output columns:
//   1. the weights, as each kernel row's diagonals of T in the input's type (a fragment of T is
//      two 16-bit loads a register), and the input window, channel-major [c][row][col] in
//      the input's type with zeros where the padding is, into shared memory. The window is
//      TW + 8 columns wide: a fragment reads 24 columns from its first, and the last 8 only
//      meet zeros of T. Row pitch WP and plane pitch PLANE are chosen (by the generator) so a
//      warp's fragment loads and the copy's stores each take one wavefront;
//   2. each warp takes CB / WARPS channels, reads that channel's KH fragments of T once, and
//      runs the tiles (TR / 8 row groups x TW / 16 column pairs) of it: per kernel row three
//      32-bit loads (A's second and third 8x8 blocks are the same columns) and one mma. T's
//      zeros multiply input values that the outputs do not read, and 0 * Inf would make them
//      NaN, so a block with any accumulator Inf or NaN computes every output again directly
//      from the window (f32 multiply-adds in the reference's order), slower but exact;
//   3. the accumulators go through shared memory (f32 [c][row][col]) so that
//      each output position's channels come out together, and `store` (the fused epilogue of
//      the generated kernel) gets 8 channels of one position at a time: a warp's stores are
//      whole sectors of channels-last output.
// CFG (written by the generator) holds the geometry, all compile-time:
//   S; CB, TR, TW, WARPS; KH, KW, SH, DH, DW; PAD_T, PAD_L; IH, IW, OH, OW; C (channels);
//   IMG_STRIDE, ROW_STRIDE, COL_STRIDE (the input's, in elements; channels contiguous);
//   W_FILTER, W_ROW, W_COL (the weights'); WP, PLANE (window pitches), RING (a power of two
//   at least the window's rows: window row w of a tile whose first output row is oh0 lives in
//   row slot (oh0 * SH + w) % RING of its plane), TWS, SPLANE (the accumulators' pitches),
//   WEIGHT_BYTES (where the window starts), STAGE_BYTES (where the accumulators go: over the
//   window, or after it in the pipelined form); ROW_TILES, COL_TILES; SPATIAL_TILES (images x
//   ROW_TILES x COL_TILES).
// Grid: x = the spatial tiles (column tiles fastest), y = channel blocks; in the pipelined form
// x is what the SMs hold at once (the generator's choice), each block walking a run of tiles
// down the columns of tiles (row tiles fastest), so that consecutive tiles share window rows.
#pragma once

#include "conflux/mma.cuh"
#include "conflux/types.cuh"

namespace cx_depthwise_mma_detail {

__device__ __forceinline__ unsigned shared_word(const void* p) {
    return *reinterpret_cast<const unsigned*>(p);
}

__device__ __forceinline__ unsigned bits16(const void* p) {
    return *reinterpret_cast<const unsigned short*>(p);
}

// The block's shape, from CFG.
template <class CFG> struct block_shape {
    static constexpr int CB = CFG::CB, TR = CFG::TR, TW = CFG::TW, THREADS = CFG::WARPS * 32;
    static constexpr int KH = CFG::KH, KW = CFG::KW;
    static constexpr int WR = (TR - 1) * CFG::SH + (KH - 1) * CFG::DH + 1, WC = TW + 8;
    static constexpr int VECS = CB / 8, PAIRS = WC / 2, ITEMS = WR * PAIRS * VECS;
    static constexpr int COL_PAIRS = TW / 16, TILES = TR / 8 * COL_PAIRS;
    static constexpr int PER_WARP = CB / CFG::WARPS;
};

// Where a spatial tile starts.
struct tile_origin {
    long long img;
    int oh0, ow0, ih0, iw0;
};

// Spatial tile `tile` of images x ROW_TILES x COL_TILES, column tiles fastest, or (DOWN, the
// pipelined form's order) images x COL_TILES x ROW_TILES, row tiles fastest.
template <class CFG, bool DOWN = false>
__device__ __forceinline__ tile_origin origin_of(long long tile) {
    tile_origin t;
    int tc, tr;
    if (DOWN) {
        tr = static_cast<int>(tile % CFG::ROW_TILES);
        tile /= CFG::ROW_TILES;
        tc = static_cast<int>(tile % CFG::COL_TILES);
        t.img = tile / CFG::COL_TILES;
    } else {
        tc = static_cast<int>(tile % CFG::COL_TILES);
        tile /= CFG::COL_TILES;
        tr = static_cast<int>(tile % CFG::ROW_TILES);
        t.img = tile / CFG::ROW_TILES;
    }
    t.oh0 = tr * CFG::TR;
    t.ow0 = tc * CFG::TW;
    t.ih0 = t.oh0 * CFG::SH - CFG::PAD_T;
    t.iw0 = t.ow0 - CFG::PAD_L;
    return t;
}

// The weights as rows of T's diagonals: wt[(c * KH + r) * 32 + 8 + d] = T_r[n + d, n] (the
// weight of tap d / DW, or 0), so a B fragment is read without bounds checks (d from -7 to 15)
// and the weights stay in the input's type.
template <class CFG>
__device__ __forceinline__ void copy_weights(const typename CFG::S* __restrict__ w,
                                             typename CFG::S* wt, long long c0) {
    using K = block_shape<CFG>;
    for (int i = threadIdx.x; i < K::CB * K::KH * 32; i += K::THREADS) {
        const int cl = i / (K::KH * 32), r = i / 32 % K::KH, d = i % 32 - 8;
        unsigned short v = 0;
        if (c0 + cl < CFG::C && d >= 0 && d % CFG::DW == 0 && d / CFG::DW < K::KW)
            v = static_cast<unsigned short>(bits16(w + (c0 + cl) * CFG::W_FILTER + r * CFG::W_ROW +
                                                   (d / CFG::DW) * CFG::W_COL));
        *reinterpret_cast<unsigned short*>(wt + i) = v;
    }
}

// Item i of the window: two neighbouring positions' 8 channels (zeros in the padding and past
// the last channel).
struct window_item {
    uint4 x0, x1;
};

template <class CFG>
__device__ __forceinline__ window_item load_item(int i, const typename CFG::S* __restrict__ in,
                                                 const tile_origin& t, long long c0) {
    using K = block_shape<CFG>;
    const int v = i % K::VECS, pair = i / K::VECS % K::PAIRS, row = i / (K::VECS * K::PAIRS);
    const int ih = t.ih0 + row, iw = t.iw0 + 2 * pair;
    window_item x = {{0u, 0u, 0u, 0u}, {0u, 0u, 0u, 0u}};
    if (c0 + v * 8 < CFG::C && static_cast<unsigned>(ih) < static_cast<unsigned>(CFG::IH)) {
        const typename CFG::S* at = in + t.img * CFG::IMG_STRIDE + c0 + v * 8 +
                                    static_cast<long long>(ih) * CFG::ROW_STRIDE;
        if (static_cast<unsigned>(iw) < static_cast<unsigned>(CFG::IW))
            x.x0 =
                *reinterpret_cast<const uint4*>(at + static_cast<long long>(iw) * CFG::COL_STRIDE);
        if (static_cast<unsigned>(iw + 1) < static_cast<unsigned>(CFG::IW))
            x.x1 = *reinterpret_cast<const uint4*>(at + static_cast<long long>(iw + 1) *
                                                            CFG::COL_STRIDE);
    }
    return x;
}

// The row slot of window row `row` (rows counted from the tile's first, `base` = its first
// output row times SH): consecutive tiles down a column find the rows they share in place.
template <class CFG> __device__ __forceinline__ int slot_of(int base, int row) {
    return (base + row) & (CFG::RING - 1);
}

// Stores item i channel-major, one 32-bit word (the two positions) per channel.
template <class CFG>
__device__ __forceinline__ void store_item(int i, const window_item& x, typename CFG::S* win,
                                           int base) {
    using K = block_shape<CFG>;
    using S = typename CFG::S;
    const int v = i % K::VECS, pair = i / K::VECS % K::PAIRS, row = i / (K::VECS * K::PAIRS);
    const unsigned a[4] = {x.x0.x, x.x0.y, x.x0.z, x.x0.w}, b[4] = {x.x1.x, x.x1.y, x.x1.z, x.x1.w};
    S* dst = win + v * 8 * CFG::PLANE + slot_of<CFG>(base, row) * CFG::WP + 2 * pair;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        *reinterpret_cast<unsigned*>(dst + 2 * k * CFG::PLANE) = (a[k] & 0xffffu) | (b[k] << 16);
        *reinterpret_cast<unsigned*>(dst + (2 * k + 1) * CFG::PLANE) =
            (a[k] >> 16) | (b[k] & 0xffff0000u);
    }
}

template <class CFG>
using accumulators = float[block_shape<CFG>::PER_WARP][block_shape<CFG>::TILES][4];

// Each warp's channels over the window in shared memory: per channel, T's KH fragments once,
// then per tile and kernel row three 32-bit loads and one mma. T's zeros multiply window values
// that an output does not read, and 0 * Inf would turn it NaN: when any accumulator of the block
// is not finite (an Inf or NaN in the window, or a bf16 product past f32's range), the block
// computes its outputs again directly from the window, in f32 in the reference's order, which
// is slower but exact. Checking the accumulators (one multiply-add each) instead of every
// window value keeps the check out of the copy. Ends with a barrier: the window is free after.
template <class CFG>
__device__ __forceinline__ void products(const typename CFG::S* win, const typename CFG::S* wt,
                                         int base, accumulators<CFG>& acc) {
    using K = block_shape<CFG>;
    using S = typename CFG::S;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    float nonfinite = 0.0f; // NaN once an accumulator is Inf or NaN: 0 * x is 0 for finite x
#pragma unroll
    for (int ci = 0; ci < K::PER_WARP; ++ci) {
        const int c = warp * K::PER_WARP + ci;
        const S* plane = win + c * CFG::PLANE;
        unsigned bf[K::KH][2];
#pragma unroll
        for (int r = 0; r < K::KH; ++r)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const S* at = wt + (c * K::KH + r) * 32 + 8 + 2 * q + 8 * e - g;
                bf[r][e] = bits16(at) | (bits16(at + 1) << 16);
            }
#pragma unroll
        for (int t = 0; t < K::TILES; ++t) {
            const int rg = t / K::COL_PAIRS, cp = t % K::COL_PAIRS;
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[ci][t][e] = 0.0f;
#pragma unroll
            for (int r = 0; r < K::KH; ++r) {
                const S* at = plane +
                              slot_of<CFG>(base, (rg * 8 + g) * CFG::SH + r * CFG::DH) * CFG::WP +
                              16 * cp + 2 * q;
                const unsigned a1 = shared_word(at + 8);
                const unsigned af[4] = {shared_word(at), a1, a1, shared_word(at + 16)};
                cx_mma_16(acc[ci][t], af, bf[r], static_cast<const S*>(nullptr));
            }
#pragma unroll
            for (int e = 0; e < 4; ++e)
                nonfinite = fmaf(acc[ci][t][e], 0.0f, nonfinite);
        }
    }
    if (!__syncthreads_or(nonfinite != 0.0f)) return;
#pragma unroll
    for (int ci = 0; ci < K::PER_WARP; ++ci) {
        const int c = warp * K::PER_WARP + ci;
        const S* plane = win + c * CFG::PLANE;
#pragma unroll
        for (int t = 0; t < K::TILES; ++t) {
            const int rg = t / K::COL_PAIRS, cp = t % K::COL_PAIRS;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int col = 16 * cp + 8 * (e / 2) + 2 * q + e % 2;
                float sum = 0.0f;
                for (int r = 0; r < K::KH; ++r) {
                    const S* row =
                        plane + slot_of<CFG>(base, (rg * 8 + g) * CFG::SH + r * CFG::DH) * CFG::WP +
                        col;
                    for (int s = 0; s < K::KW; ++s)
                        sum = sum + cx_load(row + s * CFG::DW) *
                                        cx_load(wt + (c * K::KH + r) * 32 + 8 + s * CFG::DW);
                }
                acc[ci][t][e] = sum;
            }
        }
    }
    __syncthreads();
}

// The accumulators through shared memory (f32 [c][row][col], at `stage`: over the window, which
// products() leaves free, or beside it), then 8 channels of one position at a time to `store`.
template <class CFG, class Store>
__device__ __forceinline__ void store_outputs(const accumulators<CFG>& acc, float* stage,
                                              const tile_origin& t, long long c0, Store& store) {
    using K = block_shape<CFG>;
    const int tid = threadIdx.x, warp = tid / 32, g = tid % 32 / 4, q = tid % 4;
#pragma unroll
    for (int ci = 0; ci < K::PER_WARP; ++ci)
#pragma unroll
        for (int i = 0; i < K::TILES; ++i) {
            const int rg = i / K::COL_PAIRS, cp = i % K::COL_PAIRS;
            float* at = stage + (warp * K::PER_WARP + ci) * CFG::SPLANE + (rg * 8 + g) * CFG::TWS +
                        16 * cp + 2 * q;
            *reinterpret_cast<float2*>(at) = make_float2(acc[ci][i][0], acc[ci][i][1]);
            *reinterpret_cast<float2*>(at + 8) = make_float2(acc[ci][i][2], acc[ci][i][3]);
        }
    __syncthreads();
    for (int i = tid; i < K::TR * K::TW * K::VECS; i += K::THREADS) {
        const int v = i % K::VECS, pos = i / K::VECS, r = pos / K::TW, col = pos % K::TW;
        const int oh = t.oh0 + r, ow = t.ow0 + col;
        if (oh >= CFG::OH || ow >= CFG::OW || c0 + v * 8 >= CFG::C) continue;
        float out[8];
#pragma unroll
        for (int k = 0; k < 8; ++k)
            out[k] = stage[(v * 8 + k) * CFG::SPLANE + r * CFG::TWS + col];
        store(out, (t.img * CFG::OH + oh) * CFG::OW + ow, c0 + v * 8);
    }
}

// Where a block's weights and window live in shared memory, and its first channel; the weights
// are copied in (the first barrier after makes them visible).
template <class CFG> struct block_start {
    typename CFG::S* wt;
    typename CFG::S* win;
    long long c0;
};

template <class CFG>
__device__ __forceinline__ block_start<CFG> start_block(const typename CFG::S* __restrict__ w,
                                                        unsigned char* smem) {
    using S = typename CFG::S;
    const block_start<CFG> b = {reinterpret_cast<S*>(smem),
                                reinterpret_cast<S*>(smem + CFG::WEIGHT_BYTES),
                                static_cast<long long>(blockIdx.y) * CFG::CB};
    copy_weights<CFG>(w, b.wt, b.c0);
    return b;
}

} // namespace cx_depthwise_mma_detail

// One block, one spatial tile (blockIdx.x) of one channel block (blockIdx.y).
template <class CFG, class Store>
__device__ __forceinline__ void cx_depthwise_mma(const typename CFG::S* __restrict__ in,
                                                 const typename CFG::S* __restrict__ w,
                                                 unsigned char* smem, Store store) {
    using namespace cx_depthwise_mma_detail;
    using K = block_shape<CFG>;
    const tile_origin t = origin_of<CFG>(blockIdx.x);
    const block_start<CFG> b = start_block<CFG>(w, smem);
#pragma unroll 4
    for (int i = threadIdx.x; i < K::ITEMS; i += K::THREADS)
        store_item<CFG>(i, load_item<CFG>(i, in, t, b.c0), b.win, 0);
    __syncthreads(); // the window and weights are in
    accumulators<CFG> acc;
    products<CFG>(b.win, b.wt, 0, acc);
    store_outputs<CFG>(acc, reinterpret_cast<float*>(smem + CFG::STAGE_BYTES), t, b.c0, store);
}

// The pipelined form (dw_mma_..._p): a block keeps its channel block's weights and walks a run
// of the spatial tiles, down the columns of tiles (the grid's blocks share them out evenly).
// The next tile below shares the window's last rows with the current one, so it loads only the
// rows it adds into the ring of row slots; a tile that starts a column (or the block's run)
// loads all of its window. While the block multiplies and stores one tile, the next tile's loads
// are in flight into registers (each thread's share, at most SHARE items), and the accumulators
// have their own shared memory, so the next window goes in as soon as the products are done.
template <class CFG, class Store>
__device__ __forceinline__ void cx_depthwise_mma_pipelined(const typename CFG::S* __restrict__ in,
                                                           const typename CFG::S* __restrict__ w,
                                                           unsigned char* smem, Store store) {
    using namespace cx_depthwise_mma_detail;
    using K = block_shape<CFG>;
    constexpr int SHARE = (K::ITEMS + K::THREADS - 1) / K::THREADS;
    // The first item of the rows a tile adds to the one above it.
    constexpr int ADDED_FROM =
        (K::WR > CFG::TR * CFG::SH ? K::WR - CFG::TR * CFG::SH : 0) * K::PAIRS * K::VECS;
    const block_start<CFG> b = start_block<CFG>(w, smem);
    float* stage = reinterpret_cast<float*>(smem + CFG::STAGE_BYTES);
    const int tid = threadIdx.x;
    const long long begin = blockIdx.x * CFG::SPATIAL_TILES / gridDim.x,
                    end = (blockIdx.x + 1) * CFG::SPATIAL_TILES / gridDim.x;
    window_item next[SHARE];
    int from = 0; // the first item of the window that next[] holds
    auto fetch = [&](long long tile) {
        const tile_origin t = origin_of<CFG, true>(tile);
#pragma unroll
        for (int j = 0; j < SHARE; ++j)
            if (from + tid + j * K::THREADS < K::ITEMS)
                next[j] = load_item<CFG>(from + tid + j * K::THREADS, in, t, b.c0);
    };
    fetch(begin);
    for (long long tile = begin; tile < end; ++tile) {
        const tile_origin t = origin_of<CFG, true>(tile);
        const int base = t.oh0 * CFG::SH;
#pragma unroll
        for (int j = 0; j < SHARE; ++j)
            if (from + tid + j * K::THREADS < K::ITEMS)
                store_item<CFG>(from + tid + j * K::THREADS, next[j], b.win, base);
        __syncthreads(); // the window (and, the first time, the weights) are in
        if (tile + 1 < end) {
            from = (tile + 1) % CFG::ROW_TILES == 0 ? 0 : ADDED_FROM;
            fetch(tile + 1);
        }
        accumulators<CFG> acc;
        products<CFG>(b.win, b.wt, base, acc); // ends with a barrier: the window is free
        store_outputs<CFG>(acc, stage, t, b.c0, store);
    }
}
