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
    static constexpr int VECS = CB / 8, PAIRS = WC / 2, ROW_ITEMS = PAIRS * VECS,
                         ITEMS = WR * ROW_ITEMS;
    static constexpr int COL_PAIRS = TW / 16, TILES = TR / 8 * COL_PAIRS;
    static constexpr int PER_WARP = CB / CFG::WARPS;
    // Whether an item's offset from its tile's window origin needs 64 bits.
    static constexpr bool WIDE = WR * CFG::ROW_STRIDE + WC * CFG::COL_STRIDE + CB >= (1LL << 31);
};

template <bool WIDE> struct offset_type { using type = int; };
template <> struct offset_type<true> { using type = long long; };

// Where a spatial tile starts; `base` is the input offset of its window's first row, column and
// channel (negative where that is padding: only positions inside the image are read).
struct tile_origin {
    int img, oh0, ow0, ih0, iw0;
    long long base;
};

// Spatial tile `tile` of images x ROW_TILES x COL_TILES, column tiles fastest, or (DOWN, the
// pipelined form's order) images x COL_TILES x ROW_TILES, row tiles fastest. Tile indices fit
// 32 bits (the generator's grid limit), so the divisions here are 32-bit.
template <class CFG, bool DOWN = false>
__device__ __forceinline__ tile_origin origin_of(int tile, int c0) {
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
    t.base = t.img * CFG::IMG_STRIDE + static_cast<long long>(t.ih0) * CFG::ROW_STRIDE +
             static_cast<long long>(t.iw0) * CFG::COL_STRIDE + c0;
    return t;
}

// The weights as rows of T's diagonals: wt[(c * KH + r) * 32 + 8 + d] = T_r[n + d, n] (the
// weight of tap d / DW, or 0), so a B fragment is read without bounds checks (d from -7 to 15)
// and the weights stay in the input's type.
template <class CFG>
__device__ __forceinline__ void copy_weights(const typename CFG::S* __restrict__ w,
                                             typename CFG::S* wt, int c0) {
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

// Item x of the window rows from `first` on: two neighbouring positions' 8 channels (zeros in
// the padding and past the last channel). Items are counted from a whole row, so x's row,
// column pair and vector do not depend on `first`: with x = tid + j * THREADS they are the same
// for every tile, and only the row is added per tile.
struct window_item {
    uint4 x0, x1;
};

struct item_place {
    int v, pair, row;
};

template <class CFG> __device__ __forceinline__ item_place place_of(unsigned x, int first) {
    using K = block_shape<CFG>;
    return {static_cast<int>(x % K::VECS), static_cast<int>(x / K::VECS % K::PAIRS),
            first + static_cast<int>(x / K::ROW_ITEMS)};
}

template <class CFG>
__device__ __forceinline__ window_item load_item(int x, int first,
                                                 const typename CFG::S* __restrict__ in,
                                                 const tile_origin& t, int c0) {
    using K = block_shape<CFG>;
    using offset = typename offset_type<K::WIDE>::type;
    const item_place at = place_of<CFG>(x, first);
    const int ih = t.ih0 + at.row, iw = t.iw0 + 2 * at.pair;
    window_item item = {{0u, 0u, 0u, 0u}, {0u, 0u, 0u, 0u}};
    if ((CFG::C % K::CB == 0 || c0 + at.v * 8 < CFG::C) &&
        static_cast<unsigned>(ih) < static_cast<unsigned>(CFG::IH)) {
        const offset within =
            static_cast<offset>(at.row) * static_cast<offset>(CFG::ROW_STRIDE) +
            static_cast<offset>(2 * at.pair) * static_cast<offset>(CFG::COL_STRIDE) + at.v * 8;
        const typename CFG::S* p = in + (t.base + within);
        if (static_cast<unsigned>(iw) < static_cast<unsigned>(CFG::IW))
            item.x0 = *reinterpret_cast<const uint4*>(p);
        if (static_cast<unsigned>(iw + 1) < static_cast<unsigned>(CFG::IW))
            item.x1 = *reinterpret_cast<const uint4*>(p + CFG::COL_STRIDE);
    }
    return item;
}

// The row slot of window row `row` (rows counted from the tile's first, `base` = its first
// output row times SH): consecutive tiles down a column find the rows they share in place.
template <class CFG> __device__ __forceinline__ int slot_of(int base, int row) {
    return (base + row) & (CFG::RING - 1);
}

// Stores item x (of the rows from `first` on) channel-major, one 32-bit word (the two
// positions) per channel.
template <class CFG>
__device__ __forceinline__ void store_item(int x, int first, const window_item& item,
                                           typename CFG::S* win, int base) {
    using S = typename CFG::S;
    const item_place at = place_of<CFG>(x, first);
    const unsigned a[4] = {item.x0.x, item.x0.y, item.x0.z, item.x0.w},
                   b[4] = {item.x1.x, item.x1.y, item.x1.z, item.x1.w};
    S* dst = win + at.v * 8 * CFG::PLANE + slot_of<CFG>(base, at.row) * CFG::WP + 2 * at.pair;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        *reinterpret_cast<unsigned*>(dst + 2 * k * CFG::PLANE) = __byte_perm(a[k], b[k], 0x5410);
        *reinterpret_cast<unsigned*>(dst + (2 * k + 1) * CFG::PLANE) =
            __byte_perm(a[k], b[k], 0x7632);
    }
}

