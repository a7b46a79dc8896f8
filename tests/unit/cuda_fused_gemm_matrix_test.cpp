// Issue 5's decision matrix on the CPU: every fused pattern family x every candidate perf config
// of its anchor. Each config is forced with --perf-config semantics; the compile decides
// (invalid for this problem / fused / 2-way / 3-way) and every kernel it produces is compiled
// by NVRTC for sm_90. The GPU runs the same matrix against the reference (tests/gpu).
#include "conflux/cuda/target.hpp"
#include "fused_patterns.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace conflux {
namespace cuda_fused_gemm_matrix_test {

std::string decision_of(const cuda::compiled_program& p) {
    std::string d;
    for (const auto& line : p.trace()) {
        if (line.find("is not valid here") != std::string::npos) return "invalid";
        for (const char* kind : {"3-way", "2-way", "fused"})
            if (line.find(std::string("-> ") + kind) != std::string::npos) d = kind;
    }
    return d.empty() ? "none" : d;
}

// CI runs on two cores and each compile is an NVRTC run of a second or more, so this compiles a
// stratified part of the product: pattern i takes every config j with (i + j) % stride == 0,
// and a config no pattern took is given to the first pattern that has it, so every candidate
// config and every pattern compiles at least once here. CONFLUX_FULL_MATRIX=1 compiles all of
// it; the GPU suite (tests/gpu/op_test.cpp) compiles and runs the whole product on the device
// in three dtypes.
TEST(CudaFusedGemmMatrix, EveryPatternAndEveryCandidateConfigCompilesForSm90) {
    const auto cache = std::filesystem::temp_directory_path() /
                       ("conflux_matrix_kernels_" + std::to_string(::getpid()));
    const char* full = std::getenv("CONFLUX_FULL_MATRIX");
    const std::size_t stride = full != nullptr && std::string(full) == "1" ? 1 : 4;
    const auto patterns = test::fused_patterns();
    struct row {
        std::vector<std::string> candidates;
        std::vector<std::string> chosen;
        std::map<std::string, int> decisions;
        std::vector<std::string> errors;
    };
    std::vector<row> rows(patterns.size());
    std::mutex mutex;
    auto compile_with = [&](std::size_t i, const std::string& config) {
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
    // NVRTC dominates and the machine running CI has two cores: two workers over the jobs.
    auto run_jobs = [](std::size_t count, const std::function<void(std::size_t)>& job) {
        std::atomic<std::size_t> next{0};
        auto worker = [&] {
            for (std::size_t k = next++; k < count; k = next++)
                job(k);
        };
        std::thread helper(worker);
        worker();
        helper.join();
    };

    run_jobs(patterns.size(), [&](std::size_t i) {
        try {
            const auto first = compile_with(i, "");
            std::lock_guard lock(mutex);
            if (first.anchor_candidates().size() != 1)
                rows[i].errors.push_back("expected one gemm anchor");
            else
                rows[i].candidates = first.anchor_candidates()[0];
        } catch (const std::exception& e) {
            std::lock_guard lock(mutex);
            rows[i].errors.push_back(e.what());
        }
    });
    std::set<std::string> covered;
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (std::size_t j = 0; j < rows[i].candidates.size(); ++j)
            if ((i + j) % stride == 0) {
                rows[i].chosen.push_back(rows[i].candidates[j]);
                covered.insert(rows[i].candidates[j]);
            }
    for (auto& r : rows)
        for (const auto& config : r.candidates)
            if (covered.insert(config).second) r.chosen.push_back(config);
    std::vector<std::pair<std::size_t, std::string>> jobs;
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (const auto& config : rows[i].chosen)
            jobs.emplace_back(i, config);
    run_jobs(jobs.size(), [&](std::size_t k) {
        const auto& [i, config] = jobs[k];
        std::string decision, error;
        try {
            decision = decision_of(compile_with(i, config));
        } catch (const std::exception& e) {
            error = config + ": " + e.what();
        }
        std::lock_guard lock(mutex);
        if (error.empty())
            ++rows[i].decisions[decision];
        else
            rows[i].errors.push_back(error);
    });
    std::filesystem::remove_all(cache);

    std::size_t cases = 0;
    std::cout << "fused pattern x config matrix (f16, sm_90, every " << stride
              << (stride == 1 ? "st" : "th") << " config of each pattern):\n";
    for (std::size_t i = 0; i < patterns.size(); ++i) {
        std::cout << "  " << patterns[i].name << ": " << rows[i].chosen.size() << " of "
                  << rows[i].candidates.size() << " configs:";
        for (const auto& [decision, n] : rows[i].decisions) {
            std::cout << " " << decision << " " << n;
            cases += std::size_t(n);
        }
        std::cout << "\n";
        EXPECT_GE(rows[i].candidates.size(), 10u) << patterns[i].name;
        EXPECT_EQ(rows[i].decisions.count("none"), 0u) << patterns[i].name;
        // Every family has configs that hold its whole epilogue and layout tail in one kernel.
        EXPECT_GT(rows[i].decisions["fused"], 0) << patterns[i].name;
        for (const auto& e : rows[i].errors)
            ADD_FAILURE() << patterns[i].name << ": " << e;
    }
    std::cout << "  " << cases << " compiles, " << covered.size() << " distinct configs\n";
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

} // namespace cuda_fused_gemm_matrix_test
} // namespace conflux
