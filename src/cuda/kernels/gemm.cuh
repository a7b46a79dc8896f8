// Tensor-core and copy primitives for the generated GEMM / implicit-GEMM convolution kernels
// (src/cuda/codegen/gemm/). Inline PTX only: NVRTC compiles these without any CUDA header.
//
// The mma.sync register layouts are in mma.cuh. ldmatrix hands lane l the 32-bit word (row
// l/4, word l%4) of each 8x8 matrix of 16-bit elements (8 rows of 16 bytes); .trans hands it
// (rows 2(l%4)..+1, column l/4) instead. Both fragment layouts are exactly that, which is why
// the generator can feed mma from shared memory with ldmatrix for 16-bit data in either major
// order and for K-major tf32.
#pragma once

#include "conflux/mma.cuh"
#include "conflux/reduce.cuh" // cx_reduce_add: the split-K finish sums like a reduction
#include "conflux/types.cuh"

// The shared-state-space address of a generic pointer into shared memory.
__device__ __forceinline__ unsigned cx_shared_address(const void* p) {
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return static_cast<unsigned>(a);
}

// cp.async of a BYTES-wide vector of which only the first src_bytes (0 to BYTES) are read, the
// rest zero-filled: the last vector of a row that ends inside it.
template <int BYTES>
__device__ __forceinline__ void cx_cp_async_bytes(unsigned dst, const void* src, int src_bytes) {
    if (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                     "r"(src_bytes)
                     : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src),
                     "n"(BYTES), "r"(src_bytes)
                     : "memory");
}

// cp.async of BYTES (4, 8 or 16) from global src to shared dst. When `full` is false nothing is
// read and the destination is zero-filled (src-size 0), which is how tiles are padded past the
// edges of a matrix and into a convolution's padding. 16-byte copies bypass L1 (.cg).
template <int BYTES>
__device__ __forceinline__ void cx_cp_async(unsigned dst, const void* src, bool full) {
    cx_cp_async_bytes<BYTES>(dst, src, full ? BYTES : 0);
}

__device__ __forceinline__ void cx_cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most PENDING of this thread's committed groups are still in flight.
template <int PENDING> __device__ __forceinline__ void cx_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// Block -> (split, z, tile row, tile column) of a grid of SPLITS x BATCH x TILES_M x TILES_N
// blocks. Tile rows go in groups of GROUP_ROWS so that the blocks running together reuse each
// other's A and B tiles from L2. m0 and n0 are the tile's first row and column.
template <int SPLITS, int BATCH, int TILES_M, int TILES_N, int GROUP_ROWS, int TILE_M, int TILE_N,
          class Offset>
__device__ __forceinline__ void cx_gemm_tile_of_block(int bid, int& split, int& z, Offset& m0,
                                                      Offset& n0) {
    constexpr int TILES = TILES_M * TILES_N, PER_GROUP = GROUP_ROWS * TILES_N;
    split = 0;
    z = 0;
    if constexpr (SPLITS > 1) {
        split = bid / (TILES * BATCH);
        bid -= split * (TILES * BATCH);
    }
    if constexpr (BATCH > 1) {
        z = bid / TILES;
        bid -= z * TILES;
    }
    const int group = bid / PER_GROUP;
    const int first_m = group * GROUP_ROWS;
    const int group_rows = TILES_M - first_m < GROUP_ROWS ? TILES_M - first_m : GROUP_ROWS;
    const int in_group = bid - group * PER_GROUP;
    m0 = (Offset)(first_m + in_group % group_rows) * TILE_M;
    n0 = (Offset)(in_group / group_rows) * TILE_N;
}

// A block's K loop: a ring of STAGES shared-memory stages, AHEAD K-tiles copied ahead of the one
// being multiplied (wgmma keeps one multiply running while it issues the next, so a stage is
// refilled one iteration later: STAGES - 2 ahead instead of STAGES - 1). Every iteration commits
// one (possibly empty) copy group, so waiting until at most AHEAD - 1 are pending means tile t
// has landed; the barrier after the wait also tells every warp that the stage about to be
// refilled is no longer read. load(stage, kt) starts tile kt's copies into a stage,
// multiply(stage) multiplies it, fence() makes the copies visible to the multiply (wgmma reads
// through the async proxy; nothing for mma.sync).
template <int STAGES, int AHEAD, class Load, class Multiply, class Fence>
__device__ __forceinline__ void cx_gemm_k_loop(int kt_begin, int kt_count, Load& load,
                                               Multiply& multiply, Fence fence) {
#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
        if (s < kt_count) load(s, kt_begin + s);
        cx_cp_async_commit();
    }
    for (int t = 0; t < kt_count; ++t) {
        cx_cp_async_wait<AHEAD - 1>();
        fence();
        __syncthreads();
        const int next = t + AHEAD;
        if (next < kt_count) load(next % STAGES, kt_begin + next);
        cx_cp_async_commit();
        multiply(t % STAGES);
    }
    cx_cp_async_wait<0>();
}

