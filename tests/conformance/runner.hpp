// One ONNX backend test: DIR/model.onnx plus DIR/test_data_set_*/{input,output}_N.pb. The model
// is imported, evaluated on the reference target for every data set, and each output compared
// with the expected one.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace conflux::conformance {

struct test_case {
    std::string name; // "<root folder>/<test folder>"
    std::filesystem::path dir;
};

// The tests directly under `root` (or `root` itself when it holds a model.onnx), sorted by name,
// keeping those whose name contains `filter`. A root that does not exist is a user_error.
std::vector<test_case> discover_tests(const std::filesystem::path& root, const std::string& filter);

enum class outcome { passed, failed, skipped };

struct test_result {
    std::string name;
    outcome result = outcome::passed;
    std::string reason; // why it failed or was skipped
    double seconds = 0;
};

struct run_options {
    // Interpret the program after the target-independent passes instead of as imported.
    bool optimize = false;
    // "ref" or "cuda" (compiled with the CUDA target and run on GPU 0).
    std::string target = "ref";
    // cuda: compile every kernel (NVRTC, no GPU needed) and count that as passing.
    bool compile_only = false;
};

// Never throws: every problem becomes a failed (or, when unsupported, skipped) result.
test_result run_test(const test_case& test, const run_options& options = {});

} // namespace conflux::conformance
