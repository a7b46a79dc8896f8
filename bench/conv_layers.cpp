// conflux_bench_conv_layers: the convolution layers of ResNet-50 (torchvision v1.5, stride on the
// 3x3) at batch 256, f16, NHWC, through the CUDA target, each as a conv alone and as the
// conv + bias + residual + relu block the pass pipeline fuses into one fused gemm op. Every
// (layer, variant) is compiled with the heuristic's config and, with --configs K > 1, with each
// of the heuristic's top K candidates forced, then profiled (CompiledProgram::profile). Prints
// one JSON object per line per (layer, variant, config) and a table at the end;
// bench/compare_conv_layers.py joins the JSON with bench/torch_conv_layers.py's.
//
// The layer list is defined here only: --list prints it as JSON for the PyTorch script, so the
// two sides cannot time different shapes.
#include "conflux/cuda/target.hpp"
#include "conflux/ir/half.hpp"
#include "conflux/ir/program.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/util/errors.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

namespace conflux::bench {
namespace {

struct conv_layer {
    std::string name;
    std::size_t h = 0, c = 0, k = 0, r = 0, stride = 1; // square input and kernel
    std::size_t pad() const { return r / 2; }
    std::size_t oh() const { return (h + 2 * pad() - r) / stride + 1; }
    double flops(std::size_t batch) const {
        return 2.0 * double(batch) * double(oh() * oh()) * double(k) * double(r * r * c);
    }
};

// Every distinct conv shape of ResNet-50 v1.5's bottleneck stages. A stage's first block takes
// the previous stage's output (in channels, at the previous resolution), strides on its 3x3 and
// its downsample; the later blocks reduce out -> width. Stage 1's downsample (1x1 64->256,
// stride 1) has the shape of its expanding 1x1 and is not repeated.
std::vector<conv_layer> resnet50_layers() {
    std::vector<conv_layer> layers = {
        {"s1_1x1_64_64", 56, 64, 64, 1, 1},
        {"s1_3x3_64", 56, 64, 64, 3, 1},
        {"s1_1x1_64_256", 56, 64, 256, 1, 1},
        {"s1_1x1_256_64", 56, 256, 64, 1, 1},
    };
    std::size_t in = 256, hw = 56;
    for (std::size_t stage = 2; stage <= 4; ++stage) {
        const std::size_t width = 64 << (stage - 1), out = 4 * width, half = hw / 2;
        const std::string s = "s" + std::to_string(stage) + "_";
        const std::string w = std::to_string(width);
        auto n = [](std::size_t v) { return std::to_string(v); };
        layers.push_back({s + "1x1_" + n(in) + "_" + w, hw, in, width, 1, 1});
        layers.push_back({s + "3x3_s2_" + w, hw, width, width, 3, 2});
        layers.push_back({s + "1x1_" + w + "_" + n(out), half, width, out, 1, 1});
        layers.push_back({s + "ds_" + n(in) + "_" + n(out) + "_s2", hw, in, out, 1, 2});
        layers.push_back({s + "1x1_" + n(out) + "_" + w, half, out, width, 1, 1});
        layers.push_back({s + "3x3_" + w, half, width, width, 3, 1});
        in = out;
        hw = half;
    }
    return layers;
}

nlohmann::json layers_json(const std::vector<conv_layer>& layers, std::size_t batch) {
    nlohmann::json list = nlohmann::json::array();
    for (const conv_layer& l : layers)
        list.push_back({{"name", l.name},
                        {"h", l.h},
                        {"w", l.h},
                        {"c", l.c},
                        {"k", l.k},
                        {"r", l.r},
                        {"s", l.r},
                        {"stride", l.stride},
                        {"pad", l.pad()},
                        {"oh", l.oh()},
                        {"ow", l.oh()},
                        {"flops", l.flops(batch)}});
    return {{"batch", batch}, {"dtype", "f16"}, {"layout", "NHWC"}, {"layers", list}};
}

// ---- programs -------------------------------------------------------------------------------

enum class variant { conv, fused };
const char* name_of(variant v) {
    return v == variant::conv ? "conv" : "fused";
}

// "conv": x [B, H, W, C] * w [K, R, S, C] -> [B, OH, OW, K]. "fused": the same conv + bias [K]
// + residual [B, OH, OW, K], then relu, as separate ops for the passes to fuse.
program build_program(const conv_layer& l, std::size_t batch, variant v) {
    program p;
    module& m = p.main();
    const dtype t = dtype::f16;
    auto x = m.add_parameter("x", shape{t, {batch, l.h, l.h, l.c}});
    auto w = m.add_parameter("w", shape{t, {l.k, l.r, l.r, l.c}});
    const std::size_t pad = l.pad();
    auto conv = m.add_instruction(
        op::convolution{{pad, pad, pad, pad}, {l.stride, l.stride}, {1, 1}, 1, true}, {x, w});
    if (v == variant::conv) {
        m.add_return({conv});
        return p;
    }
    const dims out = conv->get_shape().lens();
    auto b = m.add_parameter("b", shape{t, {l.k}});
    auto r = m.add_parameter("r", shape{t, out});
    auto add = op::make_elementwise(op::elementwise_kind::add);
    auto biased = m.add_instruction(add, {conv, m.add_instruction(op::broadcast{out}, {b})});
    auto sum = m.add_instruction(add, {biased, r});
    m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {sum})});
    return p;
}