// The walk over the accumulators of the tensor-core layouts, blocks of 16 rows x 8 columns
// (mma.sync's C; a wgmma m64 block gives each warp one such block): thread (g, t) of a warp holds
// rows g and g + 8 and columns 2t and 2t + 1 of each block. The blocks are FRAG_M apart by ROW_STEP
// rows from row0 and FRAG_N apart by 8 columns from col0; value(mi, ni, h, e) is the value of
// block (mi, ni) at row half h and column 2t + e. Those inside the rows x cols matrix go to
// store(m, n, v), or both columns at once to store_pair(m, n, v0, v1) when PAIRED (cols even).
template <int FRAG_M, int FRAG_N, int ROW_STEP, bool PAIRED, class Offset, class Value, class Store,
          class StorePair>
__device__ __forceinline__ void cx_gemm_fragment_store(Offset row0, Offset col0, int g, int t,
                                                       Offset rows, Offset cols, Value&& value,
                                                       Store&& store, StorePair&& store_pair) {
#pragma unroll
    for (int mi = 0; mi < FRAG_M; ++mi) {
#pragma unroll
        for (int ni = 0; ni < FRAG_N; ++ni) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const Offset m = row0 + mi * ROW_STEP + g + h * 8;
                const Offset n = col0 + ni * 8 + t * 2;
                if (m < rows) {
                    if constexpr (PAIRED) {
                        if (n < cols) store_pair(m, n, value(mi, ni, h, 0), value(mi, ni, h, 1));
                    } else {
                        if (n < cols) store(m, n, value(mi, ni, h, 0));
                        if (n + 1 < cols) store(m, n + 1, value(mi, ni, h, 1));
                    }
                }
            }
        }
    }
}

// The staged store's walk: the block's finished tile parked in shared memory as storage values,
// one row per output row (BY_N: element (m, n) at [m][n]) or per output column ([n][m]), rows of
// STAGE_COLS elements (padded by 16 bytes against bank conflicts), read back by THREADS threads
// LANES consecutive elements of a row at a time (LANES > 1 only along n, with TILE_N a multiple
// of it: N is then a multiple too, so a chunk that starts inside the matrix ends inside it).
// store(m, n, at) gets each chunk inside the M x N matrix, at pointing into the stage. The
// walk's order makes consecutive threads read consecutive chunks of a row, so both the shared
// reads and the global stores the epilogue makes of them are contiguous.
template <int TILE_M, int TILE_N, int LANES, int THREADS, int STAGE_COLS, bool BY_N, class S,
          class Offset, class Store>
__device__ __forceinline__ void cx_gemm_staged_walk(const S* stage, int tid, Offset m0, Offset n0,
                                                    Offset rows, Offset cols, Store&& store) {
    constexpr int FAST = BY_N ? TILE_N / LANES : TILE_M; // steps along one staged row
    for (int e = tid; e < TILE_M * TILE_N / LANES; e += THREADS) {
        const int fast = e % FAST * LANES, slow = e / FAST;
        const Offset m = m0 + (BY_N ? slow : fast);
        const Offset n = n0 + (BY_N ? fast : slow);
        if (m < rows && n < cols) store(m, n, &stage[slow * STAGE_COLS + fast]);
    }
}

// The walk for an epilogue that reads other tensors (a residual, a bias) in whole chunks: the
// reads of BATCH chunks are issued (load(loads, m, n) into the epilogue's Loads) before any of
// them is finished (store(m, n, at, loads)). One chunk at a time, a thread waited a memory
// latency per chunk, as the compiler does not move a load above an earlier chunk's store, and
// a 1x1 convolution with a residual ran at under half of the memory's bandwidth.
template <int TILE_M, int TILE_N, int LANES, int THREADS, int STAGE_COLS, bool BY_N, int BATCH,
          class Loads, class S, class Offset, class Load, class Store>
