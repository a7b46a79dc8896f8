// Fused attention, one block per (batch entry, CFG::BR query rows): out = softmax(scale * q . kt
// + bias) . v with the scores never in memory (flash-attention style, docs/ARCHITECTURE.md,
// "Kernel families"). Included by the kernels attention_codegen writes; they define the shape
// struct CFG (lens, strides, scale, flags, rows per block) and call cx_attention.
//
// BR / 16 warps, each owning 16 query rows (more rows per block share each key tile among more
// warps: less traffic for long sequences). The block's q tile is read once into shared memory
// and each warp keeps its rows as mma A fragments in registers; then for every tile of 64 keys:
//   - the block's copy of the key rows (kt's columns) and value rows into shared memory was
//     started (cp.async) while the previous tile was computed, into the other of two buffers;
//   - S = q . k^T on mma.sync m16n8k16 (f16 or bf16 in, f32 accumulators), k fragments by
//     ldmatrix from the key rows;
//   - scale, bias (read per element through its strides), keys past the end set to -inf;
//   - online softmax in f32: the running row maximum m and sum l, the output accumulators
//     rescaled by exp(m_old - m_new) whenever the maximum grows;
//   - O += P . V with P's accumulators repacked in registers as the next mma's A fragments
//     and V's fragments by ldmatrix.trans from the value rows.
// At the end O / l is stored. A row whose l is not positive (every score -inf) or not a number
// stores zeros when CFG::zero_nan_rows (torch's safe softmax), else what 0/0 or NaN gives.
// Operands padded to multiples of 16 along the head dims with zeros; any strides, any
// sequence lengths (rows and keys past the end are zero / masked).
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
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                    const cx_f16*) {
    cx_mma_f16(d, a, b);
}
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2],
                                    const cx_bf16*) {
    cx_mma_bf16(d, a, b);
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
// valid rows); otherwise copied at once. The caller commits and waits.
template <class T, int ROWS, int COLS, int PITCH>
__device__ __forceinline__ void load_tile_async(T* dst, const T* src, long long row_stride,
                                                long long col_stride, int valid_rows,
                                                int valid_cols) {
    const bool vector = col_stride == 1 && row_stride % 8 == 0 && valid_cols % 8 == 0 &&
                        (reinterpret_cast<unsigned long long>(src) & 15) == 0;
    if (!vector) {
        load_tile<T, ROWS, COLS, PITCH>(dst, src, row_stride, col_stride, valid_rows, valid_cols);
        return;
    }
    constexpr int chunks = COLS / 8;
    for (int i = threadIdx.x; i < ROWS * chunks; i += blockDim.x) {
        const int r = i / chunks, c = (i % chunks) * 8;
        const bool full = r < valid_rows && c < valid_cols;
        cx_cp_async<16>(cx_shared_address(dst + r * PITCH + c),
                        full ? static_cast<const void*>(src + r * row_stride + c)
                             : static_cast<const void*>(src),
                        full);
    }
}

} // namespace cx_attention_detail

// CFG: SQ, SK, D, DV (lens), DP, DVP (D and DV rounded up to 16), the element strides
// Q_ROW, Q_COL (q[i][d]), K_ROW, K_COL (key j's element d, i.e. kt[d][j] = kt + d * K_COL +
// j * K_ROW), V_ROW, V_COL, B_ROW, B_COL (bias[i][j]), O_ROW, O_COL, SCALE, HAS_BIAS,
// ZERO_NAN_ROWS. q, kt, v, bias, out point at this batch entry's element 0.
template <class CFG, class T, class TB, class TO>
__device__ __forceinline__ void cx_attention(const T* __restrict__ q, const T* __restrict__ kt,
                                             const T* __restrict__ v, const TB* __restrict__ bias,
                                             TO* __restrict__ out, T* smem) {
    using namespace cx_attention_detail;
    constexpr int BR = CFG::BR, BC = 64;
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
    load_tile_async<T, BR, CFG::DP, QP>(qs, q + q0 * CFG::Q_ROW, CFG::Q_ROW, CFG::Q_COL,
                                        CFG::SQ - q0, CFG::D);
    load_tile_async<T, BC, CFG::DP, QP>(ks0, kt, CFG::K_ROW, CFG::K_COL, CFG::SK, CFG::D);
    load_tile_async<T, BC, CFG::DVP, VP>(vs0, v, CFG::V_ROW, CFG::V_COL, CFG::SK, CFG::DV);
    cx_cp_async_commit();
    cx_cp_async_wait<0>();
    __syncthreads();
    unsigned qf[CFG::DP / 16][4];
#pragma unroll
    for (int kk = 0; kk < CFG::DP / 16; ++kk) {
        const int mi = lane / 8;
        const int row = warp * 16 + (mi % 2) * 8 + lane % 8, col = kk * 16 + (mi / 2) * 8;
        cx_ldmatrix_x4(qf[kk], cx_shared_address(qs + row * QP + col));
    }

    float o[CFG::DVP / 8][4];
#pragma unroll
    for (int n = 0; n < CFG::DVP / 8; ++n)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m_run[2] = {ninf, ninf}; // rows g and g + 8 of this warp
    float l_run[2] = {0.0f, 0.0f}; // this thread's part of the row sums
    const int rows[2] = {q0 + warp * 16 + g, q0 + warp * 16 + g + 8};
    constexpr float log2e = 1.4426950408889634f;

    for (int j0 = 0, tile = 0; j0 < CFG::SK; j0 += BC, ++tile) {
        const T* ks = ks0 + (tile % 2) * BC * QP;
        const T* vs = vs0 + (tile % 2) * BC * VP;
        // Start the next tiles into the other buffers (free: every warp passed the barrier at
        // the end of the previous iteration), then wait for this tile's.
        const int next = j0 + BC;
        if (next < CFG::SK) {
            load_tile_async<T, BC, CFG::DP, QP>(ks0 + ((tile + 1) % 2) * BC * QP,
                                                kt + next * CFG::K_ROW, CFG::K_ROW, CFG::K_COL,
                                                CFG::SK - next, CFG::D);
            load_tile_async<T, BC, CFG::DVP, VP>(vs0 + ((tile + 1) % 2) * BC * VP,
                                                 v + next * CFG::V_ROW, CFG::V_ROW, CFG::V_COL,
                                                 CFG::SK - next, CFG::DV);
            cx_cp_async_commit();
            cx_cp_async_wait<1>();
        } else {
            cx_cp_async_wait<0>();
        }
        __syncthreads();

        float s[BC / 8][4];
#pragma unroll
        for (int n = 0; n < BC / 8; ++n)
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < CFG::DP / 16; ++kk)
#pragma unroll
            for (int n = 0; n < BC / 8; n += 2) {
                const int mi = lane / 8;
                const int key = (n + mi / 2) * 8 + lane % 8, col = kk * 16 + (mi % 2) * 8;
                unsigned b4[4];
                cx_ldmatrix_x4(b4, cx_shared_address(ks + key * QP + col));
                const unsigned b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};
                mma(s[n], qf[kk], b0, type_tag);
                mma(s[n + 1], qf[kk], b1, type_tag);
            }

        // Scale, bias, mask; the tile's row maxima.
        float tile_max[2] = {ninf, ninf};