// ---- inputs ---------------------------------------------------------------------------------

std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Values close to N(0, scale^2) (Irwin-Hall: four 16-bit uniforms from one 64-bit draw, summed
// and standardised), never zero, filled on every core: batch-256 tensors hold up to 2e8 values
// and std::normal_distribution on one thread would take longer than the timing.
argument random_f16(const shape& s, std::uint64_t seed, float scale) {
    argument a(s);
    auto* out = a.typed<float16>();
    const std::size_t n = s.elements();
    constexpr std::size_t chunk = 1 << 20;
    const std::size_t chunks = (n + chunk - 1) / chunk;
    std::atomic<std::size_t> next{0};
    // sum of 4 U(0, 65535) has mean 2 * 65535 and variance 4 * 65536^2 / 12.
    const float norm = scale * std::sqrt(3.0f) / 65536.0f;
    auto worker = [&] {
        for (std::size_t c = next++; c < chunks; c = next++) {
            std::uint64_t state = seed * 0x100000001b3ull + c;
            for (std::size_t i = c * chunk, e = std::min(n, i + chunk); i < e; ++i) {
                const std::uint64_t u = splitmix64(state);
                const float sum = float(u & 0xffff) + float((u >> 16) & 0xffff) +
                                  float((u >> 32) & 0xffff) + float(u >> 48);
                const float16 h((sum - 2 * 65535.0f) * norm);
                // Keeps every value non-zero (either sign of zero).
                out[i] = (h.bits & 0x7fffu) != 0 ? h : float16(scale * 0x1p-8f);
            }
        }
    };
    std::vector<std::jthread> threads;
    for (unsigned t = 1; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
        threads.emplace_back(worker);
    worker();
    return a;
}

struct layer_inputs {
    std::map<std::string, argument> params;
};

layer_inputs make_inputs(const conv_layer& l, std::size_t batch, std::uint64_t seed) {
    const dtype t = dtype::f16;
    layer_inputs in;
    in.params["x"] = random_f16(shape{t, {batch, l.h, l.h, l.c}}, seed * 4 + 0, 1.0f);
    // Scaled by 1/sqrt(fan-in) so every output is ~N(0, 1): nothing overflows f16.
    in.params["w"] = random_f16(shape{t, {l.k, l.r, l.r, l.c}}, seed * 4 + 1,
                                1.0f / std::sqrt(float(l.r * l.r * l.c)));
    in.params["b"] = random_f16(shape{t, {l.k}}, seed * 4 + 2, 1.0f);
    in.params["r"] = random_f16(shape{t, {batch, l.oh(), l.oh(), l.k}}, seed * 4 + 3, 1.0f);
    return in;
}

// ---- compiling ------------------------------------------------------------------------------

struct job {
    std::size_t layer = 0;
    variant var = variant::conv;
    std::string config; // empty: the heuristic
    std::optional<cuda::compiled_program> compiled;
    std::string chosen;  // the config the anchor got, from the trace
    std::string skipped; // why this forced config was not used, when it was not
    std::string error;
};

// The anchor's config as the trace states it ("... config CONFIG -> ..."); empty if not found.
std::string traced_config(const std::vector<std::string>& trace) {
    for (const std::string& line : trace) {
        const auto at = line.find(" config ");
        if (at == std::string::npos) continue;
        const auto start = at + 8;
        return line.substr(start, line.find_first_of(" :", start) - start);
    }
    return {};
}

// Compiles every job on its own thread pool: one program has only one to three kernels, so
// NVRTC's per-program parallelism would leave most cores idle.
void compile_all(std::vector<job>& jobs, const std::vector<conv_layer>& layers, std::size_t batch,
                 const cuda::compile_options& base, const char* phase) {
    std::atomic<std::size_t> next{0}, done{0};
    std::mutex report;
    auto worker = [&] {
        for (std::size_t i = next++; i < jobs.size(); i = next++) {
            job& j = jobs[i];
            cuda::compile_options options = base;
            options.perf_config = j.config;
            options.compile_threads = 1;
            try {
                j.compiled = cuda::compile(build_program(layers[j.layer], batch, j.var), options);
                j.chosen = traced_config(j.compiled->trace());
                for (const std::string& line : j.compiled->trace())
                    if (line.find("is not valid here") != std::string::npos) j.skipped = line;
            } catch (const std::exception& e) {
                j.error = e.what();
            }
            // About ten lines per phase: enough to see it move, few enough for a log file.
            const std::lock_guard lock(report);
            const std::size_t n = ++done, step = std::max<std::size_t>(1, jobs.size() / 10);
            if (n % step == 0 || n == jobs.size())
                std::cerr << phase << ": compiled " << n << "/" << jobs.size() << "\n";
        }
    };
    std::vector<std::jthread> threads;
    for (unsigned t = 1; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
        threads.emplace_back(worker);
    worker();
}

// ---- reporting ------------------------------------------------------------------------------

struct measurement {
    std::string config;
    bool heuristic = false;
    double ms = 0;
};

struct layer_summary {
    std::optional<measurement> heuristic[2], best[2];
};

std::string fixed(double v, int digits) {
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(digits);
    os << v;
    return os.str();
}

void print_table(const std::vector<conv_layer>& layers, const std::vector<layer_summary>& summary,
                 std::size_t batch) {
    std::printf("\n%-22s %-8s %9s %8s %9s %8s  %s\n", "layer", "variant", "heur ms", "TFLOP/s",
                "best ms", "TFLOP/s", "best config");
    for (std::size_t l = 0; l < layers.size(); ++l)
        for (int v = 0; v < 2; ++v) {
            const auto& h = summary[l].heuristic[v];
            const auto& b = summary[l].best[v];
            if (!h && !b) continue;
            auto cell = [&](const std::optional<measurement>& m) {
                return m ? fixed(m->ms, 3) + " " + fixed(layers[l].flops(batch) / m->ms / 1e9, 1)
                         : std::string("- -");
            };
            std::string hc = cell(h), bc = cell(b);
            std::printf("%-22s %-8s %9s %8s %9s %8s  %s\n", layers[l].name.c_str(),
                        name_of(variant(v)), hc.substr(0, hc.find(' ')).c_str(),
                        hc.substr(hc.find(' ') + 1).c_str(), bc.substr(0, bc.find(' ')).c_str(),
                        bc.substr(bc.find(' ') + 1).c_str(), b ? b->config.c_str() : "-");
        }
}

int run(int argc, char** argv) {
    CLI::App app{"ResNet-50 conv layers (batch 256, f16, NHWC) through the Conflux CUDA target",
                 "conflux_bench_conv_layers"};
    std::size_t batch = 256, configs = 1, warmup = 5, reps = 20;
    std::string layer_spec = "all", kernel_cache, dump_cubins, arch, extra_configs;
    bool compile_only = false, list = false;
    app.add_option("--batch", batch, "batch size")->capture_default_str();
    app.add_option("--layers", layer_spec, "all, or layer names separated by commas")
        ->capture_default_str();
    app.add_option("--configs", configs,
                   "also force each of the heuristic's top K candidate configs")
        ->capture_default_str();
    app.add_option("--extra-configs", extra_configs,
                   "configs (comma-separated) also forced on every layer they are valid for, "
                   "candidates or not (e.g. the _wgmma_pp form)");
    app.add_option("--warmup", warmup, "untimed runs before timing")->capture_default_str();
    app.add_option("--reps", reps, "timed runs (the median is reported)")->capture_default_str();
    app.add_option("--kernel-cache", kernel_cache, "kernel cache directory");
    app.add_option("--dump-cubins", dump_cubins,
                   "write every compiled program's cubins to DIR/LAYER/VARIANT/CONFIG/");
    app.add_option("--arch", arch, "compile for this arch (default: the device's, else sm_90)");
    app.add_flag("--compile-only", compile_only, "compile and print the traces; run nothing");
    app.add_flag("--list", list, "print the layer list as JSON and exit");
    CLI11_PARSE(app, argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // lines survive a timeout

    std::vector<conv_layer> layers = resnet50_layers();
    if (layer_spec != "all") {
        std::vector<conv_layer> chosen;
        std::stringstream names(layer_spec);
        for (std::string name; std::getline(names, name, ',');) {
            auto it = std::find_if(layers.begin(), layers.end(),
                                   [&](const conv_layer& l) { return l.name == name; });
            CONFLUX_USER_CHECK(it != layers.end(), "--layers: no layer '", name,
                               "' (--list shows them)");
            chosen.push_back(*it);
        }
        layers = std::move(chosen);
    }
    if (list) {
        std::cout << layers_json(layers, batch).dump(1) << "\n";
        return 0;
    }
    CONFLUX_USER_CHECK(compile_only || cuda::available_devices() > 0,
                       "no CUDA device: ", cuda::no_device_reason(), " (use --compile-only)");

    cuda::compile_options base;
    base.arch = arch;
    // The bench times the heuristic's choice and the top-K itself.
    base.tune = cuda::tune_mode::none;
    base.use_problem_cache = false;
    if (!kernel_cache.empty()) base.kernel_cache_dir = kernel_cache;
    base.warn = [](const std::string& w) { std::cerr << "warning: " << w << "\n"; };

    // Phase 1: the heuristic's compile of every (layer, variant); phase 2: the forced top-K
    // candidates it names, other than the heuristic's own choice.
    std::vector<job> jobs;
    for (std::size_t l = 0; l < layers.size(); ++l)
        for (variant v : {variant::conv, variant::fused})
            jobs.push_back({l, v, {}, {}, {}, {}, {}});
    compile_all(jobs, layers, batch, base, "heuristic");
    std::vector<job> forced;
    for (const job& j : jobs) {
        if (!j.compiled || j.compiled->anchor_candidates().empty()) continue;
        const auto& candidates = j.compiled->anchor_candidates().front();
        for (std::size_t c = 0; c < std::min(configs, candidates.size()); ++c)
            if (configs > 1 && candidates[c] != j.chosen)
                forced.push_back({j.layer, j.var, candidates[c], {}, {}, {}, {}});
    }
    std::vector<std::string> extras;
    std::stringstream extra_list(extra_configs);
    // A string that is not a config fails its compile, reported with the layer.
    for (std::string c; std::getline(extra_list, c, ',');)
        extras.push_back(c);
    for (const job& j : jobs)
        for (const std::string& c : extras)
            if (j.compiled && c != j.chosen &&
                std::none_of(forced.begin(), forced.end(), [&](const job& f) {
                    return f.layer == j.layer && f.var == j.var && f.config == c;
                }))
                forced.push_back({j.layer, j.var, c, {}, {}, {}, {}});
    if (!forced.empty()) compile_all(forced, layers, batch, base, "forced configs");
    // Measured in layer order, so each layer's inputs are generated once.
    for (job& j : forced)
        jobs.push_back(std::move(j));
    std::stable_sort(jobs.begin(), jobs.end(),
                     [](const job& a, const job& b) { return a.layer < b.layer; });

    int failures = 0;
    std::vector<layer_summary> summary(layers.size());
    std::optional<layer_inputs> inputs;
    std::size_t inputs_layer = layers.size();
    for (job& j : jobs) {
        const conv_layer& layer = layers[j.layer];
        const bool heuristic = j.config.empty();
        const std::string config = heuristic ? j.chosen : j.config;
        const std::string label = layer.name + " " + name_of(j.var) + " " + config;
        if (!j.error.empty()) {
            std::cerr << "FAILED to compile " << label << ": " << j.error << "\n";
            std::printf("{\"layer\":\"%s\",\"variant\":\"%s\",\"config\":\"%s\",\"error\":%s}\n",
                        layer.name.c_str(), name_of(j.var), config.c_str(),
                        nlohmann::json(j.error).dump().c_str());
            ++failures;
            continue;
        }
        if (!j.skipped.empty()) {
            std::cerr << "skipped " << label << ": " << j.skipped << "\n";
            continue;
        }
        // Whether the fused variant became one kernel or a split, and why.
        if (j.var == variant::fused)
            for (const std::string& line : j.compiled->trace())
                std::printf("trace %s%s: %s\n", layer.name.c_str(), heuristic ? " (heuristic)" : "",
                            line.c_str());
        std::string cubin_dir;
        if (!dump_cubins.empty()) {
            const auto dir = std::filesystem::path(dump_cubins) / layer.name / name_of(j.var) /
                             (config.empty() ? "unknown" : config);
            j.compiled->write_cubins(dir);
            cubin_dir = dir.string();
        }
        if (compile_only) {
            std::printf("compiled %s%s: %zu kernels, %zu launches\n", label.c_str(),
                        heuristic ? " (heuristic)" : "", j.compiled->stats().kernels,
                        j.compiled->stats().launches);
            j.compiled.reset();
            continue;
        }
        if (inputs_layer != j.layer) {
            std::cerr << "[" << j.layer + 1 << "/" << layers.size() << "] " << layer.name
                      << ": generating inputs\n";
            inputs.reset(); // the previous layer's host memory first
            inputs = make_inputs(layer, batch, 1000 + j.layer);
            inputs_layer = j.layer;
        }
        std::cerr << "[" << j.layer + 1 << "/" << layers.size() << "] " << label << "\n";
        cuda::profile_result prof;
        try {
            prof = j.compiled->profile(inputs->params, {warmup, reps});
        } catch (const std::exception& e) {
            std::cerr << "FAILED to run " << label << ": " << e.what() << "\n";
            ++failures;
            j.compiled.reset();
            continue;
        }
        // Frees this program's device memory (arena, temporaries) before the next one loads.
        j.compiled.reset();
        double steps_ms = 0;
        nlohmann::json steps = nlohmann::json::array();
        for (const auto& s : prof.steps) {
            steps_ms += s.median_ms;
            steps.push_back({s.kernel, s.origin, s.median_ms});
        }
        nlohmann::json line = {
            {"layer", layer.name},  {"variant", name_of(j.var)},
            {"config", config},     {"heuristic", heuristic},
            {"ms", prof.median_ms}, {"p90_ms", prof.p90_ms},
            {"steps_ms", steps_ms}, {"launches", prof.steps.size()},
            {"steps", steps},       {"tflops", layer.flops(batch) / prof.median_ms / 1e9},
            {"batch", batch}};
        if (!cubin_dir.empty()) line["cubins"] = cubin_dir;
        std::printf("%s\n", line.dump().c_str());
        const int v = int(j.var);
        const measurement m{config, heuristic, prof.median_ms};
        if (heuristic) summary[j.layer].heuristic[v] = m;
        if (!summary[j.layer].best[v] || m.ms < summary[j.layer].best[v]->ms)
            summary[j.layer].best[v] = m;
    }
    if (!compile_only) print_table(layers, summary, batch);
    if (failures != 0) std::fprintf(stderr, "%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}

} // namespace
} // namespace conflux::bench

int main(int argc, char** argv) {
    try {
        return conflux::bench::run(argc, argv);
    } catch (const conflux::user_error& e) {
        std::cerr << "conflux_bench_conv_layers: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "conflux_bench_conv_layers: internal error: " << e.what() << "\n";
        return 3;
    }
}