template <class CFG>
using accumulators = float[block_shape<CFG>::PER_WARP][block_shape<CFG>::TILES][4];

// Each warp's channels over the window in shared memory: per channel, T's KH fragments once,
// then per tile and kernel row three 32-bit loads and one mma. T's zeros multiply window values
// that an output does not read, and 0 * Inf would turn it NaN: when any accumulator of the block
// is not finite (an Inf or NaN in the window, or a bf16 product past f32's range), the block
// computes its outputs again with exact_products. Checking the accumulators (one multiply-add
// each) instead of every window value keeps the check out of the copy. Returns NaN where this
// thread's accumulators are not all finite, else 0; no barrier.
template <class CFG>
__device__ __forceinline__ float tensor_products(const typename CFG::S* win,
                                                 const typename CFG::S* wt, int base,
                                                 accumulators<CFG>& acc) {
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
    return nonfinite;
}

// The outputs directly from the window, in f32 in the reference's order: slower than the tensor
// cores, but exact where the window holds an Inf or NaN.
template <class CFG>
__device__ __forceinline__ void exact_products(const typename CFG::S* win,
                                               const typename CFG::S* wt, int base,
                                               accumulators<CFG>& acc) {
    using K = block_shape<CFG>;
    using S = typename CFG::S;
    const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, q = threadIdx.x % 4;
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
}

// The accumulators into shared memory (f32 [c][row][col], at `stage`: over the window once the
// products are done, or beside it), so that each position's channels can be read together.
template <class CFG>
__device__ __forceinline__ void stage_accumulators(const accumulators<CFG>& acc, float* stage) {
    using K = block_shape<CFG>;
    const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4, q = threadIdx.x % 4;
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
}

// The staged outputs, 8 channels of one position at a time, to `store`; four positions a thread
// unrolled, so that their reads (and the epilogue's) are in flight together.
template <class CFG, class Store>
__device__ __forceinline__ void store_staged(const float* stage, const tile_origin& t, int c0,
                                             Store& store) {
    using K = block_shape<CFG>;
    const int tid = threadIdx.x;
    constexpr int OUTPUTS = K::TR * K::TW * K::VECS;
#pragma unroll 4
    for (int k = 0; k < (OUTPUTS + K::THREADS - 1) / K::THREADS; ++k) {
        const unsigned i = tid + k * K::THREADS;
        const int v = static_cast<int>(i % K::VECS), pos = static_cast<int>(i / K::VECS),
                  r = pos / K::TW, col = pos % K::TW;
        const int oh = t.oh0 + r, ow = t.ow0 + col;
        if ((OUTPUTS % K::THREADS != 0 && i >= unsigned(OUTPUTS)) || oh >= CFG::OH ||
            ow >= CFG::OW || (CFG::C % K::CB != 0 && c0 + v * 8 >= CFG::C))
            continue;
        float out[8];
#pragma unroll
        for (int k = 0; k < 8; ++k)
            out[k] = stage[(v * 8 + k) * CFG::SPLANE + r * CFG::TWS + col];
        store(out, (static_cast<long long>(t.img) * CFG::OH + oh) * CFG::OW + ow,
              static_cast<long long>(c0 + v * 8));
    }
}

