// conflux_bench_attention: the fused attention kernel (the attention op on the CUDA target) on
// the shapes issue 16 names — sequence 197 (ViT), 1500 (Whisper's encoder) and 4096, head dims
// 64 and 128, f16 — profiled like the other benches (CUDA graph replays, median), and checked
// once against the unfused chain (dot -> scale -> softmax -> dot) on the same target. Prints one
// JSON object per shape; bench/attention_vs_sdpa.sh puts F.scaled_dot_product_attention beside
// it in the same call. --list prints the shapes as JSON for the PyTorch side; --configs also
// times every attention config the kernel can run on the shape (what the heuristic is fitted to).
#include "cuda/codegen/attention_kernel.hpp"
#include "conflux/cuda/target.hpp"
#include "conflux/ir/output_comparison.hpp"
#include "conflux/ir/program.hpp"
#include "conflux/ops/attention.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>
#include <random>

namespace conflux::bench {
namespace {

// A padding mask as an additive bias (0 or -10000; batch entry b masks its last 8 * (b % 4)
// keys): none, [B, 1, 1, S] broadcast over heads and rows (the older Hugging Face exports, and
// the newer ones once simplify drops their all-true term), or [B, 1, S, S] (the newer ones as
// exported: the same mask materialised per row).
enum class mask_kind { none, per_key, per_row };

// As attention_vs_sdpa.py reads it from --list.
const char* to_string(mask_kind k) {
    switch (k) {
    case mask_kind::per_key:
        return "per_key";
    case mask_kind::per_row:
        return "per_row";
    default:
        return "none";
    }
}

struct attention_shape {
    std::string name;
    std::size_t batch, heads, seq, head_dim;
    mask_kind mask = mask_kind::none;
    dims mask_lens() const { return {batch, 1, mask == mask_kind::per_row ? seq : 1, seq}; }
    double flops() const { return 4.0 * double(batch * heads) * double(seq) * seq * head_dim; }
};

const std::vector<attention_shape> shapes{
    {"vit_197_d64", 32, 12, 197, 64},
    {"vit_197_d128", 32, 6, 197, 128},
    {"whisper_1500_d64", 8, 6, 1500, 64},
    {"whisper_1500_d128", 8, 3, 1500, 128},
    {"long_4096_d64", 2, 16, 4096, 64},
    {"long_4096_d128", 2, 8, 4096, 128},
    // Batch 1 of BERT-base and ViT-B/16: launches of few blocks (the heuristic's small blocks).
    {"bert_b1_128_d64", 1, 12, 128, 64},
    {"vit_b1_197_d64", 1, 12, 197, 64},
    // Batch 32 of BERT-base (the zoo's hf_bert): 384 heads of 128 queries, two key tiles each.
    {"bert_b32_128_d64", 32, 12, 128, 64},
    // The same with BERT's padding mask, in both forms the exporters write.
    {"bert_b32_128_d64_mask", 32, 12, 128, 64, mask_kind::per_key},
    {"bert_b32_128_d64_rowmask", 32, 12, 128, 64, mask_kind::per_row},
};

// The mask's values (mask_lens, row-major).
std::vector<float> mask_values(const attention_shape& s) {
    const dims lens = s.mask_lens();
    std::vector<float> values;
    for (std::size_t b = 0; b < lens[0]; ++b)
        for (std::size_t r = 0; r < lens[2]; ++r)
            for (std::size_t j = 0; j < lens[3]; ++j)
                values.push_back(j + 8 * (b % 4) >= s.seq ? -10000.0f : 0.0f);
    return values;
}

// q, k, v [batch, heads, seq, d]; fused: the attention op on q, k^T (a view), v; unfused: the
// chain the exporters write.
program build(const attention_shape& s, bool fused) {
    program p;
    module& m = p.main();
    const shape x{dtype::f16, {s.batch, s.heads, s.seq, s.head_dim}};
    auto q = m.add_parameter("q", x);
    auto k = m.add_parameter("k", x);
    auto v = m.add_parameter("v", x);
    auto kt = m.add_instruction(op::transpose{{0, 1, 3, 2}}, {k});
    const float scale = 1.0f / std::sqrt(float(s.head_dim));
    const dims score_lens{s.batch, s.heads, s.seq, s.seq};
    instruction_ref bias = nullptr;
    if (s.mask != mask_kind::none)
        bias = m.add_instruction(op::broadcast{score_lens},
                                 {m.add_parameter("mask", shape{dtype::f16, s.mask_lens()})});
    if (fused) {
        std::vector<instruction_ref> inputs{q, kt, v};
        if (bias) inputs.push_back(bias);
        m.add_return({m.add_instruction(op::attention{scale, false}, inputs)});
        return p;
    }
    auto scores = m.add_instruction(op::dot{}, {q, kt});
    auto c = m.add_literal(from_vector(dtype::f16, {}, std::vector<float>{scale}));
    auto cb = m.add_instruction(op::broadcast{scores->get_shape().lens()}, {c});
    auto scaled = m.add_instruction(op::make_elementwise(op::elementwise_kind::mul), {scores, cb});
    if (bias)
        scaled = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {scaled, bias});
    auto probabilities = m.add_instruction(op::softmax{3}, {scaled});
    m.add_return({m.add_instruction(op::dot{}, {probabilities, v})});
    return p;
}

int run(const std::string& only, bool check, bool every_config) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (const auto& s : shapes) {
        if (!only.empty() && s.name.find(only) == std::string::npos) continue;
        std::map<std::string, argument> params;
        for (const char* n : {"q", "k", "v"}) {
            std::vector<float> values(s.batch * s.heads * s.seq * s.head_dim);
            for (auto& x : values)
                x = dist(rng);
            params[n] = from_vector(dtype::f16, {s.batch, s.heads, s.seq, s.head_dim}, values);
        }
        if (s.mask != mask_kind::none)
            params["mask"] = from_vector(dtype::f16, s.mask_lens(), mask_values(s));
        nlohmann::json row{{"shape", s.name},
                           {"batch", s.batch},
                           {"heads", s.heads},
                           {"seq", s.seq},
                           {"head_dim", s.head_dim}};
        try {
            cuda::compile_options o;
            o.tune = cuda::tune_mode::quick;
            cuda::compile_options unfused_options = o;
            unfused_options.fuse_attention = false; // the chain stays dot, softmax, dot
            // The heuristic's configs for its two matrix products: tuning them costs minutes
            // of the device call (and the chain is the baseline, not the claim).
            unfused_options.tune = cuda::tune_mode::none;
            std::string arch; // what the fused program was compiled for
            for (bool fused : {true, false}) {
                auto compiled = cuda::compile(build(s, fused), fused ? o : unfused_options);
                if (fused) arch = compiled.stats().arch;
                const auto prof = compiled.profile(params, {10, 50});
                const std::string key = fused ? "fused" : "unfused";
                row[key + "_ms"] = prof.median_ms;
                row[key + "_tflops"] = s.flops() / (prof.median_ms * 1e-3) / 1e12;
                row[key + "_launches"] = compiled.stats().launches;
                if (check && fused) {
                    auto unfused = cuda::compile(build(s, false), unfused_options);
                    const auto want = unfused.run(params);
                    const auto got = compiled.run(params, {.poison = true});
                    const output_comparison c = compare_outputs(got[0], want[0]);
                    row["rel_rms_vs_unfused"] = c.relative_rms;
                    row["check"] = c.passed ? "pass" : "FAIL";
                }
            }
            if (every_config) {
                const bool wgmma = cuda::arch_has_wgmma(arch);
                row["heuristic_config"] =
                    cuda::choose_attention_config(s.batch * s.heads, s.seq, s.seq, s.head_dim,
                                                  s.head_dim, wgmma)
                        .name();
                nlohmann::json configs = nlohmann::json::object();
                for (const auto& c : cuda::attention_configs()) {
                    if (!cuda::attention_config_obstacle(c, s.head_dim, s.head_dim, wgmma).empty())
                        continue;
                    cuda::compile_options forced = o;
                    forced.attention_config = c.name();
                    auto compiled = cuda::compile(build(s, true), forced);
                    configs[c.name()] = compiled.profile(params, {10, 50}).median_ms;
                }
                row["config_ms"] = configs;
            }
        } catch (const std::exception& e) {
            row["error"] = e.what();
        }
        std::cout << row.dump() << std::endl;
    }
    return 0;
}

} // namespace
} // namespace conflux::bench

int main(int argc, char** argv) {
    CLI::App app{"The fused attention kernel on issue 16's shapes, f16, against the unfused chain"};
    bool list = false, check = true, every_config = false;
    std::string only;
    app.add_flag("--list", list, "Print the shapes as JSON and stop");
    app.add_option("--only", only, "Shapes whose name contains this");
    app.add_flag("!--no-check", check, "Skip the comparison with the unfused chain");
    app.add_flag("--configs", every_config, "Also time every attention config on each shape");
    CLI11_PARSE(app, argc, argv);
    if (list) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& s : conflux::bench::shapes)
            j.push_back({{"name", s.name},
                         {"batch", s.batch},
                         {"heads", s.heads},
                         {"seq", s.seq},
                         {"head_dim", s.head_dim},
                         {"mask", conflux::bench::to_string(s.mask)}});
        std::cout << j.dump() << "\n";
        return 0;
    }
    return conflux::bench::run(only, check, every_config);
}
