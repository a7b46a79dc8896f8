// Fused attention, one block per (batch entry, CFG::BR query rows): out = softmax(scale * q . kt
// + bias) . v with the scores never in memory (flash-attention style, docs/ARCHITECTURE.md,
// "Kernel families"). Included by the kernels attention_codegen writes; they define the shape
// struct CFG (lens, strides, scale, flags, rows per block) and call cx_attention.
//
// The config (attention_config in attention_kernel.hpp) sets WARPS, MT and BC: each warp owns
// MT tiles of 16 query rows, so each key and value fragment a warp loads from shared memory
// feeds MT mma; a block has WARPS * 16 * MT rows (more rows per block share each key tile among
// more warps: less traffic for long sequences). The block's q tile is read once into shared
// memory; then for every tile of BC keys:
//   - the block's copy of the key rows (kt's columns) and value rows into shared memory was
//     started (cp.async) while the previous tile was computed, into the other of two buffers;
//   - S = q . k^T on mma.sync m16n8k16 (f16 or bf16 in, f32 accumulators), k fragments by
//     ldmatrix from the key rows;
//   - scale, bias (read per element through its strides), keys past the end set to -inf;
//     without a bias the scale waits for exp2's argument (one FFMA a score);
//   - online softmax in f32: the running row maximum m and sum l, the output accumulators
//     rescaled by exp(m_old - m_new) whenever the maximum grows;
//   - O += P . V with P's accumulators repacked in registers as the next mma's A fragments
//     and V's fragments by ldmatrix.trans from the value rows.
// Warps whose rows all lie past the end only help load; the last tile's key chunks past the
// end skip the P . V product. At the end O / l is stored. A row whose l is not positive (every
// score -inf) or not a number stores zeros when CFG::zero_nan_rows (torch's safe softmax), else
// what 0/0 or NaN gives. Operands padded to multiples of 16 along the head dims with zeros; any
// strides, any sequence lengths (rows and keys past the end are zero / masked).
#pragma once

