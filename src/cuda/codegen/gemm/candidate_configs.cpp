// The tuning space of the GEMM kernel and its ranking. The model estimates a config's time in
// units of one SM's tensor-core multiply-accumulates:
//   waves x (time of one wave) + split-K workspace traffic + a launch per kernel,
// where a wave is every SM holding as many blocks as shared memory, threads and registers
// allow, and a block's time is its K-loop's work slowed down by low arithmetic intensity
// (small tiles re-read operands more often than L2 can feed them), by too few warps per SM to
// hide latency, and by the slower SIMT / tf32 paths. Coarse, but it orders the obvious cases
// (big tiles for big problems, small tiles and split-K when a big tile leaves SMs idle) and
// the tuner measures the top of the list anyway.
#include "cuda/codegen/gemm/perf_config.hpp"

#include "cuda/codegen/gemm/depthwise_kernel.hpp"
#include "cuda/codegen/gemm/gemm_kernel.hpp"
#include "cuda/codegen/gemm/kernel_plan.hpp"

#include <algorithm>
#include <cmath>

namespace conflux::cuda {

namespace {

struct tile_shape {
    unsigned m, n, warps_m, warps_n;
};

std::vector<perf_config> tensor_core_space(dtype t) {
    const unsigned k = t == dtype::f32 ? 16 : 32;
    std::vector<perf_config> r;
    auto add = [&](tile_shape s, unsigned tile_k, unsigned stages, unsigned split) {
        r.push_back({s.m, s.n, tile_k, s.warps_m, s.warps_n, stages, split, 0, false});
    };
    const tile_shape big[] = {
        {128, 256, 2, 4}, {256, 128, 4, 2}, {128, 128, 2, 4}, {128, 128, 2, 2}};
    const tile_shape medium[] = {{128, 64, 2, 2}, {64, 128, 2, 2}, {64, 64, 2, 2}};
    const tile_shape small[] = {
        {64, 32, 2, 1}, {32, 64, 1, 2}, {32, 32, 1, 1}, {16, 64, 1, 2}, {16, 32, 1, 1}};
    for (const auto& s : big)
        for (unsigned stages : {3u, 4u})
            add(s, k, stages, 1);
    add({128, 256, 2, 4}, 2 * k, 3, 1);
    add({128, 128, 2, 2}, 2 * k, 3, 1);
    for (const auto& s : medium)
        for (unsigned stages : {3u, 4u})
            add(s, k, stages, 1);
    for (const auto& s : small)
        for (unsigned stages : {2u, 3u})
            add(s, k, stages, 1);
    for (unsigned split : {2u, 4u})
        for (const tile_shape& s :
             {tile_shape{128, 128, 2, 4}, tile_shape{64, 128, 2, 2}, tile_shape{64, 64, 2, 2},
              tile_shape{32, 64, 1, 2}, tile_shape{16, 64, 1, 2}})
            add(s, k, 3, split);
    return r;
}

// Hopper's warpgroup MMA (f16, bf16): warps_m counts 4 warps per warpgroup along M. 64-deep
// tiles are the 128-byte swizzle rows of a k-major operand; the 32-deep ones use the 64-byte
// swizzle.
std::vector<perf_config> wgmma_space() {
    std::vector<perf_config> r;
    auto add = [&](tile_shape s, unsigned tile_k, unsigned stages, unsigned split) {
        perf_config c{s.m, s.n, tile_k, s.warps_m, s.warps_n, stages, split, 0, false};
        c.wgmma = true;
        r.push_back(c);
    };
    // 192 columns: N = 768 (the hidden size of BERT-base and ViT-B) in four tiles, where 256
    // leaves three tiles per row and a wave of 132 SMs partly idle.
    const tile_shape big[] = {
        {128, 256, 8, 1}, {256, 128, 8, 1}, {128, 192, 8, 1}, {128, 128, 8, 1}};
    for (const auto& s : big)
        for (unsigned stages : {3u, 4u})
            add(s, 64, stages, 1);
    add({128, 256, 4, 2}, 64, 3, 1);
    const tile_shape medium[] = {
        {64, 256, 4, 1}, {64, 192, 4, 1}, {64, 128, 4, 1}, {128, 64, 8, 1}, {64, 64, 4, 1}};
    for (const auto& s : medium)
        for (unsigned stages : {4u, 6u})
            add(s, 64, stages, 1);
    add({128, 128, 8, 1}, 32, 6, 1);
    add({64, 32, 4, 1}, 64, 6, 1);
    add({64, 16, 4, 1}, 64, 6, 1);
    for (unsigned split : {2u, 4u})
        for (const tile_shape& s : {tile_shape{128, 128, 8, 1}, tile_shape{64, 128, 4, 1}})
            add(s, 64, 4, split);
    // Warp-specialised and persistent (_ws): the big tiles, whose blocks spend the most time
    // waiting on copies and on their epilogue.
    for (const auto& s : big)
        for (unsigned stages : {3u, 4u}) {
            add(s, 64, stages, 1);
            r.back().warp_specialised = true;
        }
    add({64, 256, 4, 1}, 64, 4, 1);
    r.back().warp_specialised = true;
    // Ping-pong (_pp): each warpgroup takes whole tiles in turn, so one's epilogue runs under the
    // other's multiply. Measured on an H100 (2026-12-06, `gpu_gemm_kernel_test shapes`): 128x128
    // s4 and 64x256 s4 were the fastest of ~70 candidates on 4096x3072x768 (0.043 against
    // 0.045 ms), 6304x2304x768 (0.052 against 0.056) and 100352x384x96 (0.043 against 0.051).
    for (const tile_shape& s : {tile_shape{128, 128, 8, 1}, tile_shape{64, 256, 8, 1}}) {
        add(s, 64, 4, 1);
        r.back().warp_specialised = r.back().ping_pong = true;
    }
    // The same forms with a TMA producer (_tma, matrix products whose operands TMA can copy;
    // valid() drops them elsewhere). Measured on an H100 (2026-12-06g, `gpu_gemm_kernel_test
    // tma`, f16, ms, best ordinary / best earlier _ws or _pp / _tma): 4096x3072x768 0.046 /
    // 0.042 / 0.037 (128x128 s4 _pp), 4096x768x3072 0.037 / 0.038 / 0.032 (128x192 s4 _ws),
    // 6304x2304x768 0.056 / 0.052 / 0.044 (128x128 s4 _pp), 4096^3 0.206 / 0.235 / 0.193
    // (128x256 s3 _ws; torch.matmul 0.191). 128x256 s4 _ws_tma ran twice as slow as s3 and is
    // left out.
    for (const tile_shape& s : {tile_shape{128, 128, 8, 1}, tile_shape{64, 256, 8, 1}}) {
        add(s, 64, 4, 1);
        r.back().warp_specialised = r.back().ping_pong = r.back().tma = true;
    }
    for (const auto& [s, stages] :
         {std::pair{tile_shape{128, 256, 8, 1}, 3u}, std::pair{tile_shape{128, 192, 8, 1}, 4u},
          std::pair{tile_shape{128, 192, 8, 1}, 3u}}) {
        add(s, 64, stages, 1);
        r.back().warp_specialised = r.back().tma = true;
    }
    return r;
}

std::vector<perf_config> simt_space() {
    std::vector<perf_config> r;
    auto add = [&](tile_shape s, unsigned stages, unsigned split) {
        r.push_back({s.m, s.n, 16, s.warps_m, s.warps_n, stages, split, 0, true});
    };
    const tile_shape shapes[] = {{128, 64, 2, 2}, {64, 64, 2, 2}, {64, 32, 2, 1},
                                 {32, 64, 1, 2},  {32, 32, 1, 1}, {16, 32, 1, 1}};
    for (const auto& s : shapes)
        for (unsigned stages : {2u, 3u})
            add(s, stages, 1);
    for (unsigned split : {2u, 4u})
        for (const tile_shape& s : {tile_shape{64, 64, 2, 2}, tile_shape{32, 32, 1, 1}})
            add(s, 2, split);
    return r;
}

// 32-bit registers per accumulator.
double accumulator_words(dtype t) {
    return t == dtype::f32 || t == dtype::f16 || t == dtype::bf16 ? 1.0 : 2.0;
}

// Relative multiply-accumulate rate of a path against f16 tensor cores on Hopper.
double path_rate(const gemm::kernel_plan& k, dtype t) {
    // wgmma issues the whole warpgroup's multiply from shared memory without ldmatrix.
    if (k.wgmma) return 1.7;
    if (k.mma) return k.tf32 ? 0.5 : 1.0;
    switch (t) {
    case dtype::f32:
    case dtype::f16:
    case dtype::bf16:
        return 1.0 / 8;
    case dtype::f64:
        return 1.0 / 16;
    default:
        return 1.0 / 32; // 64-bit integer multiply-add is emulated
    }
}

double estimated_time(const gemm::kernel_plan& k, const gemm_problem& p,
                      const gemm_device_limits& limits) {
    const perf_config& c = k.config;
    const double eb = k.element_bytes;
    // Registers per thread: accumulators, fragments, loader state and addressing.
    const double acc_words = accumulator_words(p.type);
    const double regs = k.wgmma ? k.frag_m * k.frag_n * 4.0 + 40
                        : k.mma ? k.frag_m * k.frag_n * 4.0 + k.frag_m * 4.0 + k.frag_n * 2.0 + 48
                                : k.frag_m * k.frag_n * acc_words + (k.frag_m + k.frag_n) * 2 + 40;
    const double by_shared =
        std::floor(double(limits.shared_per_sm) / double(k.shared_bytes + 1024));
    const double by_threads = std::floor(2048.0 / k.threads);
    const double by_regs = std::floor(65536.0 / (k.threads * std::min(255.0, regs)));
    // A _ws grid is one block per SM, each walking over tiles: as waves of one block per SM.
    const double per_sm =
        c.warp_specialised ? 1.0 : std::max(1.0, std::min({by_shared, by_threads, by_regs, 32.0}));
    const double concurrent = limits.sm_count * per_sm;
    const double waves = std::ceil(double(k.blocks) / concurrent);
    // Blocks an SM actually holds at once: fewer than it could when the grid is small.
    const double resident =
        std::max(1.0, std::min(per_sm, std::ceil(double(k.blocks) / limits.sm_count)));

    // Intensity: multiply-adds per byte of operand tile loaded. 128x128 f16 keeps the tensor
    // cores fed from L2; smaller tiles lose less than proportionally (fitted on an H200: 64x64
    // ran at 0.74 and 16x64 at 0.35 of 128x128's rate).
    const double intensity = double(c.tile_m) * c.tile_n / (double(c.tile_m + c.tile_n) * eb);
    const double feed = std::pow(std::min(1.0, intensity / 32.0), 0.6);
    const double warps_per_sm = resident * c.warps_m * c.warps_n;
    const double latency = std::min(1.0, warps_per_sm / 8.0);
    // Each K-tile ends in a barrier across the block's warps: 8-warp blocks with 32-deep f16
    // tiles ran at 0.8-0.87 of 4-warp ones, 64-deep tiles recovered most of it.
    const double barrier =
        1.0 - 0.2 * (c.warps_m * c.warps_n / 8.0) * std::min(1.0, 64.0 / (double(c.tile_k) * eb));
    const double pipeline = c.stages >= 4 ? 1.01 : c.stages == 2 ? 0.9 : 1.0;
    // _pp hides the ring's fill (and the epilogue, below) under the other warpgroup's tile.
    const double k_iters =
        double(k.k_tiles_per_split) + (c.ping_pong ? 0.0 : (c.stages - 1) * 0.25);
    const double block_work = k_iters * c.tile_m * c.tile_n * c.tile_k;
    // Blocks sharing an SM share its rate; a partly filled last wave is charged in full.
    const double wave_time =
        block_work * resident / (path_rate(k, p.type) * feed * latency * barrier * pipeline);
    double time = waves * wave_time;
    // _ws: measured on an H100 (2026-12-06), its best (128x256 s3) ran 4096^3 f16 at 611 TFLOP/s
    // against the ordinary 128x256 s4's 658, 8192^3 at 549 against 677; on LLaMA's output
    // projection (K = 512, f32 logits) 128x128 s4 _ws was about as fast as the tuned ordinary
    // tile. Its producers announce a stage only after waiting for the ring's next free one, so
    // the consumers wait on that hand-off: ranked behind the ordinary tiles until that changes,
    // so quick tuning rarely times them and exhaustive tuning does.
    if (c.warp_specialised && !c.ping_pong && !c.tma) time *= 1.15;
    // _tma: one thread issues whole swizzled tiles, so the producer keeps the ring full and the
    // consumers keep their registers; 0.84-0.94x the best earlier form's time on the shapes
    // above.
    if (c.tma) time *= 0.88;
    // A _ws / _pp kernel stages its tile for coalesced stores in shared memory of its own, next
    // to the ring; where both do not fit, its consumers store straight from their registers. On
    // an H100 (2026-12-06g) that made 128x256 s4 _ws_tma 2.1x slower than s3 on 4096x3072x768
    // and 1.24x at 4096^3 (and the cp.async _ws s4 form 1.33x slower there on 12-06).
    if (c.warp_specialised &&
        kernel_shared_bytes(p, c, store_walk::n_major) > limits.shared_per_block)
        time *= 2.0;
    // _pp: one warpgroup multiplies at a time, so a long K runs at one warpgroup's issue rate;
    // with few K-tiles per tile the hidden epilogue is worth more. Fitted on the same H100
    // shapes: 128x128 s4 _pp ran 0.8x the ordinary 128x128's time at K = 768 (12 K-tiles) and
    // 0.84x the best candidate's at K = 96, but 1.3x the best at K = 3072 (48 K-tiles).
    if (c.ping_pong) time *= 0.8 * (1.0 + double(k.k_tiles_per_split) / 64.0);
    // Register copies (no cp.async) serialise the pipeline.
    if (!k.a.async || !k.b.async) time *= 1.5;
    // Launch overhead (~3 us) in the same unit (~2.5e12 MAC/s per SM), and split-K's
    // partials: written once, read once by the finish kernel (~0.8 units per byte).
    const double launch = 7.5e6;
    time += launch;
    if (c.split_k > 1)
        time += launch + double(c.split_k) * p.batch() * p.m * p.n * acc_words * 4 * 2 * 0.8;
    return time;
}

// Multiply-adds per byte a problem must move at least (operands read once, output written
// once). Below ~50 per byte (EfficientNet's and MobileNet's expand convolutions: K of 16-112
// against N of 96-672) the H200 is bound by memory, not tensor cores, and the model above,
// which only counts multiply-adds, ranks the big tiles first: measured on such problems (f16,
// bias + SiLU epilogue, every candidate timed), the big wgmma tiles ran 1.2-1.6x slower than
// small mma.sync tiles with a 32-deep K and few stages, whose blocks are small enough for many
// to share an SM and keep its loads and stores in flight.
// Only where A is read once as M x K: a dot or a 1x1 convolution (a larger kernel reads each
// input element for several rows of its implicit A, from cache).
bool memory_bound(const gemm_problem& p) {
    if (p.conv && std::any_of(p.conv->kernel.begin(), p.conv->kernel.end(),
                              [](std::size_t len) { return len != 1; }))
        return false;
    const double eb = double(size_of(p.type));
    const double m = double(p.m), n = double(p.n), k = double(p.k);
    const double macs = m * n * k;
    const double bytes = eb * (m * k + n * k + m * n);
    // Bound by writing the output (not by one operand, as a skinny product with a long K is,
    // where split-K matters more than the tile).
    return macs / bytes < 50.0 && m * n > (m + n) * k;
}

// The tiles that were within a few percent of the fastest on every memory-bound problem
// measured (128x64 for N of 96-240, 64x64 and 64x32 for K >= 100 or N < 64), best first.
std::vector<perf_config> memory_bound_configs(dtype t) {
    if (!gemm::mma_supports(t)) return {};
    const unsigned k = t == dtype::f32 ? 16 : 32;
    return {{128, 64, k, 2, 2, 3, 1, 0, false},
            {64, 64, k, 2, 2, 3, 1, 0, false},
            {64, 32, k, 2, 1, 2, 1, 0, false}};
}

} // namespace

std::vector<perf_config> candidate_configs(const gemm_problem& p,
                                           const gemm_device_limits& limits) {
    std::vector<perf_config> space;
    if (gemm::mma_supports(p.type)) space = tensor_core_space(p.type);
    if (limits.wgmma && (p.type == dtype::f16 || p.type == dtype::bf16)) {
        auto wg = wgmma_space();
        space.insert(space.end(), wg.begin(), wg.end());
    }
    // SIMT: every type, and exact fp32 next to tf32.
    if (!gemm::mma_supports(p.type) || p.type == dtype::f32) {
        auto simt = simt_space();
        if (p.type == dtype::f32) simt.resize(4);
        space.insert(space.end(), simt.begin(), simt.end());
    }
    std::vector<std::pair<double, perf_config>> ranked;
    for (const auto& c : space)
        if (const auto plan = gemm::make_kernel_plan(c, p, limits, nullptr))
            ranked.emplace_back(estimated_time(*plan, p, limits), c);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    // A depthwise problem's own kernel family first (the GEMM tiles run almost empty on it),
    // then the GEMM configs: the tuner times both.
    std::vector<perf_config> r = depthwise_candidates(p, limits);
    std::vector<perf_config> by_model;
    for (const auto& [time, c] : ranked)
        by_model.push_back(c);
    // Memory-bound: the tiles measured best on such problems take every other place at the
    // front, so quick tuning times them next to the model's best and --tune none starts there.
    if (memory_bound(p)) {
        // Only those whose tiles fill the GPU: on a small problem (a batch-1 1x1 convolution of
        // 784 pixels) a 128x64 tile leaves most SMs idle, and the zoo's tuning logs (12-06b, 65
        // such problems) had it 1.30x slower than the tuned best where the model's own first
        // was 1.03x.
        std::vector<perf_config> front;
        for (const perf_config& c : memory_bound_configs(p.type)) {
            const std::size_t tiles =
                (p.m + c.tile_m - 1) / c.tile_m * ((p.n + c.tile_n - 1) / c.tile_n) * p.batch();
            if (tiles >= limits.sm_count &&
                std::find(by_model.begin(), by_model.end(), c) != by_model.end())
                front.push_back(c);
        }
        std::vector<perf_config> rest;
        for (const perf_config& c : by_model)
            if (std::find(front.begin(), front.end(), c) == front.end()) rest.push_back(c);
        by_model.clear();
        for (std::size_t i = 0; i < front.size() || i < rest.size(); ++i) {
            if (i < front.size()) by_model.push_back(front[i]);
            if (i < rest.size()) by_model.push_back(rest[i]);
        }
    }
    r.insert(r.end(), by_model.begin(), by_model.end());
    // The config that runs everything (any type, alignment, size).
    const perf_config fallback{32, 32, 16, 1, 1, 2, 1, 0, true};
    if (std::find(r.begin(), r.end(), fallback) == r.end() &&
        gemm::make_kernel_plan(fallback, p, limits, nullptr))
        r.push_back(fallback);
    return r;
}

} // namespace conflux::cuda
