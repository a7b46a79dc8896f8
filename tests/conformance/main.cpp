// onnx_conformance [--target ref] [-j N] [--filter SUBSTR] [--verbose] ROOT...
// Runs ONNX backend tests (model.onnx + test_data_set_*/) on the reference target and reports
// failures, skips grouped by reason, and "N passed, N failed, N skipped". Exits 1 when any test
// failed, 2 on a usage error.
#include "runner.hpp"

#include "conflux/cuda/target.hpp"

#include "conflux/util/errors.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

using namespace conflux::conformance;

namespace {

const char* const default_roots[] = {
    "/usr/share/libonnx-testdata/data/node",
    "/usr/share/libonnx-testdata/data/pytorch-converted",
    "/usr/share/libonnx-testdata/data/pytorch-operator",
    "/usr/share/libonnx-testdata/data/simple",
};

// Skip reasons name the node; drop that so that every test skipped for one reason is grouped.
std::string skip_group(const std::string& reason) {
    static const std::regex node_part(R"( \(node '[^']*'(, domain '')?(, opset \d+)?\))");
    static const std::regex domain_part(R"( \(node '[^']*', (domain '[^']+')(, opset \d+)?\))");
    static const std::regex path_part(R"(^/[^:]*: )");
    static const std::regex value_name(R"(^(input|output|tensor) '[^']*')");
    std::string s = std::regex_replace(reason, domain_part, " ($1)");
    s = std::regex_replace(s, node_part, "");
    s = std::regex_replace(s, path_part, "");
    return std::regex_replace(s, value_name, "$1 '...'");
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"Runs ONNX backend tests (model.onnx + test_data_set_*) on a Conflux target",
                 "onnx_conformance"};
    std::string target = "ref";
    unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
    std::string filter;
    bool verbose = false;
    std::size_t min_passed = 0;
    conflux::conformance::run_options run_options;
    std::vector<std::string> roots;
    app.add_option("--target", target, "Target to run on")
        ->check(CLI::IsMember({"ref", "cuda"}))
        ->capture_default_str();
    app.add_option("-j,--jobs", jobs, "Tests run in parallel")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_option("--filter", filter, "Run only tests whose name contains this");
    app.add_flag("-v,--verbose", verbose, "Print every test's result as it finishes");
    app.add_flag("--optimize", run_options.optimize,
                 "Run the target-independent passes before evaluating");
    app.add_flag("--compile-only", run_options.compile_only,
                 "With --target cuda: compile every test's kernels for sm_90 without running "
                 "them (no GPU needed)");
    app.add_option("--min-passed", min_passed,
                   "Fail unless at least this many tests pass (guards against passes silently "
                   "turning into skips)");
    app.add_option("ROOT", roots,
                   "Folders of tests (default: the node, pytorch-converted, pytorch-operator and "
                   "simple sets of Debian's libonnx-testdata)");
    CLI11_PARSE(app, argc, argv);
    if (roots.empty()) roots.assign(std::begin(default_roots), std::end(default_roots));
    run_options.target = target;
    if (target == "cuda" && !run_options.compile_only && conflux::cuda::available_devices() == 0) {
        // CTest reads this line as "skipped" (SKIP_REGULAR_EXPRESSION), never as passed.
        std::cout << "no CUDA device (" << conflux::cuda::no_device_reason()
                  << "): the cuda conformance run is skipped\n";
        return 0;
    }

    std::vector<test_case> tests;
    try {
        for (const auto& root : roots) {
            auto found = discover_tests(root, filter);
            tests.insert(tests.end(), found.begin(), found.end());
        }
    } catch (const conflux::user_error& e) {
        std::cerr << "onnx_conformance: error: " << e.what() << "\n";
        return 2;
    }
    if (tests.empty()) {
        std::cerr << "onnx_conformance: error: no tests found"
                  << (filter.empty() ? "" : " matching '" + filter + "'") << "\n";
        return 2;
    }

    std::vector<test_result> results(tests.size());
    // With --target cuda every test also runs on the reference target, so the two pass counts
    // are printed side by side and a test that passes on ref but not on cuda fails the run.
    std::vector<test_result> ref_results(
        target == "cuda" && !run_options.compile_only ? tests.size() : 0);
    std::atomic<std::size_t> next{0};
    std::mutex print_mutex;
    auto worker = [&] {
        for (std::size_t i = next++; i < tests.size(); i = next++) {
            results[i] = run_test(tests[i], run_options);
            if (!ref_results.empty()) ref_results[i] = run_test(tests[i], {});
            if (verbose) {
                static const char* const words[] = {"PASS", "FAIL", "SKIP"};
                std::lock_guard lock(print_mutex);
                std::cout << words[int(results[i].result)] << " " << results[i].name << " ("
                          << results[i].seconds << " s)"
                          << (results[i].reason.empty() ? "" : ": " + results[i].reason) << "\n"
                          << std::flush;
            }
        }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < std::min<std::size_t>(jobs, tests.size()); ++t)
        threads.emplace_back(worker);
    for (auto& t : threads)
        t.join();

    std::size_t passed = 0, failed = 0, skipped = 0;
    std::map<std::string, std::vector<std::string>> skips;
    for (const auto& r : results) {
        switch (r.result) {
        case outcome::passed:
            ++passed;
            break;
        case outcome::failed:
            ++failed;
            std::cout << "FAIL " << r.name << ": " << r.reason << "\n";
            break;
        case outcome::skipped:
            ++skipped;
            skips[skip_group(r.reason)].push_back(r.name);
            break;
        }
    }
    if (!skips.empty()) {
        std::cout << "skipped, by reason:\n";
        for (const auto& [reason, names] : skips) {
            std::cout << "  " << reason << " [" << names.size() << "]:";
            for (const auto& n : names)
                std::cout << " " << n;
            std::cout << "\n";
        }
    }
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
    if (!ref_results.empty()) {
        std::size_t ref_passed = 0, ref_failed = 0, ref_skipped = 0, regressions = 0;
        for (std::size_t i = 0; i < tests.size(); ++i) {
            const outcome o = ref_results[i].result;
            ref_passed += o == outcome::passed;
            ref_failed += o == outcome::failed;
            ref_skipped += o == outcome::skipped;
            if (o == outcome::passed && results[i].result != outcome::passed) {
                ++regressions;
                std::cout << "passes on ref but not on cuda: " << tests[i].name << "\n";
            }
        }
        std::cout << "target   passed  failed  skipped\n"
                  << "ref      " << ref_passed << "     " << ref_failed << "       " << ref_skipped
                  << "\ncuda     " << passed << "     " << failed << "       " << skipped << "\n"
                  << regressions << " tests pass on ref but not on cuda\n";
        if (regressions != 0) return 1;
    }
    if (passed < min_passed) {
        std::cout << "expected at least " << min_passed << " passed\n";
        return 1;
    }
    return failed == 0 ? 0 : 1;
}