namespace cx_attention_detail {

__device__ __forceinline__ unsigned pack2(float lo, float hi, const cx_f16*) {
    return static_cast<unsigned>(cx_float_to_f16(lo)) |
           (static_cast<unsigned>(cx_float_to_f16(hi)) << 16);
}
__device__ __forceinline__ unsigned pack2(float lo, float hi, const cx_bf16*) {
    return static_cast<unsigned>(cx_float_to_bf16(lo)) |
           (static_cast<unsigned>(cx_float_to_bf16(hi)) << 16);
}

// Copies a rows x cols tile (row r, column c at src + r * row_stride + c * col_stride; rows
// past `valid_rows` and columns past `valid_cols` zero) into shared memory rows of `pitch`
// elements, 16 bytes at a time where the source allows it.
template <class T, int ROWS, int COLS, int PITCH>
__device__ __forceinline__ void load_tile(T* dst, const T* src, long long row_stride,
                                          long long col_stride, int valid_rows, int valid_cols) {
    const bool vector = col_stride == 1 && row_stride % 8 == 0 && valid_cols % 8 == 0 &&
                        (reinterpret_cast<unsigned long long>(src) & 15) == 0;
    if (vector) {
        constexpr int chunks = COLS / 8;
        for (int i = threadIdx.x; i < ROWS * chunks; i += blockDim.x) {
            const int r = i / chunks, c = (i % chunks) * 8;
            uint4 v = make_uint4(0, 0, 0, 0);
            if (r < valid_rows && c < valid_cols)
                v = *reinterpret_cast<const uint4*>(src + r * row_stride + c);
            *reinterpret_cast<uint4*>(dst + r * PITCH + c) = v;
        }
    } else {
        for (int i = threadIdx.x; i < ROWS * COLS; i += blockDim.x) {
            const int r = i / COLS, c = i % COLS;
            T v;
            v.bits = 0;
            if (r < valid_rows && c < valid_cols) v = src[r * row_stride + c * col_stride];
            dst[r * PITCH + c] = v;
        }
    }
}

// load_tile started with cp.async where the source allows 16-byte copies (zero-filled past the
// valid rows); otherwise copied at once. The caller commits and waits. Where the block's THREADS
// threads cover whole rows of chunks, each thread keeps one column chunk and the loop unrolls to
// one cp.async per chunk at constant offsets (as attention_wgmma.cuh's load_swizzled), instead
// of an index division and a 64-bit address for each 16 bytes.
template <class T, int ROWS, int COLS, int PITCH, int THREADS>
__device__ __forceinline__ void load_tile_async(T* dst, const T* src, long long row_stride,
                                                long long col_stride, int valid_rows,
                                                int valid_cols) {
    const bool vector = col_stride == 1 && row_stride % 8 == 0 && valid_cols % 8 == 0 &&
                        (reinterpret_cast<unsigned long long>(src) & 15) == 0;
    if (!vector) {
        load_tile<T, ROWS, COLS, PITCH>(dst, src, row_stride, col_stride, valid_rows, valid_cols);
        return;
    }
    constexpr int chunks = COLS / 8, step = THREADS / chunks;
    if constexpr (THREADS % chunks == 0 && ROWS % step == 0) {
        const int r0 = int(threadIdx.x) / chunks, c = (int(threadIdx.x) % chunks) * 8;
        T* const d0 = dst + r0 * PITCH + c;
        const T* const s0 = src + r0 * row_stride + c;
        const bool column_inside = c < valid_cols;
#pragma unroll
        for (int k = 0; k < ROWS / step; ++k) {
            const bool full = column_inside && r0 + k * step < valid_rows;
            cx_cp_async<16>(cx_shared_address(d0 + k * step * PITCH),
                            full ? static_cast<const void*>(s0 + k * step * row_stride)
                                 : static_cast<const void*>(src),
                            full);
        }
    } else {
        for (int i = threadIdx.x; i < ROWS * chunks; i += THREADS) {
            const int r = i / chunks, c = (i % chunks) * 8;
            const bool full = r < valid_rows && c < valid_cols;
            cx_cp_async<16>(cx_shared_address(dst + r * PITCH + c),
                            full ? static_cast<const void*>(src + r * row_stride + c)
                                 : static_cast<const void*>(src),
                            full);
        }
    }
}

// The bias of a thread's four scores of an 8-key block (s's order: keys j and j + 1 of row
// row0, then of row0 + 8), 0 past the last key or row. A bias that repeats along the rows
// (B_ROW 0: a padding mask broadcast over the queries) is read once for both rows; two adjacent
// keys come in one load where they are adjacent and aligned in memory (`pairs`) and the block
// is not in the last tile.
template <class CFG, class TB>
__device__ __forceinline__ void bias_block(const TB* bias, int row0, int j, bool tail, bool pairs,
                                           float (&b)[4]) {
    auto row_pair = [&](int row, float& lo, float& hi) {
        const TB* p = bias + row * CFG::B_ROW + j * CFG::B_COL;
        if (pairs && !tail) {
            const cx_packed<TB, 2> v = *reinterpret_cast<const cx_packed<TB, 2>*>(p);
            lo = float(cx_load(&v.v[0]));
            hi = float(cx_load(&v.v[1]));
        } else {
            lo = j < CFG::SK ? float(cx_load(p)) : 0.0f;
            hi = j + 1 < CFG::SK ? float(cx_load(p + CFG::B_COL)) : 0.0f;
        }
    };
    b[0] = b[1] = b[2] = b[3] = 0.0f;
    if (CFG::B_ROW == 0 || row0 < CFG::SQ) row_pair(row0, b[0], b[1]);
    if constexpr (CFG::B_ROW == 0) {
        b[2] = b[0];
        b[3] = b[1];
    } else if (row0 + 8 < CFG::SQ) {
        row_pair(row0 + 8, b[2], b[3]);
    }
}

// One online-softmax step of this thread's two rows of a 16-row tile (row0 = its row g, and
// row0 + 8) over one tile of keys starting at j0. s holds the scores of NS blocks of 8 keys in
// the accumulator layout of mma.sync and wgmma alike (s[4n + e]: row g for e < 2, else g + 8;
// key j0 + 8n + 2 t4 + e % 2). Scales and biases them (or, RAW, keeps the raw products and
// applies the scale inside exp2's argument), masks the keys past the end (tail: this is the
// last tile), turns s into probabilities, updates the running maximum and sum, and gives each
// row's factor for the output accumulators in alpha (rescale_rows applies it; the wgmma kernel
// does so only once the previous tile's P . V, still running while this step runs, is done).
template <class CFG, int NS, class TB>
__device__ __forceinline__ void softmax_step(float* s, const TB* bias, int row0, int j0, int t4,
                                             bool tail, float (&m_run)[2], float (&l_run)[2],
                                             float (&alpha)[2]) {
    const float ninf = -__int_as_float(0x7f800000);
    constexpr float log2e = 1.4426950408889634f;
    // Probabilities are exp2 of log2-unit scores. Without a bias (and with a positive scale, so
    // the order of scores is kept) the raw products and their maximum are kept as they are and
    // the scale is applied inside exp2's argument, one FFMA per score: exp2(s * c - m * c).
    // With a bias the scores are scaled and biased first (one FFMA) and the factor is 1.
    constexpr bool RAW = !CFG::HAS_BIAS && CFG::SCALE > 0.0f;
    constexpr float scale_log2 = CFG::SCALE * log2e;
    constexpr float exp_factor = RAW ? scale_log2 : 1.0f;
    float tile_max[2] = {ninf, ninf};
    bool pairs = false;
    if constexpr (CFG::HAS_BIAS)
        pairs = CFG::B_COL == 1 && CFG::B_ROW % 2 == 0 &&
                reinterpret_cast<unsigned long long>(bias) % (2 * sizeof(TB)) == 0;
#pragma unroll
    for (int n = 0; n < NS; ++n) {
        float b[4];
        if constexpr (CFG::HAS_BIAS)
            bias_block<CFG>(bias, row0, j0 + n * 8 + t4 * 2, tail, pairs, b);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int r = e / 2, j = j0 + n * 8 + t4 * 2 + e % 2;
            float x = RAW ? s[4 * n + e] : s[4 * n + e] * scale_log2;
            // Past the last row or key the bias is 0: the product alone, as without one.
            if (CFG::HAS_BIAS) x = fmaf(s[4 * n + e], scale_log2, b[e] * log2e);
            if (tail && j >= CFG::SK) x = ninf;
            s[4 * n + e] = x;
            tile_max[r] = fmaxf(tile_max[r], x);
        }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
        tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
        const float m_old = m_run[r];
        const float m_new = fmaxf(m_old, tile_max[r]);
        // A row that has seen only -inf so far keeps offset 0: exp2(-inf) = 0, no NaN.
        const float use_new = m_new == ninf ? 0.0f : m_new;
        alpha[r] = m_old == ninf ? 0.0f : cx_ex2_approx((m_old - use_new) * exp_factor);
        m_run[r] = m_new;
        const float offset = use_new * exp_factor;
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < NS; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const float p = cx_ex2_approx(fmaf(s[4 * n + r * 2 + e], exp_factor, -offset));
                s[4 * n + r * 2 + e] = p;
                sum += p;
            }
        l_run[r] = l_run[r] * alpha[r] + sum;
    }
}