#pragma unroll
        for (int n = 0; n < BC / 8; ++n)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int r = e / 2, j = j0 + n * 8 + t4 * 2 + e % 2;
                float x = s[n][e] * CFG::SCALE;
                if (CFG::HAS_BIAS && j < CFG::SK && rows[r] < CFG::SQ)
                    x += cx_load(bias + rows[r] * CFG::B_ROW + j * CFG::B_COL);
                if (j >= CFG::SK) x = ninf;
                s[n][e] = x;
                tile_max[r] = fmaxf(tile_max[r], x);
            }
        float alpha[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
            tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
            const float m_new = fmaxf(m_run[r], tile_max[r]);
            // A row that has seen only -inf so far keeps offset 0: exp(-inf) = 0, no NaN.
            const float use_new = m_new == ninf ? 0.0f : m_new;
            const float use_old = m_run[r] == ninf ? 0.0f : m_run[r];
            alpha[r] = m_run[r] == ninf ? 0.0f : exp2f((use_old - use_new) * log2e);
            m_run[r] = m_new;
            float sum = 0.0f;
#pragma unroll
            for (int n = 0; n < BC / 8; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float p = exp2f((s[n][r * 2 + e] - use_new) * log2e);
                    s[n][r * 2 + e] = p;
                    sum += p;
                }
            l_run[r] = l_run[r] * alpha[r] + sum;
        }
#pragma unroll
        for (int n = 0; n < CFG::DVP / 8; ++n) {
            o[n][0] *= alpha[0];
            o[n][1] *= alpha[0];
            o[n][2] *= alpha[1];
            o[n][3] *= alpha[1];
        }

        // O += P . V: P's accumulators of keys 16kk..16kk+15 are the A fragment.
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) {
            const unsigned a[4] = {pack2(s[2 * kk][0], s[2 * kk][1], type_tag),
                                   pack2(s[2 * kk][2], s[2 * kk][3], type_tag),
                                   pack2(s[2 * kk + 1][0], s[2 * kk + 1][1], type_tag),
                                   pack2(s[2 * kk + 1][2], s[2 * kk + 1][3], type_tag)};
#pragma unroll
            for (int n = 0; n < CFG::DVP / 8; n += 2) {
                const int mi = lane / 8;
                const int key = kk * 16 + (mi % 2) * 8 + lane % 8, col = n * 8 + (mi / 2) * 8;
                unsigned b4[4];
                cx_ldmatrix_x4_trans(b4, cx_shared_address(vs + key * VP + col));
                const unsigned b0[2] = {b4[0], b4[1]}, b1[2] = {b4[2], b4[3]};
                mma(o[n], a, b0, type_tag);
                mma(o[n + 1], a, b1, type_tag);
            }
        }
        __syncthreads(); // every warp is done with this tile's buffers before they are refilled
    }

#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float l = l_run[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const bool zero = CFG::ZERO_NAN_ROWS && !(l > 0.0f);
        const float inv = 1.0f / l;
        if (rows[r] >= CFG::SQ) continue;
#pragma unroll
        for (int n = 0; n < CFG::DVP / 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = n * 8 + t4 * 2 + e;
                if (col >= CFG::DV) continue;
                const float value = zero ? 0.0f : o[n][r * 2 + e] * inv;
                cx_store(out + rows[r] * CFG::O_ROW + col * CFG::O_COL, value);
            }
    }
}
