// Issue 5's decision matrix on the CPU: every fused pattern family x every candidate perf config
// of its anchor. Each config is forced with --perf-config semantics; the compile decides
// (invalid for this problem / fused / 2-way / 3-way) and every kernel it produces is compiled
// by NVRTC for sm_90. The GPU runs the same matrix against the reference (tests/gpu).
#include "conflux/cuda/target.hpp"
#include "fused_patterns.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>

namespace conflux {
namespace {

std::string decision_of(const cuda::compiled_program& p) {
    std::string d;
    for (const auto& line : p.trace()) {
        if (line.find("is not valid here") != std::string::npos) return "invalid";
        for (const char* kind : {"3-way", "2-way", "fused"})
            if (line.find(std::string("-> ") + kind) != std::string::npos) d = kind;
    }
    return d.empty() ? "none" : d;
}

TEST(CudaFusedGemmMatrix, EveryPatternTimesEveryCandidateConfigCompilesForSm90) {
    const auto cache = std::filesystem::temp_directory_path() /
                       ("conflux_matrix_kernels_" + std::to_string(::getpid()));
    const auto patterns = test::fused_patterns();
    struct row {
        std::size_t candidates = 0;
        std::map<std::string, int> decisions;
        std::vector<std::string> errors;
    };
    std::vector<row> rows(patterns.size());
    // One pattern per worker: NVRTC dominates and the machine running CI has two cores.
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
        for (std::size_t i = next++; i < patterns.size(); i = next++) {
            auto compile_with = [&](const std::string& config) {
                program p;
                patterns[i].build(p.main(), dtype::f16);
                cuda::compile_options o;
                o.tune = cuda::tune_mode::none;
                o.use_problem_cache = false;
                o.arch = "sm_90";
                o.kernel_cache_dir = cache;
                o.compile_threads = 1;
                o.perf_config = config;
                return cuda::compile(std::move(p), o);
            };
            try {
                const auto first = compile_with("");
                if (first.anchor_candidates().size() != 1) {
                    rows[i].errors.push_back("expected one gemm anchor");
                    continue;
                }
                const auto candidates = first.anchor_candidates()[0];
                rows[i].candidates = candidates.size();
                for (const auto& config : candidates) {
                    try {
                        ++rows[i].decisions[decision_of(compile_with(config))];
                    } catch (const std::exception& e) {
                        rows[i].errors.push_back(config + ": " + e.what());
                    }
                }
            } catch (const std::exception& e) {
                rows[i].errors.push_back(e.what());
            }
        }
    };
    std::thread helper(worker);
    worker();
    helper.join();
    std::filesystem::remove_all(cache);

    std::size_t cases = 0;
    std::cout << "fused pattern x config matrix (f16, sm_90):\n";
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        std::cout << "  " << patterns[i].name << ": " << rows[i].candidates << " configs:";
        for (const auto& [decision, n] : rows[i].decisions) {
            std::cout << " " << decision << " " << n;
            cases += std::size_t(n);
        }
        std::cout << "\n";
        EXPECT_GE(rows[i].candidates, 10u) << patterns[i].name;
        EXPECT_EQ(rows[i].decisions.count("none"), 0u) << patterns[i].name;
        // Every family has configs that hold its whole epilogue and layout tail in one kernel.
        EXPECT_GT(rows[i].decisions["fused"], 0) << patterns[i].name;
        for (const auto& e : rows[i].errors)
            ADD_FAILURE() << patterns[i].name << ": " << e;
    }
    std::cout << "  " << cases << " compiles\n";
    // The upstream thread's case: conv + add + relu + transpose/reshape; a split-K config cannot
    // fuse it and goes through the 3-way path.
    EXPECT_GT(rows[2].decisions["3-way"], 0);
}

TEST(CudaFusedGemmMatrix, AForcedStringThatIsNotAPerfConfigIsAUserError) {
    program p;
    test::fused_patterns()[0].build(p.main(), dtype::f16);
    cuda::compile_options o;
    o.use_kernel_cache = false;
    o.perf_config = "fast please";
    EXPECT_THROW(cuda::compile(std::move(p), o), user_error);
}

} // namespace
} // namespace conflux