// The output accumulators o (NV blocks of 8 columns, accumulator layout) of the thread's two
// rows times each row's factor.
template <int NV> __device__ __forceinline__ void rescale_rows(float* o, const float (&alpha)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int n = 0; n < NV; ++n) {
            o[4 * n + r * 2] *= alpha[r];
            o[4 * n + r * 2 + 1] *= alpha[r];
        }
}

// softmax_step, then the output accumulators rescaled at once.
template <class CFG, int NS, int NV, class TB>
__device__ __forceinline__ void online_softmax(float* s, float* o, const TB* bias, int row0, int j0,
                                               int t4, bool tail, float (&m_run)[2],
                                               float (&l_run)[2]) {
    float alpha[2];
    softmax_step<CFG, NS>(s, bias, row0, j0, t4, tail, m_run, l_run, alpha);
    rescale_rows<NV>(o, alpha);
}

// The A fragment of P . V for 16 keys from the probabilities of two 8-key blocks s[0..7] (the
// accumulator layout that online_softmax leaves them in), rounded to T.
template <class T>
__device__ __forceinline__ void pack_probabilities(unsigned (&a)[4], const float* s, const T* tag) {
    a[0] = pack2(s[0], s[1], tag);
    a[1] = pack2(s[2], s[3], tag);
    a[2] = pack2(s[4], s[5], tag);
    a[3] = pack2(s[6], s[7], tag);
}