__device__ __forceinline__ void cx_gemm_staged_walk_batched(const S* stage, int tid, Offset m0,
                                                            Offset n0, Offset rows, Offset cols,
                                                            Load&& load, Store&& store) {
    constexpr int FAST = BY_N ? TILE_N / LANES : TILE_M;
    constexpr int CHUNKS = TILE_M * TILE_N / LANES;
    constexpr int PER_THREAD = (CHUNKS + THREADS - 1) / THREADS;
    for (int first = 0; first < PER_THREAD; first += BATCH) {
        Loads loads[BATCH];
        Offset m[BATCH], n[BATCH];
        int at[BATCH];
        bool inside[BATCH];
#pragma unroll
        for (int j = 0; j < BATCH; ++j) {
            const int e = tid + (first + j) * THREADS;
            const int fast = e % FAST * LANES, slow = e / FAST;
            m[j] = m0 + (BY_N ? slow : fast);
            n[j] = n0 + (BY_N ? fast : slow);
            at[j] = slow * STAGE_COLS + fast;
            inside[j] = first + j < PER_THREAD && e < CHUNKS && m[j] < rows && n[j] < cols;
            if (inside[j]) load(loads[j], m[j], n[j]);
        }
#pragma unroll
        for (int j = 0; j < BATCH; ++j)
            if (inside[j]) store(m[j], n[j], &stage[at[j]], loads[j]);
    }
}

// LANES consecutive staged values (16 bytes, aligned) widened to the accumulator type.
template <int LANES, class S, class A>
__device__ __forceinline__ void cx_gemm_staged_chunk(const S* at, A (&v)[LANES]) {
    union {
        uint4 u;
        S s[LANES];
    } chunk;
    chunk.u = *reinterpret_cast<const uint4*>(at);
#pragma unroll
    for (int l = 0; l < LANES; ++l)
        v[l] = cx_load(&chunk.s[l]);
}

__device__ __forceinline__ void cx_ldmatrix_x4(unsigned (&r)[4], unsigned address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
}
__device__ __forceinline__ void cx_ldmatrix_x4_trans(unsigned (&r)[4], unsigned address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
}
__device__ __forceinline__ void cx_ldmatrix_x2(unsigned (&r)[2], unsigned address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(address)
                 : "memory");
}
__device__ __forceinline__ void cx_ldmatrix_x2_trans(unsigned (&r)[2], unsigned address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(address)
                 : "memory");
}

// A 32-bit word of shared memory, for tf32 fragments of M- or N-major tiles (ldmatrix has no
// 32-bit transpose).
__device__ __forceinline__ unsigned cx_lds32(unsigned address) {
    unsigned r;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(r) : "r"(address) : "memory");
    return r;
}

// f32 bits rounded to tf32 (round to nearest, ties away, as cuBLAS does); mma.tf32 would
// otherwise truncate the low mantissa bits.
__device__ __forceinline__ unsigned cx_to_tf32(unsigned f32_bits) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(f32_bits)));
    return r;
}

// One stage of the mma.sync warps' multiply: KSTEPS k-steps, each loading the warp's FRAG_M A
// fragments (load_a(f, mi, ks)) and FRAG_N B fragments, then issuing FRAG_M x FRAG_N m16n8
// multiplies into acc. B fragments come one at a time (load_b(f, ni, ks)) or, PAIRED_B (ldmatrix
// x4), two n-tiles per load (load_b_pair(r, ni, ks): r[0..1] for ni, r[2..3] for ni + 1) with an
// odd last one through load_b. KIND: 0 f16, 1 bf16, 2 tf32 (the fragments rounded to tf32 first:
// mma.tf32 would otherwise truncate them).
template <int KSTEPS, int FRAG_M, int FRAG_N, bool PAIRED_B, int KIND, class LoadA, class LoadB,
          class LoadBPair>
