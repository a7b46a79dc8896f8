#include "cuda/codegen/gemm/kernel_plan.hpp"

#include "cuda/codegen/gemm/tma_operands.hpp"

#include <algorithm>
#include <bit>
#include <iomanip>
#include <sstream>

namespace conflux::cuda::gemm {

namespace {

bool fail(std::string* why, const std::string& message) {
    if (why) *why = message;
    return false;
}

bool plan_tile(tile_plan& t, const char* name, const gemm_operand& o, unsigned rows,
               const perf_config& c, unsigned element_bytes, unsigned threads, std::string* why) {
    t.major = o.major;
    t.rows = rows;
    t.outer = o.major == operand_major::k ? rows : c.tile_k;
    t.inner = o.major == operand_major::k ? c.tile_k : rows;
    t.row_bytes = t.inner * element_bytes;
    if (t.row_bytes % 16 != 0)
        return fail(why, std::string(name) + "'s shared tile rows of " + std::to_string(t.inner) +
                             " elements (" + std::to_string(t.row_bytes) +
                             " bytes) are not a multiple of 16 bytes");
    t.block_bytes = t.row_bytes;
    if (c.wgmma) {
        // wgmma reads the hardware's swizzle: blocks of 32, 64 or 128 bytes per row, each
        // block region starting on an 8-row boundary (so every stage's too).
        t.block_bytes = std::min(t.row_bytes, 128u);
        if (t.block_bytes < 32 || !std::has_single_bit(t.block_bytes) ||
            t.row_bytes % t.block_bytes != 0)
            return fail(why, std::string(name) + "'s shared tile rows of " +
                                 std::to_string(t.row_bytes) +
                                 " bytes are not a whole number of wgmma swizzle blocks (32, 64 "
                                 "or 128 bytes)");
        if (t.outer % 8 != 0)
            return fail(why, std::string(name) + "'s shared tile has " + std::to_string(t.outer) +
                                 " rows, not a multiple of wgmma's 8-row groups");
    }
    const unsigned chunks = t.block_bytes / 16;
    if (std::has_single_bit(chunks)) {
        t.swizzle_div = std::max(1u, 8 / chunks);
        t.swizzle_mod = std::min(chunks, 8u);
    }
    t.stage_bytes = std::size_t(t.outer) * t.row_bytes;

    if (c.vector != 0) {
        if (c.vector > o.max_vector)
            return fail(why, "vector width " + std::to_string(c.vector) + " is too wide for " +
                                 name + " (at most " + std::to_string(o.max_vector) + ": " +
                                 o.vector_limit_reason + ")");
        if (c.vector > 1 && c.vector * element_bytes < 4)
            return fail(why, "vector width " + std::to_string(c.vector) + " copies " +
                                 std::to_string(c.vector * element_bytes) +
                                 " bytes, which cp.async cannot (4, 8 or 16)");
        t.vector = c.vector;
    } else {
        t.vector = o.max_vector * element_bytes >= 4 ? o.max_vector : 1;
    }
    const unsigned bytes = t.vector * element_bytes;
    t.async = bytes == 4 || bytes == 8 || bytes == 16;
    const std::size_t total = std::size_t(t.outer) * t.inner / t.vector;
    t.loads_per_thread = unsigned((total + threads - 1) / threads);
    t.loads_exact = total % threads == 0;
    return true;
}

// The warpgroup shape of a _wgmma config: 4 consecutive warps along M form a warpgroup,
// which issues m64nNk16 instructions over its share of the block's tile.
bool plan_wgmma(kernel_plan& k, const perf_config& c, const gemm_problem& p,
                const gemm_device_limits& limits, std::string* why) {
    if (!limits.wgmma) return fail(why, "wgmma configs run only on sm_90 (Hopper)");
    if (c.simt) return fail(why, "a config is either _simt or _wgmma");
    if (c.stages < 3)
        return fail(why, "a wgmma pipeline keeps one stage multiplying and one in flight: it "
                         "needs 3 to 8 stages, not " +
                             std::to_string(c.stages));
    if (p.type != dtype::f16 && p.type != dtype::bf16)
        return fail(why, "wgmma configs take f16 or bf16, not " + std::string(to_string(p.type)));
    if (c.warps_m % 4 != 0)
        return fail(why, "a wgmma config's warps along M (" + std::to_string(c.warps_m) +
                             ") are not whole warpgroups of 4");
    // _pp: each of the two warpgroups takes whole tiles (its share is the tile).
    k.groups_m = c.ping_pong ? 1 : c.warps_m / 4;
    k.groups_n = c.ping_pong ? 1 : c.warps_n;
    k.group_tile_m = c.tile_m / k.groups_m;
    k.group_tile_n = c.tile_n / k.groups_n;
    if (k.group_tile_m % 64 != 0 || c.tile_m % k.groups_m != 0)
        return fail(why, "a warpgroup's " + std::to_string(c.tile_m / k.groups_m) +
                             " rows are not a multiple of wgmma's 64");
    if (k.group_tile_n % 8 != 0 || k.group_tile_n > 256 || c.tile_n % k.groups_n != 0)
        return fail(why, "a warpgroup's " + std::to_string(c.tile_n / k.groups_n) +
                             " columns are not a multiple of 8 up to 256 (wgmma's N)");
    k.frag_m = k.group_tile_m / 64;
    k.frag_n = k.group_tile_n / 8;
    if (k.frag_m * k.group_tile_n / 2 > 128)
        return fail(why, "a warpgroup's tile " + std::to_string(k.group_tile_m) + "x" +
                             std::to_string(k.group_tile_n) +
                             " needs more than 128 accumulator registers per thread");
    k.k_step = 16;
    return true;
}

} // namespace

bool mma_supports(dtype t) {
    return t == dtype::f16 || t == dtype::bf16 || t == dtype::f32;
}

std::optional<kernel_plan> make_kernel_plan(const perf_config& c, const gemm_problem& p,
                                            const gemm_device_limits& limits, std::string* why) {
    kernel_plan k;
    k.config = c;
    if (c.is_depthwise()) {
        fail(why, "a depthwise config, not one of the GEMM kernel");
        return std::nullopt;
    }
    if (c.tile_m == 0 || c.tile_n == 0 || c.tile_k == 0 || c.warps_m == 0 || c.warps_n == 0 ||
        c.stages == 0 || c.split_k == 0) {
        fail(why, "tile sizes, warps, stages and split-K must be positive");
        return std::nullopt;
    }
    if (c.tile_m > 1024 || c.tile_n > 1024 || c.tile_k > 1024) {
        fail(why, "tile sizes above 1024 are not supported");
        return std::nullopt;
    }
    if (c.warps_m * c.warps_n > 32) {
        fail(why, std::to_string(c.warps_m * c.warps_n) + " warps exceed 1024 threads per block");
        return std::nullopt;
    }
    k.threads = c.threads();
    k.load_threads = k.compute_threads = k.threads;
    if (c.warp_specialised) {
        if (!c.wgmma) {
            fail(why, "_ws is a form of the wgmma kernel");
            return std::nullopt;
        }
        if (c.split_k != 1) {
            fail(why, "a _ws block walks over whole output tiles: split-K must be 1, not " +
                          std::to_string(c.split_k));
            return std::nullopt;
        }
        if (k.threads > 1024) {
            fail(why, std::to_string(c.warps_m * c.warps_n) +
                          " multiplying warps and the producer warpgroup exceed 1024 threads");
            return std::nullopt;
        }
        if (c.ping_pong && (c.warps_m != 8 || c.warps_n != 1)) {
            fail(why, "a _pp block has two multiplying warpgroups taking turns (w8x1), not " +
                          std::to_string(c.warps_m) + "x" + std::to_string(c.warps_n) + " warps");
            return std::nullopt;
        }
        k.load_threads = perf_config::producer_threads;
        k.compute_threads = k.threads - k.load_threads;
        // The launch bounds give every thread the same registers (168 for 384 threads), and the
        // block's pool is that many per thread: the producers' loader state needs fewer, the
        // consumers' accumulators (up to 128) and epilogue more. What the producers give back is
        // all the consumers can claim: a claim beyond the pool would wait forever.
        // A _pp warpgroup of at most 64 accumulators a thread needs no more than the launch
        // bounds give, and ptxas ignores setmaxnreg in a kernel it compiles to fewer registers.
        const bool small_pp = c.ping_pong && std::size_t(c.tile_m) * c.tile_n / 128 <= 64;
        if (k.compute_threads >= 256 && !small_pp) {
            const unsigned launch = std::min(255u, 65536 / k.threads / 8 * 8);
            const unsigned pool = launch * k.threads;
            k.producer_registers = std::min(88u, launch);
            const unsigned left = pool - k.load_threads * k.producer_registers;
            k.consumer_registers = std::min(240u, left / k.compute_threads / 8 * 8);
            if (k.consumer_registers <= launch) k.producer_registers = k.consumer_registers = 0;
        }
    }
    if (c.stages < 2 || c.stages > 8) {
        fail(why, "the cp.async pipeline needs 2 to 8 stages, not " + std::to_string(c.stages));
        return std::nullopt;
    }
    if (c.split_k > 64) {
        fail(why, "split-K above 64 is not supported");
        return std::nullopt;
    }
    if (c.vector != 0 && (!std::has_single_bit(c.vector) || c.vector > 16)) {
        fail(why, "vector width must be 1, 2, 4, 8 or 16, not " + std::to_string(c.vector));
        return std::nullopt;
    }
    if (p.a.type != p.type || p.b.type != p.type) {
        fail(why, "operands of different types");
        return std::nullopt;
    }
    k.element_bytes = unsigned(size_of(p.type));
    if (c.vector * k.element_bytes > 16) {
        fail(why, "vector width " + std::to_string(c.vector) + " of " +
                      std::string(to_string(p.type)) + " exceeds 16 bytes");
        return std::nullopt;
    }
    if (c.tile_m % c.warps_m != 0 || c.tile_n % c.warps_n != 0) {
        fail(why, "warps " + std::to_string(c.warps_m) + "x" + std::to_string(c.warps_n) +
                      " do not divide the tile " + std::to_string(c.tile_m) + "x" +
                      std::to_string(c.tile_n));
        return std::nullopt;
    }
    k.warp_tile_m = c.tile_m / c.warps_m;
    k.warp_tile_n = c.tile_n / c.warps_n;
    k.mma = !c.simt;
    k.wgmma = c.wgmma;
    if (c.wgmma) {
        if (!plan_wgmma(k, c, p, limits, why)) return std::nullopt;
    } else if (k.mma) {
        if (!mma_supports(p.type)) {
            fail(why,
                 std::string(to_string(p.type)) + " has no tensor-core path: use a _simt config");
            return std::nullopt;
        }
        k.tf32 = p.type == dtype::f32;
        k.k_step = k.tf32 ? 8 : 16;
        if (k.warp_tile_m % 16 != 0 || k.warp_tile_n % 8 != 0) {
            fail(why, "a warp's tile " + std::to_string(k.warp_tile_m) + "x" +
                          std::to_string(k.warp_tile_n) + " is not made of 16x8 mma tiles");
            return std::nullopt;
        }
        k.frag_m = k.warp_tile_m / 16;
        k.frag_n = k.warp_tile_n / 8;
        if (k.frag_m * k.frag_n * 4 > 128) {
            fail(why, "a warp's tile " + std::to_string(k.warp_tile_m) + "x" +
                          std::to_string(k.warp_tile_n) +
                          " needs more than 128 accumulator registers per thread");
            return std::nullopt;
        }
    } else {
        k.k_step = 1;
        // A warp is 4 x 8 threads; each thread owns frag_m x frag_n outputs strided by 4 and 8.
        if (k.warp_tile_m % 4 != 0 || k.warp_tile_n % 8 != 0) {
            fail(why, "a SIMT warp's tile " + std::to_string(k.warp_tile_m) + "x" +
                          std::to_string(k.warp_tile_n) + " is not a multiple of its 4x8 threads");
            return std::nullopt;
        }
        k.frag_m = k.warp_tile_m / 4;
        k.frag_n = k.warp_tile_n / 8;
        const unsigned words =
            p.type == dtype::f32 || p.type == dtype::f16 || p.type == dtype::bf16 ? 1 : 2;
        if (k.frag_m * k.frag_n * words > 64) {
            fail(why, "a SIMT thread's " + std::to_string(k.frag_m) + "x" +
                          std::to_string(k.frag_n) +
                          " outputs need more than 64 accumulator registers");
            return std::nullopt;
        }
    }
    if (c.tile_k % k.k_step != 0) {
        fail(why, "tile K " + std::to_string(c.tile_k) + " is not a multiple of the mma's K " +
                      std::to_string(k.k_step));
        return std::nullopt;
    }
    const bool conv = p.family == gemm_family::convolution;
    if (!plan_tile(k.a, conv ? "the input" : "A", p.a, c.tile_m, c, k.element_bytes, k.load_threads,
                   why) ||
        !plan_tile(k.b, conv ? "the weights" : "B", p.b, c.tile_n, c, k.element_bytes,
                   k.load_threads, why))
        return std::nullopt;
    if (c.wgmma) {
        // An M/N-major operand's warpgroup share starts on a block (its descriptor's start).
        const bool a_off = k.a.major == operand_major::mn && k.groups_m > 1 &&
                           (k.group_tile_m * k.element_bytes) % k.a.block_bytes != 0;
        const bool b_off = k.b.major == operand_major::mn && k.groups_n > 1 &&
                           (k.group_tile_n * k.element_bytes) % k.b.block_bytes != 0;
        if (a_off || b_off) {
            fail(why, std::string("a warpgroup's share of the ") +
                          (a_off ? "m-major A" : "n-major B") +
                          " does not start on a swizzle block");
            return std::nullopt;
        }
    }
    if (c.tma) {
        if (!c.warp_specialised) {
            fail(why, "_tma is a form of the _ws and _pp kernels");
            return std::nullopt;
        }
        std::string reason;
        if (!plan_tma_operand(p, k.a, true, &reason) || !plan_tma_operand(p, k.b, false, &reason)) {
            fail(why, "no TMA copy: " + reason);
            return std::nullopt;
        }
    }
    // _ws: a full and an empty mbarrier per stage after the stages.
    k.barrier_bytes = c.warp_specialised ? 16 * std::size_t(c.stages) : 0;
    k.shared_bytes = std::size_t(c.stages) * (k.a.stage_bytes + k.b.stage_bytes) + k.barrier_bytes;
    if (k.shared_bytes > limits.shared_per_block) {
        fail(why, "the pipeline needs " + kib(k.shared_bytes) +
                      " of shared memory, the device allows " + kib(limits.shared_per_block));
        return std::nullopt;
    }

    k.k_tiles = (p.k + c.tile_k - 1) / c.tile_k;
    k.k_tiles_per_split = c.split_k == 1 ? k.k_tiles : (k.k_tiles + c.split_k - 1) / c.split_k;
    if (c.split_k > 1 &&
        (k.k_tiles < c.split_k || (c.split_k - 1) * k.k_tiles_per_split >= k.k_tiles)) {
        fail(why, "split-K " + std::to_string(c.split_k) + " leaves a split without work: K " +
                      std::to_string(p.k) + " is " + std::to_string(k.k_tiles) + " tiles of " +
                      std::to_string(c.tile_k));
        return std::nullopt;
    }
    k.tiles_m = (p.m + c.tile_m - 1) / c.tile_m;
    k.tiles_n = (p.n + c.tile_n - 1) / c.tile_n;
    const double blocks = double(k.tiles_m) * double(k.tiles_n) * double(p.batch()) * c.split_k;
    if (blocks > 2147483647.0) {
        std::ostringstream count;
        count << std::fixed << std::setprecision(0) << blocks;
        fail(why, "the grid of " + count.str() + " blocks is more than CUDA's limit of 2^31-1");
        return std::nullopt;
    }
    k.blocks = k.tiles_m * k.tiles_n * p.batch() * c.split_k;
    k.grid = c.warp_specialised ? std::min<std::size_t>(k.blocks, limits.sm_count) : k.blocks;
    return k;
}

std::string kib(std::size_t bytes) {
    return bytes % 1024 == 0 ? std::to_string(bytes / 1024) + " KiB"
                             : std::to_string(bytes) + " bytes";
}

} // namespace conflux::cuda::gemm
