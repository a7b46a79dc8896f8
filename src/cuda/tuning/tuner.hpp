// Chooses each gemm anchor's perf config (docs/ARCHITECTURE.md, "Tuning and the problem cache"):
// from the problem cache when a valid entry exists, else by timing candidates on the GPU, else the
// heuristic. Plugged into the lowering as lowering_options::choose_config.
//
// Reuse: a cached config is parsed and checked with `valid` (and --exact-fp32) for the problem,
// and its kernels are compiled, before it is used; an unparseable, invalid or failing entry gets a
// warning naming the key, stale ones (another device or generator version) one warning per
// device and version, and tuning (or the heuristic when tuning is off) runs instead; a tuned
// winner replaces it. A valid config that cannot fuse the op is used as it is: the lowering
// splits the op (traced, not warned).
//
// Tuning: every candidate compiles (in parallel) into the whole sequence it lowers to for the op
// alone (fused or split), runs on random non-zero inputs, and is timed after warm-up with CUDA
// events (median of repetitions). Its outputs are compared with the op lowered to the direct
// kernels (the trusted reference); a candidate that differs beyond verify's tolerance is
// disqualified and logged. Anchors that share a key are tuned once per compile.
#pragma once

#include "conflux/cuda/tune_mode.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"
#include "cuda/lower/lower.hpp"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace conflux::cuda {

class kernel_cache;
class problem_cache;
struct problem_key;

struct tuner_options {
    // Timing needs a GPU: the caller passes none without one (cache or heuristic only).
    tune_mode mode = tune_mode::quick;
    std::string arch = "sm_90";
    gemm_device_limits limits;
    bool exact_fp32 = false;
    problem_cache* cache = nullptr;  // none: nothing is reused or remembered
    kernel_cache* kernels = nullptr; // for the candidates' kernels
    unsigned compile_threads = 0;
    std::size_t quick_candidates = 6; // how many of the heuristic's best quick mode times
    std::function<void(const std::string&)> warn;
    // Progress: called with a status line while a problem is tuned (`done` false) and once
    // when it is finished (`done` true).
    std::function<void(const std::string& line, bool done)> status;
};

struct tuning_summary {
    std::size_t problems = 0;  // distinct keys seen
    std::size_t reused = 0;    // from the problem cache
    std::size_t tuned = 0;     // timed on the GPU
    std::size_t heuristic = 0; // neither
    std::size_t disqualified = 0;
    double seconds = 0;
};

class tuner {
public:
    explicit tuner(tuner_options options);

    // lowering_options::choose_config.
    std::optional<perf_config> choose(const anchor_choice& c, std::vector<std::string>& trace);

    const tuning_summary& summary() const { return summary_; }

private:
    tuner_options options_;
    std::map<std::string, std::optional<perf_config>> chosen_; // by key slot, this compile
    tuning_summary summary_;
    std::set<std::string> stale_sources_; // "device generator" of stale entries warned about

    // Why `text` cannot be used for c (empty when it can): parse, valid, compiles.
    std::string check_cached(const std::string& text, const anchor_choice& c);
    std::optional<perf_config> tune(const anchor_choice& c, const problem_key& key,
                                    std::vector<std::string>& trace);
};

} // namespace conflux::cuda
