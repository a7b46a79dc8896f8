// The attention op's kernel (src/cuda/kernels/attention.cuh does the work, attention_wgmma.cuh
// for _wgmma configs, whose two instructions are written here): the shape struct
// with every len and stride, the batch entry's element 0 of each operand, the config (forced, or
// the heuristic's), the launch (one block per batch entry and config.rows() query rows). An
// out_perm only changes the output's strides.
#include "conflux/ops/attention.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/attention_kernel.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/generator.hpp"
#include "cuda/codegen/wgmma_text.hpp"

#include <algorithm>
#include <cstdio>

namespace conflux::cuda {

namespace {

constexpr std::size_t max_head_dim = 128;
// The smallest block of any config: what the grid-size check counts with.
constexpr std::size_t smallest_block_rows = 64;
// Shared memory a block may opt in to on sm_80 (163 KB; sm_90 allows 227 KB).
constexpr std::size_t max_shared_bytes = 163 * 1024;
// Scores, output accumulators and register-resident q fragments per thread beyond which the
// kernel would spill (255 registers, the rest for addresses and the softmax state).
constexpr std::size_t max_fragment_registers = 200;

std::size_t round16(std::size_t n) {
    return (n + 15) / 16 * 16;
}

std::string ll(long long v) {
    return text::long_long_literal(v);
}

// `name`'s element offset of batch entry `b` (row-major over the batch axes).
std::string batch_offset(const std::string& name, const shape& s, std::size_t batch_rank) {
    std::string f = "__device__ __forceinline__ long long " + name + "(long long b) {\n";
    f += "    long long off = 0;\n";
    for (std::size_t a = batch_rank; a-- > 0;) {
        f += "    off += (b % " + ll(static_cast<long long>(s.lens()[a])) + ") * " +
             ll(static_cast<long long>(s.strides()[a])) + ";\n";
        f += "    b /= " + ll(static_cast<long long>(s.lens()[a])) + ";\n";
    }
    return f + "    return off;\n}\n";
}

// The q tile and two buffers each of key and value rows (attention.cuh; rows padded by 8
// elements so that ldmatrix rows fall on distinct banks, swizzled instead for wgmma).
std::size_t shared_bytes_for(const attention_config& c, std::size_t dp, std::size_t dvp) {
    const std::size_t rows = std::size_t(c.rows()), keys = std::size_t(c.key_tile);
    const std::size_t pad = c.wgmma ? 0 : 8;
    return (rows * (dp + pad) + 2 * keys * (dp + pad) + 2 * keys * (dvp + pad)) * 2;
}

// The blocks per SM a kernel asks ptxas to leave registers for (__launch_bounds__'s second
// value; 0: no request). Two warpgroups with 64-key tiles at head dim 128 compile to 130
// registers a thread (nvcc -v), so one 256-thread block per SM although shared memory holds two
// (96 KiB each): nothing hides one block's softmax and waits. Capped at 128 they compile
// without spills, and two blocks share the SM. At head dim 64 the kernel needs 94 registers,
// so the request changes nothing. The pipelined loop spills at 128 and ptxas then serialises
// its wgmma: no request for it.
unsigned min_blocks_for(const attention_config& c, std::size_t shared_bytes) {
    // Hopper's shared memory per SM, and what the runtime reserves of it per block.
    constexpr std::size_t sm90_shared_per_sm = 228 * 1024, reserved_per_block = 1024;
    if (!c.wgmma || c.pipelined || c.warps != 8 || c.key_tile != 64) return 0;
    return 2 * (shared_bytes + reserved_per_block) <= sm90_shared_per_sm ? 2 : 0;
}

// The forced config where it can run these head dims, else the heuristic's; `note` says why a
// forced one was not taken.
attention_config config_for(const std::string& forced, bool has_wgmma, std::size_t batches,
                            std::size_t sq, std::size_t sk, std::size_t d, std::size_t dv,
                            std::string& note) {
    if (!forced.empty()) {
        auto c = parse_attention_config(forced);
        CONFLUX_USER_CHECK(c.has_value(), "attention config '", forced,
                           "' is not one (expected e.g. w4_m2_n64)");
        const std::string why = attention_config_obstacle(*c, d, dv, has_wgmma);
        if (why.empty()) return *c;
        note = "// attention config " + forced + " cannot run here (" + why +
               "); the heuristic's instead\n";
    }
    return choose_attention_config(batches, sq, sk, d, dv, has_wgmma);
}

kernel_source generate_attention(const kernel_request& r) {
    const auto* a = r.op->get_if<op::attention>();
    CONFLUX_ASSERT(a != nullptr, "generate_attention for ", r.op->name());
    const std::string why = attention_kernel_obstacle(r.inputs);
    CONFLUX_USER_CHECK(why.empty(), "attention: ", why);
    const shape &q = r.inputs[0], &kt = r.inputs[1], &v = r.inputs[2];
    // The rows and columns as the kernel computes them, wherever out_perm puts them.
    const shape y = a->result_view(r.outputs[0]);
    const bool has_bias = r.inputs.size() == 4;
    const std::size_t rank = q.rank(), br = rank - 2;
    const std::size_t sq = q.lens()[br], d = q.lens()[br + 1], sk = kt.lens()[br + 1];
    const std::size_t dv = v.lens()[br + 1];
    std::size_t batches = 1;
    for (std::size_t i = 0; i < br; ++i)
        batches *= q.lens()[i];
    if (y.elements() == 0) return text::empty_kernel(r);

    auto stride = [](const shape& s, std::size_t axis) {
        return ll(static_cast<long long>(s.strides()[axis]));
    };
    char scale[64];
    std::snprintf(scale, sizeof scale, "%.9e", double(a->scale));
    std::string note;
    const attention_config config = config_for(r.config, r.wgmma, batches, sq, sk, d, dv, note);
    std::string s = text::include_prelude({"types.cuh", "gemm.cuh", "attention.cuh"});
    if (config.wgmma) {
        // The two instructions attention_wgmma.cuh calls, then the kernel itself.
        const unsigned n_s = unsigned(config.key_tile), n_o = unsigned(round16(dv));
        s += "#include \"conflux/wgmma.cuh\"\n" +
             wgmma_function("cx_attention_mma_s", n_s, q.type(), wgmma_a::shared, false) +
             wgmma_function("cx_attention_mma_o", n_o, q.type(), wgmma_a::registers, true) +
             "#include \"conflux/attention_wgmma.cuh\"\n\n";
    }
    s += text::suppress_unused_warnings;
    s += "struct cx_attention_shape {\n";
    auto member = [&](const std::string& type, const std::string& name, const std::string& value) {
        s += "    static constexpr " + type + " " + name + " = " + value + ";\n";
    };
    const std::size_t br_rows = std::size_t(config.rows()),
                      threads = std::size_t(config.warps) * 32;
    s = "// attention config " + config.name() + "\n" + note + s;
    member("int", "WARPS", std::to_string(config.warps));
    member("int", "MT", std::to_string(config.row_tiles));
    member("int", "BC", std::to_string(config.key_tile));
    member("int", "SQ", std::to_string(sq));
    member("int", "SK", std::to_string(sk));
    member("int", "D", std::to_string(d));
    member("int", "DV", std::to_string(dv));
    member("int", "DP", std::to_string(round16(d)));
    member("int", "DVP", std::to_string(round16(dv)));
    member("long long", "Q_ROW", stride(q, br));
    member("long long", "Q_COL", stride(q, br + 1));
    member("long long", "K_ROW", stride(kt, br + 1)); // key j
    member("long long", "K_COL", stride(kt, br));     // element d of a key
    member("long long", "V_ROW", stride(v, br));
    member("long long", "V_COL", stride(v, br + 1));
    member("long long", "B_ROW", has_bias ? stride(r.inputs[3], br) : "0LL");
    member("long long", "B_COL", has_bias ? stride(r.inputs[3], br + 1) : "0LL");
    member("long long", "O_ROW", stride(y, br));
    member("long long", "O_COL", stride(y, br + 1));
    member("float", "SCALE", std::string(scale) + "f");
    member("bool", "HAS_BIAS", has_bias ? "true" : "false");
    member("bool", "ZERO_NAN_ROWS", a->zero_nan_rows ? "true" : "false");
    member("bool", "PIPELINED", config.pipelined ? "true" : "false");
    s += "};\n\n";
    s += batch_offset("cx_q_at", q, br) + batch_offset("cx_k_at", kt, br) +
         batch_offset("cx_v_at", v, br) + batch_offset("cx_o_at", y, br);
    if (has_bias) s += batch_offset("cx_b_at", r.inputs[3], br);
    const std::string t = storage_type(q.type());
    const std::string tb = has_bias ? storage_type(r.inputs[3].type()) : t;
    const std::size_t shared = shared_bytes_for(config, round16(d), round16(dv));
    s += "\n" +
         text::kernel_signature(r.entry, text::buffer_parameters(r.inputs, r.outputs),
                                unsigned(threads), min_blocks_for(config, shared)) +
         " {\n";
    // wgmma's swizzle patterns repeat every 1024 bytes and must start on such a boundary.
    s += std::string("    extern __shared__ __align__(") + (config.wgmma ? "1024" : "16") +
         ") unsigned char cx_smem[];\n";
    s += "    const long long b = blockIdx.x;\n";
    s += std::string("    ") + (config.wgmma ? "cx_attention_wgmma" : "cx_attention") +
         "<cx_attention_shape, " + t + ", " + tb + ", " + storage_type(y.type()) +
         ">(in0 + cx_q_at(b), in1 + cx_k_at(b), in2 + cx_v_at(b), " +
         (has_bias ? "in3 + cx_b_at(b)" : "(const " + tb + "*)nullptr") + ", out0 + cx_o_at(b), " +
         (config.wgmma ? "cx_smem" : "reinterpret_cast<" + t + "*>(cx_smem)") + ");\n";
    s += "}\n";
    kernel_source k;
    k.entry = r.entry;
    k.code = s;
    k.launch.grid = {unsigned(batches), unsigned((sq + br_rows - 1) / br_rows), 1};
    k.launch.block = {unsigned(threads), 1, 1};
    k.launch.shared_bytes = unsigned(shared);
    k.arch_specific = config.wgmma;
    return k;
}

} // namespace

std::string attention_kernel_obstacle(const std::vector<shape>& inputs) {
    if (inputs.size() < 3) return "needs q, kt and v";
    const shape& q = inputs[0];
    const dtype t = q.type();
    if (t != dtype::f16 && t != dtype::bf16)
        return "the fused kernel takes f16 or bf16, not " + std::string(to_string(t));
    const std::size_t br = q.rank() - 2;
    const std::size_t d = q.lens()[br + 1], dv = inputs[2].lens()[br + 1];
    if (d == 0 || dv == 0 || d > max_head_dim || dv > max_head_dim)
        return "head dims " + std::to_string(d) + " and " + std::to_string(dv) +
               " (the kernel takes 1 to " + std::to_string(max_head_dim) + ")";
    std::size_t batches = 1;
    for (std::size_t i = 0; i < br; ++i)
        batches *= q.lens()[i];
    if (batches > 0x7fffffffu ||
        (q.lens()[br] + smallest_block_rows - 1) / smallest_block_rows > 65535)
        return "the grid would exceed the device's limits";
    return "";
}

std::string attention_config::name() const {
    return "w" + std::to_string(warps) + "_m" + std::to_string(row_tiles) + "_n" +
           std::to_string(key_tile) + (wgmma ? "_wgmma" : "") + (pipelined ? "_pipe" : "");
}

std::vector<attention_config> attention_configs() {
    std::vector<attention_config> all;
    for (int warps : {4, 8})
        for (int row_tiles : {1, 2})
            for (int key_tile : {64, 128})
                all.push_back({warps, row_tiles, key_tile});
    // Hopper's warpgroup MMA: one or two warpgroups of 64 rows.
    for (bool pipelined : {false, true})
        for (int warps : {4, 8})
            for (int key_tile : {64, 128})
                all.push_back({warps, 1, key_tile, true, pipelined});
    return all;
}

std::optional<attention_config> parse_attention_config(const std::string& name) {
    for (const attention_config& c : attention_configs())
        if (c.name() == name) return c;
    return std::nullopt;
}

std::string attention_config_obstacle(const attention_config& c, std::size_t d, std::size_t dv,
                                      bool has_wgmma) {
    const std::size_t dp = round16(d), dvp = round16(dv), mt = std::size_t(c.row_tiles);
    if (c.wgmma) {
        if (!has_wgmma) return "wgmma needs sm_90 (Hopper)";
        // attention_wgmma.cuh tiles q, k and v in whole 64-column swizzle regions.
        if ((d != 64 && d != 128) || (dv != 64 && dv != 128))
            return "head dims " + std::to_string(d) + " and " + std::to_string(dv) +
                   " (wgmma configs take 64 or 128)";
    }
    const std::size_t shared = shared_bytes_for(c, dp, dvp);
    if (shared > max_shared_bytes)
        return std::to_string(shared) + " bytes of shared memory (at most " +
               std::to_string(max_shared_bytes) + ")";
    // As the kernels keep them: scores and accumulators of MT row tiles, and q's fragments
    // when MT * D / 16 <= 8 (attention.cuh) or the probabilities' fragments (wgmma).
    const std::size_t q_regs =
        c.wgmma ? std::size_t(c.key_tile) / 4 : (mt * dp / 16 <= 8 ? mt * dp / 16 * 4 : 0);
    const std::size_t regs = mt * std::size_t(c.key_tile) / 2 + mt * dvp / 2 + q_regs;
    if (regs > max_fragment_registers)
        return std::to_string(regs) + " fragment registers per thread would spill (at most " +
               std::to_string(max_fragment_registers) + ")";
    return "";
}

// Fitted to every config timed on sequences of 197, 1,500 and 4,096 with head dims 64 and 128,
// and on BERT's and ViT's batch 1 (bench/results/2026-12-06d_attention_configs_h100.json, H100;
// the mma.sync configs also 2026-12-04c_attention.json, H200):
//  - wgmma, where it runs, beat every mma.sync config on every shape (1.15-1.45x): two
//    warpgroups with 64-key tiles, one tile at a time, within 5% of the fastest config on
//    every shape (the pipelined loop was at most 3% faster where it won);
//  - without wgmma, two row tiles per warp with 64-key tiles, 8 warps from 2,048 queries;
//  - a launch of fewer than 128 such blocks (batch 1: BERT's 12 heads of 128 queries, 12
//    blocks of 128 rows) leaves most SMs idle: 64-row blocks with 128-key tiles were fastest
//    there (1.3x the 128-row blocks; blocks of 16 or 32 rows were slower);
//  - at most 64 queries keep to 64-row blocks, so that a short sequence (decoding,
//    cross-attention of a few queries) does not compute padding rows.
attention_config choose_attention_config(std::size_t batches, std::size_t sq, std::size_t sk,
                                         std::size_t d, std::size_t dv, bool has_wgmma) {
    (void)sk;
    constexpr std::size_t enough_blocks = 128;
    const bool wgmma = has_wgmma && (d == 64 || d == 128) && (dv == 64 || dv == 128);
    attention_config many{sq >= 2048 ? 8 : 4, 2, 64};
    if (wgmma) many = attention_config{8, 1, 64, true};
    const std::size_t rows = std::size_t(many.rows());
    if (sq > 64 && batches * ((sq + rows - 1) / rows) >= enough_blocks &&
        attention_config_obstacle(many, d, dv, has_wgmma).empty())
        return many;
    const attention_config few{4, 1, 128, wgmma};
    if (attention_config_obstacle(few, d, dv, has_wgmma).empty()) return few;
    return attention_config{4, 1, 64};
}

void add_attention_generators() {
    add_generator("attention", generate_attention);
}

} // namespace conflux::cuda