__device__ __forceinline__ void cx_mma_stage(float (&acc)[FRAG_M][FRAG_N][4], LoadA&& load_a,
                                             LoadB&& load_b, LoadBPair&& load_b_pair) {
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
        unsigned af[FRAG_M][4];
        unsigned bf[FRAG_N][2];
#pragma unroll
        for (int mi = 0; mi < FRAG_M; ++mi)
            load_a(af[mi], mi, ks);
        if constexpr (PAIRED_B) {
#pragma unroll
            for (int ni = 0; ni + 1 < FRAG_N; ni += 2) {
                unsigned r[4];
                load_b_pair(r, ni, ks);
                bf[ni][0] = r[0];
                bf[ni][1] = r[1];
                bf[ni + 1][0] = r[2];
                bf[ni + 1][1] = r[3];
            }
            if constexpr (FRAG_N % 2 == 1) load_b(bf[FRAG_N - 1], FRAG_N - 1, ks);
        } else {
#pragma unroll
            for (int ni = 0; ni < FRAG_N; ++ni)
                load_b(bf[ni], ni, ks);
        }
        if constexpr (KIND == 2) {
#pragma unroll
            for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    af[i][j] = cx_to_tf32(af[i][j]);
#pragma unroll
            for (int i = 0; i < FRAG_N; ++i)
#pragma unroll
                for (int j = 0; j < 2; ++j)
                    bf[i][j] = cx_to_tf32(bf[i][j]);
        }
#pragma unroll
        for (int mi = 0; mi < FRAG_M; ++mi)
#pragma unroll
            for (int ni = 0; ni < FRAG_N; ++ni) {
                if constexpr (KIND == 0)
                    cx_mma_f16(acc[mi][ni], af[mi], bf[ni]);
                else if constexpr (KIND == 1)
                    cx_mma_bf16(acc[mi][ni], af[mi], bf[ni]);
                else
                    cx_mma_tf32(acc[mi][ni], af[mi], bf[ni]);
            }
    }
}

// acc + a * b in the accumulator type of the SIMT path. Integers wrap (through unsigned) like
// the reference target instead of overflowing into undefined behaviour.
__device__ __forceinline__ float cx_gemm_fma(float a, float b, float acc) {
    return fmaf(a, b, acc);
}
__device__ __forceinline__ double cx_gemm_fma(double a, double b, double acc) {
    return fma(a, b, acc);
}
__device__ __forceinline__ long long cx_gemm_fma(long long a, long long b, long long acc) {
    return static_cast<long long>(static_cast<unsigned long long>(acc) +
                                  static_cast<unsigned long long>(a) *
                                      static_cast<unsigned long long>(b));
}

// One stage of the SIMT warps' multiply: TILE_K depths, each loading the thread's FRAG_M values
// of A (load_a(i, kk)) and FRAG_N of B (load_b(j, kk)) from the stage and accumulating their
// outer product with cx_gemm_fma.
template <int TILE_K, int FRAG_M, int FRAG_N, class Acc, class LoadA, class LoadB>
__device__ __forceinline__ void cx_simt_stage(Acc (&acc)[FRAG_M][FRAG_N], LoadA&& load_a,
                                              LoadB&& load_b) {
#pragma unroll
    for (int kk = 0; kk < TILE_K; ++kk) {
        Acc a[FRAG_M], b[FRAG_N];
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
            a[i] = load_a(i, kk);
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j)
            b[j] = load_b(j, kk);
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j)
                acc[i][j] = cx_gemm_fma(a[i], b[j], acc[i][j]);
    }
}

// The SIMT thread's accumulators: element (i, j) is at row m0 + 4 i and column n0 + 8 j; those
// inside the rows x cols matrix go to store(m, n, v).
template <int FRAG_M, int FRAG_N, class Offset, class Acc, class Store>
__device__ __forceinline__ void cx_simt_store(const Acc (&acc)[FRAG_M][FRAG_N], Offset m0,
                                              Offset n0, Offset rows, Offset cols, Store&& store) {
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) {
            const Offset m = m0 + i * 4;
            const Offset n = n0 + j * 8;
            if (m < rows && n < cols) store(m, n, acc[i][j]);
        }
    }
}

// The copying thread's index, kept by cx_tile_loader only where some of its copies can fall
// past the tile (TOTAL not a multiple of THREADS). An index member it does not need cost ptxas
// registers: 128x128 wgmma kernels went from 128 to 162 registers with it, one block per SM
// instead of two.
template <bool KEEP> struct cx_loader_thread { int thread_index; };
template <> struct cx_loader_thread<false> {};

// The copies of one operand's tile into a pipeline stage. The tile is OUTER rows of VPR vectors
// of VECTOR elements (k-major: a row per tile row of the GEMM, the vectors along k; mn-major: a
// row per depth, the vectors along m or n); thread tid copies vectors tid, tid + THREADS, ...
// (LOADS of them, the last possibly past TOTAL), so a thread's GEMM rows are fixed for the
// whole K loop. View, written by the generator for the operand, says where things are:
//   View::row_t row(Offset row)     a GEMM row's offset, whether it is inside, and (for a
//                                   convolution's input) the window's start per spatial axis
//   View::depth_t depth(int k)      a depth's offset and whether it is inside (and its taps)
//   bool inside(row_t, depth_t)     a convolution's window bounds (else true)
// COPY: 0 cp.async of the whole vector, 1 cp.async of what is left of a row that ends inside
// the vector (View::row_t::left elements), 2 an element through registers (VECTOR 1).
// What depends only on the row is computed once (setup); what depends on the depth once per
// K-tile, or once per load when threads do not share their depth.
template <class View, class S, class Offset, int OUTER, int VPR, int VECTOR, int THREADS, int LOADS,
          int TOTAL, bool K_MAJOR, int TILE_K, int COPY>