// O / l of this thread's two rows (row0, row0 + 8) of a 16-row tile: o holds NV blocks of 8
// output columns in the accumulator layout; l_run the thread's part of each row's sum. A row
// whose sum is not positive or not a number stores zeros when CFG::ZERO_NAN_ROWS.
template <class CFG, int NV, class TO>
__device__ __forceinline__ void store_rows(const float* o, TO* out, int row0, int t4,
                                           const float (&l_run)[2]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float l = l_run[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const bool zero = CFG::ZERO_NAN_ROWS && !(l > 0.0f);
        const float inv = 1.0f / l;
        const int row = row0 + r * 8;
        if (row >= CFG::SQ) continue;
#pragma unroll
        for (int n = 0; n < NV; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = n * 8 + t4 * 2 + e;
                if (col >= CFG::DV) continue;
                const float value = zero ? 0.0f : o[4 * n + r * 2 + e] * inv;
                cx_store(out + row * CFG::O_ROW + col * CFG::O_COL, value);
            }
    }
}

} // namespace cx_attention_detail

// CFG: SQ, SK, D, DV (lens), DP, DVP (D and DV rounded up to 16), the element strides
// Q_ROW, Q_COL (q[i][d]), K_ROW, K_COL (key j's element d, i.e. kt[d][j] = kt + d * K_COL +
// j * K_ROW), V_ROW, V_COL, B_ROW, B_COL (bias[i][j]), O_ROW, O_COL, SCALE, HAS_BIAS,
// ZERO_NAN_ROWS, and the config: WARPS, MT (16-row tiles per warp), BC (keys per tile).
// q, kt, v, bias, out point at this batch entry's element 0.
template <class CFG, class T, class TB, class TO>
__device__ __forceinline__ void cx_attention(const T* __restrict__ q, const T* __restrict__ kt,
                                             const T* __restrict__ v, const TB* __restrict__ bias,
                                             TO* __restrict__ out, T* smem) {
    using namespace cx_attention_detail;
    constexpr int MT = CFG::MT, BC = CFG::BC, BR = CFG::WARPS * 16 * MT;
    constexpr int KD = CFG::DP / 16, NV = CFG::DVP / 8, NS = BC / 8, THREADS = CFG::WARPS * 32;
    // A warp's q fragments stay in registers when they are few; otherwise they are read from
    // the q tile (which stays in shared memory) for every key tile, so that the scores and the
    // output accumulators of two row tiles fit the register file.
    constexpr bool Q_IN_REGS = MT * KD <= 8;
    constexpr int QP = CFG::DP + 8, VP = CFG::DVP + 8; // row pitch: ldmatrix rows on distinct banks
    // q, then two buffers of key rows, then two of value rows.
    T* qs = smem;
    T* ks0 = qs + BR * QP;
    T* vs0 = ks0 + 2 * BC * QP;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t4 = lane % 4;
    const int q0 = blockIdx.y * BR;
    const T* type_tag = nullptr;
    const float ninf = -__int_as_float(0x7f800000);

    // The q tile and the first key and value tiles in one group.
    load_tile_async<T, BR, CFG::DP, QP, THREADS>(qs, q + q0 * CFG::Q_ROW, CFG::Q_ROW, CFG::Q_COL,
                                                 CFG::SQ - q0, CFG::D);
    load_tile_async<T, BC, CFG::DP, QP, THREADS>(ks0, kt, CFG::K_ROW, CFG::K_COL, CFG::SK, CFG::D);
    load_tile_async<T, BC, CFG::DVP, VP, THREADS>(vs0, v, CFG::V_ROW, CFG::V_COL, CFG::SK, CFG::DV);
    cx_cp_async_commit();
    cx_cp_async_wait<0>();
    __syncthreads();
    // The A fragment of q's row tile mt, columns 16kk..16kk+15.
    auto load_q = [&](unsigned(&f)[4], int mt, int kk) {
        const int mi = lane / 8;
        const int row = (warp * MT + mt) * 16 + (mi % 2) * 8 + lane % 8;
        const int col = kk * 16 + (mi / 2) * 8;
        cx_ldmatrix_x4(f, cx_shared_address(qs + row * QP + col));
    };
    unsigned qf[Q_IN_REGS ? MT : 1][Q_IN_REGS ? KD : 1][4];
    if constexpr (Q_IN_REGS) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int kk = 0; kk < KD; ++kk)
                load_q(qf[mt][kk], mt, kk);
    }

    float o[MT][NV][4];
    float m_run[MT][2], l_run[MT][2]; // rows g and g + 8 of each row tile; l: this thread's part
    // Row r (0: g, 1: g + 8) of the warp's row tile mt; computed where used, not held in
    // registers (d = 128 with two row tiles uses every one).
    auto row_of = [&](int mt, int r) { return q0 + (warp * MT + mt) * 16 + g + r * 8; };
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int n = 0; n < NV; ++n)
            o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.0f;
        m_run[mt][0] = m_run[mt][1] = ninf;
        l_run[mt][0] = l_run[mt][1] = 0.0f;
    }

    const bool warp_active = q0 + warp * MT * 16 < CFG::SQ;
    for (int j0 = 0, tile = 0; j0 < CFG::SK; j0 += BC, ++tile) {
        const T* ks = ks0 + (tile % 2) * BC * QP;
        const T* vs = vs0 + (tile % 2) * BC * VP;
        // Start the next tiles into the other buffers (free: every warp passed the barrier at
        // the end of the previous iteration), then wait for this tile's.
        const int next = j0 + BC;
        if (next < CFG::SK) {
            load_tile_async<T, BC, CFG::DP, QP, THREADS>(ks0 + ((tile + 1) % 2) * BC * QP,
                                                         kt + next * CFG::K_ROW, CFG::K_ROW,
                                                         CFG::K_COL, CFG::SK - next, CFG::D);
            load_tile_async<T, BC, CFG::DVP, VP, THREADS>(vs0 + ((tile + 1) % 2) * BC * VP,
                                                          v + next * CFG::V_ROW, CFG::V_ROW,
                                                          CFG::V_COL, CFG::SK - next, CFG::DV);
            cx_cp_async_commit();
            cx_cp_async_wait<1>();
        } else {
            cx_cp_async_wait<0>();
        }
        __syncthreads();

        // A warp whose rows all lie past the end (the last block of a short sequence) only
        // helps load the tiles; the SM's issue slots go to the warps that have rows.
        if (!warp_active) {
            __syncthreads();
            continue;
        }
        // The last tile's 16-key chunks that hold no key take no part in O += P . V.
        const bool tail = j0 + BC > CFG::SK;
        // S = q . k^T: each key fragment loaded once serves the warp's MT row tiles.
        float s[MT][NS][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int n = 0; n < NS; ++n)
                s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KD; ++kk) {
            unsigned qa[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                if constexpr (Q_IN_REGS) {
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        qa[mt][e] = qf[mt][kk][e];
                } else {
                    load_q(qa[mt], mt, kk);
                }
            }
#pragma unroll
            for (int n = 0; n < NS; n += 2) {
                const int mi = lane / 8;
                const int key = (n + mi / 2) * 8 + lane % 8, col = kk * 16 + (mi % 2) * 8;
                unsigned b4[4];
                cx_ldmatrix_x4(b4, cx_shared_address(ks + key * QP + col));
                const unsigned b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    cx_mma_16(s[mt][n], qa[mt], b0, type_tag);
                    cx_mma_16(s[mt][n + 1], qa[mt], b1, type_tag);
                }
            }
        }

        // Scale, bias, mask, online softmax; the output accumulators rescaled.
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
            online_softmax<CFG, NS, NV>(&s[mt][0][0], &o[mt][0][0], bias, row_of(mt, 0), j0, t4,
                                        tail, m_run[mt], l_run[mt]);

            // O += P . V: P's accumulators of keys 16kk..16kk+15 are the A fragment; each value
            // fragment loaded once serves the MT row tiles.
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) {
            if (tail && j0 + kk * 16 >= CFG::SK) continue; // probabilities all 0
            unsigned a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
                pack_probabilities(a[mt], &s[mt][2 * kk][0], type_tag);
#pragma unroll
            for (int n = 0; n < NV; n += 2) {
                const int mi = lane / 8;
                const int key = kk * 16 + (mi % 2) * 8 + lane % 8, col = n * 8 + (mi / 2) * 8;
                unsigned b4[4];
                cx_ldmatrix_x4_trans(b4, cx_shared_address(vs + key * VP + col));
                const unsigned b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    cx_mma_16(o[mt][n], a[mt], b0, type_tag);
                    cx_mma_16(o[mt][n + 1], a[mt], b1, type_tag);
                }
            }
        }
        __syncthreads(); // every warp is done with this tile's buffers before they are refilled
    }

#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
        store_rows<CFG, NV>(&o[mt][0][0], out, row_of(mt, 0), t4, l_run[mt]);
}