// The window's outputs into `stage`: on tensor cores, or exactly where any accumulator of the
// block is not finite. The window is free after the first barrier, so `stage` may lie over it;
// the outputs can be read after the second. (Staging the accumulators before the first barrier,
// one barrier a tile fewer where the stage has its own memory, ran up to 24% slower on an H100:
// the next window's loads had less time before they were needed.)
template <class CFG>
__device__ __forceinline__ void
products_to_stage(const typename CFG::S* win, const typename CFG::S* wt, int base, float* stage) {
    accumulators<CFG> acc;
    if (__syncthreads_or(tensor_products<CFG>(win, wt, base, acc) != 0.0f)) {
        exact_products<CFG>(win, wt, base, acc);
        __syncthreads();
    }
    stage_accumulators<CFG>(acc, stage);
    __syncthreads();
}

// Where a block's weights and window live in shared memory, and its first channel; the weights
// are copied in (the first barrier after makes them visible).
template <class CFG> struct block_start {
    typename CFG::S* wt;
    typename CFG::S* win;
    int c0;
};

template <class CFG>
__device__ __forceinline__ block_start<CFG> start_block(const typename CFG::S* __restrict__ w,
                                                        unsigned char* smem) {
    using S = typename CFG::S;
    const block_start<CFG> b = {reinterpret_cast<S*>(smem),
                                reinterpret_cast<S*>(smem + CFG::WEIGHT_BYTES),
                                static_cast<int>(blockIdx.y) * CFG::CB};
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
    const block_start<CFG> b = start_block<CFG>(w, smem);
    const tile_origin t = origin_of<CFG>(static_cast<int>(blockIdx.x), b.c0);
#pragma unroll 4
    for (int i = threadIdx.x; i < K::ITEMS; i += K::THREADS)
        store_item<CFG>(i, 0, load_item<CFG>(i, 0, in, t, b.c0), b.win, 0);
    __syncthreads(); // the window and weights are in
    float* stage = reinterpret_cast<float*>(smem + CFG::STAGE_BYTES);
    products_to_stage<CFG>(b.win, b.wt, 0, stage);
    store_staged<CFG>(stage, t, b.c0, store);
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
    // The first window row a tile adds to the one above it.
    constexpr int ADDED_ROW = K::WR > CFG::TR * CFG::SH ? K::WR - CFG::TR * CFG::SH : 0;
    const block_start<CFG> b = start_block<CFG>(w, smem);
    float* stage = reinterpret_cast<float*>(smem + CFG::STAGE_BYTES);
    const int tid = threadIdx.x;
    const int begin = static_cast<int>(blockIdx.x * CFG::SPATIAL_TILES / gridDim.x),
              end = static_cast<int>((blockIdx.x + 1) * CFG::SPATIAL_TILES / gridDim.x);
    window_item next[SHARE];
    int first = 0; // the first window row that next[] holds
    auto fetch = [&](const tile_origin& t) {
#pragma unroll
        for (int j = 0; j < SHARE; ++j)
            if (tid + j * K::THREADS < (K::WR - first) * K::ROW_ITEMS)
                next[j] = load_item<CFG>(tid + j * K::THREADS, first, in, t, b.c0);
    };
    tile_origin t = origin_of<CFG, true>(begin, b.c0);
    fetch(t);
    for (int tile = begin; tile < end; ++tile) {
        const int base = t.oh0 * CFG::SH;
#pragma unroll
        for (int j = 0; j < SHARE; ++j)
            if (tid + j * K::THREADS < (K::WR - first) * K::ROW_ITEMS)
                store_item<CFG>(tid + j * K::THREADS, first, next[j], b.win, base);
        __syncthreads(); // the window (and, the first time, the weights) are in
        const tile_origin current = t;
        if (tile + 1 < end) {
            first = (tile + 1) % CFG::ROW_TILES == 0 ? 0 : ADDED_ROW;
            t = origin_of<CFG, true>(tile + 1, b.c0);
            fetch(t);
        }
        products_to_stage<CFG>(b.win, b.wt, base, stage);
        store_staged<CFG>(stage, current, b.c0, store);
    }
}