struct cx_tile_loader : cx_loader_thread<TOTAL % THREADS != 0> {
    static constexpr bool SAME_INNER = THREADS % VPR == 0;
    static constexpr bool DEPTH_PER_THREAD = K_MAJOR && SAME_INNER;
    static constexpr bool ROW_PER_THREAD = !K_MAJOR && SAME_INNER;
    static constexpr int ROWS = ROW_PER_THREAD ? 1 : LOADS;
    static constexpr int VECTOR_BYTES = VECTOR * (int)sizeof(S);

    static __device__ __forceinline__ int outer(int tid, int i) {
        return SAME_INNER ? tid / VPR + i * (THREADS / VPR) : (tid + i * THREADS) / VPR;
    }
    static __device__ __forceinline__ int inner(int tid, int i) {
        return SAME_INNER ? tid % VPR * VECTOR : (tid + i * THREADS) % VPR * VECTOR;
    }
    static __device__ __forceinline__ int row_in_tile(int tid, int i) {
        return K_MAJOR ? outer(tid, i) : inner(tid, i);
    }
    static __device__ __forceinline__ int depth_in_tile(int tid, int i) {
        return K_MAJOR ? inner(tid, i) : outer(tid, i);
    }

    unsigned sts[LOADS];
    typename View::row_t rows[ROWS];
    int depths[DEPTH_PER_THREAD ? 1 : LOADS];

    // tile_offset(outer, inner): the swizzled byte offset of a vector in a stage.
    template <class TileOffset>
    __device__ __forceinline__ void setup(int thread, Offset row0, TileOffset&& tile_offset) {
        const int tid = thread;
        if constexpr (TOTAL % THREADS != 0) this->thread_index = thread;
#pragma unroll
        for (int i = 0; i < LOADS; ++i) {
            sts[i] = tile_offset(K_MAJOR ? row_in_tile(tid, i) : depth_in_tile(tid, i),
                                 K_MAJOR ? depth_in_tile(tid, i) : row_in_tile(tid, i));
            if constexpr (!DEPTH_PER_THREAD) depths[i] = depth_in_tile(tid, i);
        }
#pragma unroll
        for (int i = 0; i < ROWS; ++i)
            rows[i] = View::row(row0 + row_in_tile(tid, i));
        if constexpr (DEPTH_PER_THREAD) depths[0] = inner(tid, 0);
    }

    // K-tile kt into the stage at `stage` (shared-state-space address; `stage_generic` the same
    // as a generic pointer, for register copies) from `base`.
    __device__ __forceinline__ void load(unsigned stage, unsigned char* stage_generic, int kt,
                                         const S* base) const {
        typename View::depth_t shared_depth;
        if constexpr (DEPTH_PER_THREAD) shared_depth = View::depth(kt * TILE_K + depths[0]);
#pragma unroll
        for (int i = 0; i < LOADS; ++i) {
            if constexpr (TOTAL % THREADS != 0)
                if (this->thread_index + i * THREADS >= TOTAL) continue;
            const typename View::depth_t d =
                DEPTH_PER_THREAD ? shared_depth : View::depth(kt * TILE_K + depths[i]);
            const typename View::row_t& r = rows[ROW_PER_THREAD ? 0 : i];
            const bool ok = r.ok && d.ok && View::inside(r, d);
            const Offset off = r.off + d.off;
            if constexpr (COPY == 0) {
                cx_cp_async<VECTOR_BYTES>(stage + sts[i],
                                          ok ? (const void*)(base + off) : (const void*)base, ok);
            } else if constexpr (COPY == 1) {
                const int left = r.left * (int)sizeof(S);
                const int bytes = ok ? (left < VECTOR_BYTES ? left : VECTOR_BYTES) : 0;
                cx_cp_async_bytes<VECTOR_BYTES>(
                    stage + sts[i], ok ? (const void*)(base + off) : (const void*)base, bytes);
            } else {
                *reinterpret_cast<S*>(stage_generic + sts[i]) = ok ? base[off] : S();
            }
        }
    }
};
