// The attention op's kernel (src/cuda/kernels/attention.cuh does the work): the shape struct
// with every len and stride, the batch entry's element 0 of each operand, the config (forced, or
// the heuristic's), the launch (one block per batch entry and config.rows() query rows). An
// out_perm only changes the output's strides.
#include "conflux/ops/attention.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/attention_kernel.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/generator.hpp"

#include <cstdio>

namespace conflux::cuda {

namespace {

constexpr std::size_t max_head_dim = 128;
// What the grid-size check counts with: the heuristic takes blocks of fewer rows only for
// launches of few blocks, and a forced config that would exceed the grid falls back to it.
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

// The q tile and two buffers each of key and value rows (attention.cuh).
std::size_t shared_bytes_for(const attention_config& c, std::size_t dp, std::size_t dvp) {
    const std::size_t rows = std::size_t(c.rows()), keys = std::size_t(c.key_tile);
    return (rows * (dp + 8) + 2 * keys * (dp + 8) + 2 * keys * (dvp + 8)) * 2;
}

// The forced config where it can run these head dims, else the heuristic's; `note` says why a
// forced one was not taken.
attention_config config_for(const std::string& forced, std::size_t batches, std::size_t sq,
                            std::size_t sk, std::size_t d, std::size_t dv, std::string& note) {
    if (!forced.empty()) {
        auto c = parse_attention_config(forced);
        CONFLUX_USER_CHECK(c.has_value(), "attention config '", forced,
                           "' is not one (expected e.g. w4_m2_n64)");
        std::string why = attention_config_obstacle(*c, d, dv);
        const std::size_t rows = std::size_t(c->rows());
        if (why.empty() && (sq + rows - 1) / rows > 65535)
            why = "more than 65535 blocks of " + std::to_string(rows) + " query rows";
        if (why.empty()) return *c;
        note = "// attention config " + forced + " cannot run here (" + why +
               "); the heuristic's instead\n";
    }
    return choose_attention_config(batches, sq, sk, d, dv);
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
    std::string s = text::include_prelude({"types.cuh", "gemm.cuh", "attention.cuh"}) +
                    text::suppress_unused_warnings;
    s += "struct cx_attention_shape {\n";
    auto member = [&](const std::string& type, const std::string& name, const std::string& value) {
        s += "    static constexpr " + type + " " + name + " = " + value + ";\n";
    };
    std::string note;
    const attention_config config = config_for(r.config, batches, sq, sk, d, dv, note);
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
    s += "};\n\n";
    s += batch_offset("cx_q_at", q, br) + batch_offset("cx_k_at", kt, br) +
         batch_offset("cx_v_at", v, br) + batch_offset("cx_o_at", y, br);
    if (has_bias) s += batch_offset("cx_b_at", r.inputs[3], br);
    const std::string t = storage_type(q.type());
    const std::string tb = has_bias ? storage_type(r.inputs[3].type()) : t;
    s += "\n" +
         text::kernel_signature(r.entry, text::buffer_parameters(r.inputs, r.outputs),
                                unsigned(threads)) +
         " {\n";
    s += "    extern __shared__ __align__(16) unsigned char cx_smem[];\n";
    s += "    const long long b = blockIdx.x;\n";
    s += "    cx_attention<cx_attention_shape, " + t + ", " + tb + ", " + storage_type(y.type()) +
         ">(in0 + cx_q_at(b), in1 + cx_k_at(b), in2 + cx_v_at(b), " +
         (has_bias ? "in3 + cx_b_at(b)" : "(const " + tb + "*)nullptr") +
         ", out0 + cx_o_at(b), reinterpret_cast<" + t + "*>(cx_smem));\n";
    s += "}\n";
    kernel_source k;
    k.entry = r.entry;
    k.code = s;
    k.launch.grid = {unsigned(batches), unsigned((sq + br_rows - 1) / br_rows), 1};
    k.launch.block = {unsigned(threads), 1, 1};
    k.launch.shared_bytes = unsigned(shared_bytes_for(config, round16(d), round16(dv)));
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
           std::to_string(key_tile);
}

std::vector<attention_config> attention_configs() {
    std::vector<attention_config> all;
    for (int warps : {4, 8})
        for (int row_tiles : {1, 2})
            for (int key_tile : {64, 128})
                all.push_back({warps, row_tiles, key_tile});
    // Small blocks, for launches of few heads and short sequences (batch-1 transformers).
    for (int warps : {1, 2})
        for (int row_tiles : {1, 2})
            all.push_back({warps, row_tiles, 64});
    return all;
}

std::optional<attention_config> parse_attention_config(const std::string& name) {
    for (const attention_config& c : attention_configs())
        if (c.name() == name) return c;
    return std::nullopt;
}

std::string attention_config_obstacle(const attention_config& c, std::size_t d, std::size_t dv) {
    const std::size_t dp = round16(d), dvp = round16(dv), mt = std::size_t(c.row_tiles);
    const std::size_t shared = shared_bytes_for(c, dp, dvp);
    if (shared > max_shared_bytes)
        return std::to_string(shared) + " bytes of shared memory (at most " +
               std::to_string(max_shared_bytes) + ")";
    // As attention.cuh keeps them: scores and accumulators of MT row tiles, q's fragments when
    // MT * D / 16 <= 8.
    const std::size_t q_regs = mt * dp / 16 <= 8 ? mt * dp / 16 * 4 : 0;
    const std::size_t regs = mt * std::size_t(c.key_tile) / 2 + mt * dvp / 2 + q_regs;
    if (regs > max_fragment_registers)
        return std::to_string(regs) + " fragment registers per thread would spill (at most " +
               std::to_string(max_fragment_registers) + ")";
    return "";
}

// Measured on the H200 (bench/results/2026-12-04c_attention.json, every config on sequences
// 197, 1,500 and 4,096, head dims 64 and 128): two row tiles per warp with 64-key tiles won on
// every shape; 8 warps (256 rows a block, each key tile shared by twice the rows) only on the
// 4,096 sequences, 4 elsewhere. Those shapes launch hundreds of blocks. A launch of few heads
// and short sequences (BERT at batch 1: 12 heads of 128 queries, 12 such blocks) would leave
// most SMs idle, so the rows per block shrink until the launch has about one block per SM.
// A query count of at most 64 keeps to 64-row blocks or smaller, so that a short sequence
// (decoding, cross-attention of a few queries) does not compute padding rows.
attention_config choose_attention_config(std::size_t batches, std::size_t sq, std::size_t sk,
                                         std::size_t d, std::size_t dv) {
    (void)sk;
    constexpr std::size_t enough_blocks = 128;
    std::vector<attention_config> candidates;
    if (sq > 64) candidates.push_back({sq >= 2048 ? 8 : 4, 2, 64});
    for (const attention_config c :
         {attention_config{4, 1, 64}, attention_config{2, 1, 64}, attention_config{1, 1, 64}})
        candidates.push_back(c);
    attention_config chosen{4, 1, 64};
    for (const attention_config& c : candidates) {
        if (!attention_config_obstacle(c, d, dv).empty()) continue;
        chosen = c;
        const std::size_t rows = std::size_t(c.rows());
        if (batches * ((sq + rows - 1) / rows) >= enough_blocks) break;
    }
    return chosen;
}

void add_attention_generators() {
    add_generator("attention", generate_attention);
}

} // namespace conflux::cuda
