// Assembles the GEMM kernel from its pieces (gemm_codegen.hpp): block -> tile mapping, the
// operand loaders, the cp.async pipeline, the warps' multiply and the store through the
// epilogue; plus the split-K finish kernel and the default epilogue.
#include "cuda/codegen/gemm/gemm_kernel.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/gemm/depthwise_kernel.hpp"
#include "cuda/codegen/gemm/gemm_codegen.hpp"
#include "cuda/codegen/gemm/tma_operands.hpp"

#include <algorithm>
#include <cstdlib>

namespace conflux::cuda {

namespace {

constexpr long long int32_safe = 1LL << 30; // leaves room for a tile's overshoot

// The largest element offset an operand's view can reach, as a bound for the index type.
long long max_offset(const gemm_operand& o, std::size_t rows, const gemm_problem& p) {
    long long r = 0;
    for (std::size_t i = 0; i < p.batch_lens.size(); ++i)
        r += (static_cast<long long>(p.batch_lens[i]) - 1) *
             static_cast<long long>(o.batch_strides[i]);
    r += (static_cast<long long>(rows) - 1) * std::llabs(o.row_stride);
    for (std::size_t i = 0; i < o.k_lens.size(); ++i)
        r += (static_cast<long long>(o.k_lens[i]) - 1) * std::llabs(o.k_strides[i]);
    return r;
}

bool needs_64bit(const gemm_problem& p, const perf_config& c) {
    long long biggest = std::max(max_offset(p.b, p.n, p), static_cast<long long>(p.k));
    if (p.conv) {
        const conv_geometry& g = *p.conv;
        long long a = (static_cast<long long>(g.images) - 1) * g.image_stride +
                      (static_cast<long long>(g.groups * g.group_channels) - 1) *
                          std::llabs(g.channel_stride);
        for (std::size_t d = 0; d < g.nd(); ++d)
            a += (static_cast<long long>(g.input_spatial[d]) +
                  static_cast<long long>(g.pad_begin[d])) *
                 std::llabs(g.input_spatial_strides[d]);
        biggest = std::max(biggest, a);
    } else {
        biggest = std::max(biggest, max_offset(p.a, p.m, p));
    }
    const double workspace = double(c.split_k) * double(p.batch()) * double(p.m) * double(p.n);
    const double rows = double(p.m) + c.tile_m, cols = double(p.n) + c.tile_n;
    return biggest >= int32_safe || workspace >= double(int32_safe) || rows >= double(int32_safe) ||
           cols * std::max<double>(1, double(p.batch())) >= double(int32_safe);
}

std::string batch_offset(const gemm_problem& p, const gemm_operand& o, const std::string& off_t) {
    std::string s;
    std::string rest = "cx_z";
    for (std::size_t d = p.batch_lens.size(); d-- > 0;) {
        const std::size_t len = p.batch_lens[d];
        const std::string idx =
            d == 0 ? rest : "(" + rest + " % " + text::integer_literal(len) + ")";
        if (len > 1 && o.batch_strides[d] != 0)
            s += (s.empty() ? "" : " + ") + ("(" + off_t + ")" + idx) + " * " +
                 text::integer_literal(o.batch_strides[d]);
        rest = "(" + rest + " / " + text::integer_literal(len) + ")";
    }
    return s.empty() ? "0" : s;
}

// How the anchor's (z, m, n) become the epilogue's (b, m, n).
std::string epilogue_call(const gemm_problem& p, const gemm_epilogue& e,
                          const std::string& function = "cx_epilogue") {
    std::string args;
    for (const auto& a : e.arguments)
        args += ", " + a;
    if (p.family == gemm_family::convolution)
        return function + "($V, 0LL, (long long)($M), (long long)cx_z * " +
               text::integer_literal(p.conv->group_filters) + " + (long long)($N)" + args + ");";
    return function + "($V, (long long)cx_z, (long long)($M), (long long)($N)" + args + ");";
}

std::string device_headers(bool wgmma = false, bool warp_specialised = false) {
    std::vector<std::string> headers{"types.cuh", "gemm.cuh"};
    if (wgmma) headers.push_back("wgmma.cuh");
    if (warp_specialised) headers.push_back("gemm_ws.cuh");
    return text::include_prelude(headers) + text::suppress_unused_warnings;
}

} // namespace

std::string gemm_accumulator_type(dtype input) {
    return compute_type(input);
}

bool applies_epilogue_in_kernel(const perf_config& c) {
    return c.split_k == 1;
}

namespace {

std::size_t accumulator_bytes(dtype t) {
    return gemm_accumulator_type(t) == "float" ? 4 : 8;
}

// The staged tile holds storage values: the anchor's value is rounded to its dtype before any
// epilogue op reads it, so rounding on the way in loses nothing and halves an f16 tile. Rows
// are padded by 16 bytes, which keeps the fragments' writes on distinct banks.
unsigned stage_pad(dtype t) {
    return unsigned(std::max<std::size_t>(1, 16 / size_of(t)));
}

} // namespace

std::size_t staged_store_bytes(const gemm_problem& p, const perf_config& c, store_walk walk) {
    // The depthwise kernel stores straight from its registers.
    if (walk == store_walk::direct || c.split_k > 1 || c.is_depthwise()) return 0;
    const std::size_t rows = walk == store_walk::n_major ? c.tile_m : c.tile_n;
    const std::size_t cols =
        (walk == store_walk::n_major ? c.tile_n : c.tile_m) + stage_pad(p.type);
    return rows * cols * size_of(p.type);
}

namespace {

// The staging buffer of one _pp warpgroup: staged_store_bytes rounded up to 16 bytes.
std::size_t staged_buffer_stride(const gemm_problem& p, const perf_config& c, store_walk walk) {
    return (staged_store_bytes(p, c, walk) + 15) / 16 * 16;
}

} // namespace

std::size_t kernel_shared_bytes(const gemm_problem& p, const perf_config& c, store_walk walk) {
    const std::size_t pipeline = shared_bytes(c, p), staged = staged_store_bytes(p, c, walk);
    // _ws: the ring keeps filling while the consumers store, so the staged tile has room of its
    // own; _pp: one for each warpgroup, as both may be storing at once.
    if (c.ping_pong) return pipeline + 2 * staged_buffer_stride(p, c, walk);
    return c.warp_specialised ? pipeline + staged : std::max(pipeline, staged);
}

namespace {

// The _tma producer (gemm_ws.cuh's cx_ws_produce_tile_tma): thread 0 alone walks the block's
// tiles and issues, per K-tile, one box per swizzle block of each operand's stage, at
// coordinates innermost first (tma_operands.hpp); the rest of the warpgroup has nothing to do.
template <class TileOf>
std::string tma_producer(const gemm_problem& p, const perf_config& c, const gemm::kernel_plan& k,
                         const gemm::tma_operand& a, const gemm::tma_operand& b,
                         const std::string& blocks, const std::string& k_tiles,
                         const TileOf& tile_of) {
    const std::string in = "    ", in2 = "        ", in3 = "            ";
    auto batch_coords = [&](const gemm::tma_operand& o) {
        std::string r;
        for (std::size_t d : o.batch_axes) {
            std::size_t after = 1;
            for (std::size_t e = d + 1; e < p.batch_lens.size(); ++e)
                after *= p.batch_lens[e];
            r += ", (int)((cx_z / " + std::to_string(after) + ") % " +
                 std::to_string(p.batch_lens[d]) + ")";
        }
        return r;
    };
    // The boxes of one operand's stage at cx_slot: box j covers the contiguous axis from
    // (its tile start) + j * box_inner.
    auto boxes = [&](const gemm::tma_operand& o, const gemm::tile_plan& t, bool is_a,
                     const std::string& stage_base) {
        const std::string row0 = is_a ? "(int)cx_m0" : "(int)cx_n0";
        const std::string k0 = "cx_kt * " + std::to_string(c.tile_k);
        const bool k_major = t.major == operand_major::k;
        std::string r;
        for (unsigned j = 0; j < o.boxes; ++j) {
            const std::string shift = j == 0 ? "" : " + " + std::to_string(j * o.box_inner);
            const std::string inner = (k_major ? k0 : row0) + shift;
            const std::string outer = k_major ? row0 : k0;
            r += in3 + "cx_tma_load(" + stage_base + " + " +
                 std::to_string(std::size_t(j) * t.outer * t.block_bytes) + "u, " +
                 (is_a ? "cx_tmap_a" : "cx_tmap_b") + ", cx_full, " + inner + ", " + outer +
                 batch_coords(o) + ");\n";
        }
        return r;
    };
    const std::size_t stage_bytes =
        std::size_t(a.box_bytes) * a.boxes + std::size_t(b.box_bytes) * b.boxes;
    CONFLUX_ASSERT(stage_bytes == k.a.stage_bytes + k.b.stage_bytes, "TMA boxes cover the stage");
    std::string s;
    s += in + "if (threadIdx.x == 0) {\n";
    s += in2 + "cx_tma_prefetch(cx_tmap_a);\n" + in2 + "cx_tma_prefetch(cx_tmap_b);\n";
    s += in2 + "for (int cx_tile = blockIdx.x; cx_tile < " + blocks + "; cx_tile += gridDim.x) {\n";
    s += tile_of("cx_tile", in2);
    s += in2 + "auto cx_load_tiles = [&](int cx_slot, int cx_kt, unsigned cx_full) {\n";
    s += boxes(a, k.a, true,
               "cx_smem_base + (unsigned)cx_slot * " + std::to_string(k.a.stage_bytes) + "u");
    s += boxes(b, k.b, false,
               "cx_smem_base + " + std::to_string(std::size_t(c.stages) * k.a.stage_bytes) +
                   "u + (unsigned)cx_slot * " + std::to_string(k.b.stage_bytes) + "u");
    s += in2 + "};\n";
    s += in2 + "cx_ws_produce_tile_tma<" + std::to_string(c.stages) + ", " +
         std::to_string(stage_bytes) + "u>(cx_bars, cx_it, " + k_tiles + ", cx_load_tiles);\n";
    s += in2 + "}\n";
    s += in + "}\n";
    return s;
}

} // namespace

std::size_t split_k_workspace_bytes(const gemm_problem& p, const perf_config& c) {
    if (c.split_k <= 1) return 0;
    return std::size_t(c.split_k) * p.batch() * p.m * p.n * accumulator_bytes(p.type);
}

kernel_source generate_gemm_kernel(const gemm_problem& p, const perf_config& c,
                                   const gemm_epilogue& epilogue, const std::string& entry,
                                   const gemm_device_limits& limits) {
    if (c.is_depthwise()) return generate_depthwise_kernel(p, c, epilogue, entry, limits);
    std::string why;
    const auto plan = gemm::make_kernel_plan(c, p, limits, &why);
    CONFLUX_ASSERT(plan.has_value(), "perf config ", to_string(c), " is not valid for ",
                   to_string(p), ": ", why);
    const bool split = c.split_k > 1;
    const gemm::codegen_context ctx{p, *plan, storage_type(p.type), gemm_accumulator_type(p.type),
                                    needs_64bit(p, c) ? "long long" : "int"};
    const std::string& off_t = ctx.offset_type;
    const std::string& S = ctx.storage;

    store_walk walk = split ? store_walk::direct : epilogue.walk;
    if (kernel_shared_bytes(p, c, walk) > limits.shared_per_block) {
        CONFLUX_ASSERT(!epilogue.walk_required, "the staged store of ", to_string(c), " needs ",
                       kernel_shared_bytes(p, c, walk),
                       " bytes of shared memory with the pipeline, the device allows ",
                       limits.shared_per_block);
        walk = store_walk::direct;
    }
    const bool ws = c.warp_specialised;

    kernel_source k;
    k.entry = entry;
    k.inputs = split ? 2 : 2 + epilogue.inputs;
    k.outputs = split ? 1 : epilogue.parameters.size() - epilogue.inputs;
    k.arch_specific = plan->wgmma;
    std::string& s = k.code;
    s += device_headers(plan->wgmma, ws);
    s += "// " + to_string(c) + " for " + to_string(p) + "\n";
    s += "typedef " + off_t + " cx_offset;\n\n";
    if (!split) s += epilogue.code + "\n";
    s += gemm::tile_offset_function("cx_a_tile_offset", plan->a, plan->element_bytes);
    s += gemm::tile_offset_function("cx_b_tile_offset", plan->b, plan->element_bytes);
    const std::size_t functions_at = s.size(); // the multiply's device functions go here
    std::vector<std::string> params{"const " + S + "* __restrict__ in0",
                                    "const " + S + "* __restrict__ in1"};
    if (split)
        params.push_back(ctx.accumulator + "* __restrict__ cx_workspace");
    else
        params.insert(params.end(), epilogue.parameters.begin(), epilogue.parameters.end());
    // _tma: the operands' tensor maps after every pointer (kernel_source.hpp).
    std::optional<gemm::tma_operand> tma_a, tma_b;
    if (c.tma) {
        tma_a = gemm::plan_tma_operand(p, plan->a, true, nullptr);
        tma_b = gemm::plan_tma_operand(p, plan->b, false, nullptr);
        CONFLUX_ASSERT(tma_a && tma_b, "TMA operands of a valid _tma config");
        k.tensor_maps = {tma_a->map, tma_b->map};
        params.push_back("const __grid_constant__ cx_tensor_map cx_tmap_a");
        params.push_back("const __grid_constant__ cx_tensor_map cx_tmap_b");
    }
    s += "\n" + text::kernel_signature(entry, params, plan->threads) + " {\n";
    if (p.empty()) {
        k.code += "}\n";
        k.launch.grid = {0, 1, 1};
        k.launch.block = {plan->threads, 1, 1};
        return k;
    }
    const std::string in = "    ", in2 = "        ";
    // wgmma's swizzle patterns repeat every 1024 bytes and must start on such a boundary.
    s += in + "extern __shared__ __align__(" + (plan->wgmma ? "1024" : "128") +
         ") unsigned char cx_smem[];\n";
    s += in + "const unsigned cx_smem_base = cx_shared_address(cx_smem);\n";

    // Block (or a _ws block's tile) -> (split, z, tile row, tile column): cx_gemm_tile_of_block
    // in gemm.cuh, tile rows in groups of 8.
    const std::size_t group_rows = std::min<std::size_t>(8, plan->tiles_m);
    auto tile_of = [&](const std::string& block, const std::string& indent) {
        return indent + "int cx_split, cx_z;\n" + indent + "cx_offset cx_m0, cx_n0;\n" + indent +
               "cx_gemm_tile_of_block<" + std::to_string(c.split_k) + ", " +
               std::to_string(p.batch()) + ", " + std::to_string(plan->tiles_m) + ", " +
               std::to_string(plan->tiles_n) + ", " + std::to_string(group_rows) + ", " +
               std::to_string(c.tile_m) + ", " + std::to_string(c.tile_n) + ">(" + block +
               ", cx_split, cx_z, cx_m0, cx_n0);\n";
    };
    auto operands = [&](const std::string& indent) {
        return indent + "const " + S + "* cx_a = in0 + " + batch_offset(p, p.a, off_t) + ";\n" +
               indent + "const " + S + "* cx_b = in1 + " + batch_offset(p, p.b, off_t) + ";\n";
    };
    const auto a = gemm::operand_loader(ctx, true);
    const auto b = gemm::operand_loader(ctx, false);
    s.insert(functions_at, a.definitions + b.definitions);
    const std::string load_tiles =
        in + "auto cx_load_tiles = [&](int cx_slot, int cx_kt) {\n" + a.load + b.load + in + "};\n";

    // Staged: element (m, n) of the tile parks at row-major [m][n] (n_major) or [n][m]
    // (m_major) with padded rows, then the walk below reads it back.
    const bool staged = walk != store_walk::direct;
    const unsigned stage_cols =
        (walk == store_walk::n_major ? c.tile_n : c.tile_m) + (staged ? stage_pad(p.type) : 0);
    const std::string stage_index =
        walk == store_walk::n_major
            ? "(int)(($M) - cx_m0) * " + std::to_string(stage_cols) + " + (int)(($N) - cx_n0)"
            : "(int)(($N) - cx_n0) * " + std::to_string(stage_cols) + " + (int)(($M) - cx_m0)";
    const std::string store = split ? "cx_workspace[(((cx_offset)cx_split * " +
                                          text::integer_literal(p.batch()) + " + cx_z) * " +
                                          text::integer_literal(p.m) + " + ($M)) * " +
                                          text::integer_literal(p.n) + " + ($N)] = $V;"
                              : staged ? "cx_store(&cx_stage[" + stage_index + "], $V);"
                                       : epilogue_call(p, epilogue);
    // Adjacent columns are adjacent in an n-major stage, and its rows hold an even count.
    const std::string pair_store =
        !split && staged && walk == store_walk::n_major && stage_cols % 2 == 0
            ? "cx_store_pair(&cx_stage[" + stage_index + "], $V, $W);"
            : "";
    const auto compute = gemm::warp_compute(ctx, store, pair_store);
    s.insert(functions_at, compute.functions);
    const std::string multiply =
        in + "auto cx_multiply = [&](int cx_slot) {\n" + compute.tile + in + "};\n";
    // The staged tile read back by the storing threads (cx_tid of `threads`).
    auto staged_walk = [&](unsigned threads) {
        const bool by_n = walk == store_walk::n_major;
        // A thread takes `lanes` consecutive staged elements of one row at a time (an n_major
        // walk whose epilogue has cx_epilogue_vec), else one.
        const unsigned lanes =
            by_n && epilogue.lanes > 1 && c.tile_n % epilogue.lanes == 0 ? epilogue.lanes : 1;
        const std::string shape = std::to_string(c.tile_m) + ", " + std::to_string(c.tile_n) +
                                  ", " + std::to_string(lanes) + ", " + std::to_string(threads) +
                                  ", " + std::to_string(stage_cols) + ", " +
                                  (by_n ? "true" : "false");
        const std::string walk_args = "(cx_stage, cx_tid, cx_m0, cx_n0, (cx_offset)" +
                                      text::integer_literal(p.m) + ", (cx_offset)" +
                                      text::integer_literal(p.n);
        // A chunk of `lanes` staged values widened and handed to `function` (cx_v, then
        // `more` arguments).
        auto vector_chunk = [&](const std::string& function, const std::string& more,
                                const std::string& indent) {
            return indent + ctx.accumulator + " cx_v[" + std::to_string(lanes) + "];\n" + indent +
                   "cx_gemm_staged_chunk(cx_at, cx_v);\n" + indent +
                   gemm::fill_store_format(epilogue_call(p, epilogue, function), "cx_v" + more, "m",
                                           "n") +
                   "\n";
        };
        if (lanes > 1 && epilogue.batched_loads) {
            // Four chunks' reads in flight per thread (gemm.cuh).
            return in + "cx_gemm_staged_walk_batched<" + shape + ", 4, cx_epilogue_loads>" +
                   walk_args + ",\n" + in2 +
                   "[&](cx_epilogue_loads& cx_loads, cx_offset m, cx_offset n) { " +
                   gemm::fill_store_format(epilogue_call(p, epilogue, "cx_epilogue_load"),
                                           "cx_loads", "m", "n") +
                   " },\n" + in2 + "[&](cx_offset m, cx_offset n, const " + S +
                   "* cx_at, const cx_epilogue_loads& cx_loads) {\n" +
                   vector_chunk("cx_epilogue_vec_loaded", ", cx_loads", in2 + "    ") + in2 +
                   "});\n";
        }
        std::string w = in + "cx_gemm_staged_walk<" + shape + ">" + walk_args +
                        ", [&](cx_offset m, cx_offset n, const " + S + "* cx_at) {\n";
        if (lanes == 1)
            w += in2 +
                 gemm::fill_store_format(epilogue_call(p, epilogue), "cx_load(cx_at)", "m", "n") +
                 "\n";
        else
            w += vector_chunk("cx_epilogue_vec", "", in2);
        return w + in + "});\n";
    };

    if (ws) {
        // kernels/gemm_ws.cuh: the producer warpgroup (threads 0-127) copies, the warps after it
        // multiply and store; both walk the block's tiles in the same order.
        const std::size_t ring = plan->shared_bytes - plan->barrier_bytes;
        const std::string stages = std::to_string(c.stages);
        const std::string blocks = std::to_string(plan->blocks);
        const std::string k_tiles = text::integer_literal(plan->k_tiles);
        const bool pp = c.ping_pong;
        // The warps that read each stage: every consumer, or (_pp) one warpgroup.
        const unsigned stage_readers = pp ? 4 : plan->compute_threads / 32;
        s += in + "const unsigned cx_bars = cx_smem_base + " + std::to_string(ring) + "u;\n";
        // The full barriers count the producer threads' arrivals, or (_tma) the one thread's.
        s += in + "cx_ws_init<" + stages + ", " +
             (c.tma ? "1" : std::to_string(plan->load_threads)) + ", " +
             std::to_string(stage_readers) + ">(cx_bars);\n";
        s += in + "int cx_it = 0;\n";
        s += in + "if (threadIdx.x < " + std::to_string(plan->load_threads) + ") {\n";
        if (plan->producer_registers != 0)
            s += in + "cx_ws_release_registers<" + std::to_string(plan->producer_registers) +
                 ">();\n";
        if (c.tma) {
            s += tma_producer(p, c, *plan, *tma_a, *tma_b, blocks, k_tiles, tile_of);
        } else {
            s += in + "const int cx_tid = threadIdx.x;\n";
            s += in + "for (int cx_tile = blockIdx.x; cx_tile < " + blocks +
                 "; cx_tile += gridDim.x) {\n";
            s += tile_of("cx_tile", in) + operands(in) + a.setup + b.setup + load_tiles;
            const bool async = plan->a.async && plan->b.async;
            s += in + "cx_ws_produce_tile<" + stages + ", " + (async ? "true" : "false") +
                 ">(cx_bars, cx_it, " + k_tiles + ", cx_load_tiles);\n";
            s += in + "}\n";
            s += in + "cx_ws_produce_drain();\n";
        }
        s += in + "} else {\n";
        if (plan->consumer_registers != 0)
            s +=
                in + "cx_ws_claim_registers<" + std::to_string(plan->consumer_registers) + ">();\n";
        // The thread's index among the consumers; _pp: its warpgroup cx_wg takes the block's
        // tiles cx_q = cx_wg, cx_wg + 2, ..., tile cx_q's K-tiles being the ring's iterations
        // from cx_q * k_tiles on, and cx_tid counts within the warpgroup.
        const std::string consumer = "threadIdx.x - " + std::to_string(plan->load_threads);
        if (pp) s += in + "const int cx_wg = (" + consumer + ") >> 7;\n";
        s += in + "const int cx_tid = " + (pp ? "(" + consumer + ") & 127" : consumer) +
             ", cx_lane = cx_tid & 31, cx_warp = cx_tid >> 5;\n";
        if (staged)
            s += in + S + "* cx_stage = reinterpret_cast<" + S + "*>(cx_smem + " +
                 std::to_string(plan->shared_bytes) +
                 (pp ? " + cx_wg * " + std::to_string(staged_buffer_stride(p, c, walk)) : "") +
                 ");\n";
        if (pp)
            s += in +
                 "for (int cx_q = cx_wg, cx_tile = blockIdx.x + cx_wg * gridDim.x; cx_tile < " +
                 blocks + "; cx_q += 2, cx_tile += 2 * gridDim.x) {\n";
        else
            s += in + "for (int cx_tile = blockIdx.x; cx_tile < " + blocks +
                 "; cx_tile += gridDim.x) {\n";
        s += tile_of("cx_tile", in) + compute.setup + multiply;
        if (pp) {
            // Turns (cx_pp_wait_turn / cx_pp_pass_turn in gemm_ws.cuh): tile cx_q's multiply
            // starts once tile cx_q - 1's has ended, so the warpgroups' multiplies alternate
            // and each one's waits on the ring see the phases in order.
            s += in + "cx_it = cx_q * " + k_tiles + ";\n";
            s += in + "cx_pp_wait_turn(cx_wg, cx_q);\n";
        }
        s += in + "cx_ws_consume_tile<" + stages + (pp ? ", true" : "") + ">(cx_bars, cx_it, " +
             k_tiles + ", cx_lane, cx_multiply);\n";
        if (pp) s += in + "cx_pp_pass_turn(cx_wg, cx_tile + (int)gridDim.x < " + blocks + ");\n";
        s += compute.finish;
        const std::string consumer_sync =
            pp ? in + "cx_pp_group_sync(cx_wg);\n"
               : in + "cx_ws_consumer_sync<" + std::to_string(plan->compute_threads) + ">();\n";
        // Before parking this tile, every consumer is done reading the last one back.
        if (staged) s += consumer_sync;
        s += compute.store;
        if (staged) s += consumer_sync + staged_walk(pp ? 128 : plan->compute_threads);
        s += in + "}\n";
        s += in + "}\n";
    } else {
        s += in + "const int cx_tid = threadIdx.x, cx_lane = cx_tid & 31, cx_warp = cx_tid >> 5;\n";
        s += tile_of("blockIdx.x", in) + operands(in) + a.setup + b.setup + load_tiles;
        s += compute.setup + multiply;
        // This block's K-tiles, then the pipeline (cx_gemm_k_loop in gemm.cuh).
        if (split) {
            s += in + "const int cx_kt_begin = cx_split * " +
                 text::integer_literal(plan->k_tiles_per_split) + ";\n";
            s += in + "const int cx_kt_count = " + text::integer_literal(plan->k_tiles) +
                 " - cx_kt_begin < " + text::integer_literal(plan->k_tiles_per_split) + " ? " +
                 text::integer_literal(plan->k_tiles) +
                 " - cx_kt_begin : " + text::integer_literal(plan->k_tiles_per_split) + ";\n";
        } else {
            s += in + "const int cx_kt_begin = 0;\n";
            s += in + "const int cx_kt_count = " + text::integer_literal(plan->k_tiles) + ";\n";
        }
        const unsigned ahead = plan->wgmma ? c.stages - 2 : c.stages - 1;
        s += in + "cx_gemm_k_loop<" + std::to_string(c.stages) + ", " + std::to_string(ahead) +
             ">(cx_kt_begin, cx_kt_count, cx_load_tiles, cx_multiply, [] {" +
             (plan->wgmma ? " cx_fence_proxy_async(); " : "") + "});\n";
        s += compute.finish;
        if (staged) {
            // Every warp must be done reading the pipeline's tiles before they are overwritten.
            s += in + "__syncthreads();\n";
            s += in + S + "* cx_stage = reinterpret_cast<" + S + "*>(cx_smem);\n";
        }
        s += compute.store;
        if (staged) s += in + "__syncthreads();\n" + staged_walk(plan->threads);
    }
    s += "}\n";

    k.launch.grid = {unsigned(plan->grid), 1, 1};
    k.launch.block = {plan->threads, 1, 1};
    k.launch.shared_bytes = unsigned(kernel_shared_bytes(p, c, walk));
    return k;
}

kernel_source generate_split_k_finish_kernel(const gemm_problem& p, const perf_config& c,
                                             const gemm_epilogue& epilogue,
                                             const std::string& entry) {
    CONFLUX_ASSERT(c.split_k > 1, "the finish kernel is for split-K configs, not ", to_string(c));
    const std::string acc = gemm_accumulator_type(p.type);
    const std::size_t total = p.batch() * p.m * p.n;
    kernel_source k;
    k.entry = entry;
    k.inputs = 1;
    k.outputs = epilogue.parameters.size();
    std::string& s = k.code;
    s += device_headers();
    s += "// split-K " + std::to_string(c.split_k) + " finish for " + to_string(p) + "\n\n";
    s += epilogue.code + "\n";
    std::vector<std::string> params{"const " + acc + "* __restrict__ cx_workspace"};
    params.insert(params.end(), epilogue.parameters.begin(), epilogue.parameters.end());
    s += text::kernel_signature(entry, params, 256) + " {\n";
    if (total > 0) {
        const std::string in = "    ";
        s += in + "const long long e = (long long)blockIdx.x * 256 + threadIdx.x;\n";
        s += in + "if (e >= " + text::long_long_literal(total) + ") return;\n";
        s += in + acc + " v = cx_workspace[e];\n";
        s += in + "#pragma unroll\n" + in + "for (int s = 1; s < " + std::to_string(c.split_k) +
             "; ++s) v = cx_reduce_add(v, cx_workspace[(long long)s * " +
             text::long_long_literal(total) + " + e]);\n";
        s += in + "const long long cx_z = e / " + text::long_long_literal(p.m * p.n) + ";\n";
        s += in + "const long long m = e / " + text::long_long_literal(p.n) + " % " +
             text::long_long_literal(p.m) + ";\n";
        s += in + "const long long n = e % " + text::long_long_literal(p.n) + ";\n";
        s += in + gemm::fill_store_format(epilogue_call(p, epilogue), "v", "m", "n") + "\n";
    }
    s += "}\n";
    k.launch.grid = {unsigned((total + 255) / 256), 1, 1};
    k.launch.block = {256, 1, 1};
    return k;
}

} // namespace conflux::cuda
