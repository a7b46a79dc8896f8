#include "runner.hpp"

#include "compare.hpp"

#include "conflux/cuda/target.hpp"
#include "conflux/onnx/import.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/ref/evaluate.hpp"

#include <onnx/onnx.pb.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <set>

namespace conflux::conformance {

namespace fs = std::filesystem;

namespace {

// A result decided part-way through a test.
struct verdict {
    outcome result;
    std::string reason;
};

// A feature Conflux lacks, as opposed to a wrong result or a crash: the importer's messages for
// those start with "unsupported", or (for element types, opsets and value kinds) say "... is not
// supported". Such tests are skipped and listed with the reason.
bool is_unsupported(const std::string& message) {
    return message.starts_with("unsupported") ||
           message.find(" not supported") != std::string::npos;
}

// The names of the graph inputs the model expects values for, in graph order: initializers
// listed as inputs (IR version < 4) are constants, not inputs.
struct model_signature {
    bool parsed = false;
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
};

model_signature read_signature(const fs::path& model_path) {
    model_signature sig;
    std::ifstream f(model_path, std::ios::binary);
    ::onnx::ModelProto model;
    // An unreadable model is left for the importer, whose message is the one to report.
    if (!f || !model.ParseFromIstream(&f)) return sig;
    std::set<std::string> initializers;
    for (const auto& t : model.graph().initializer())
        initializers.insert(t.name());
    for (const auto& vi : model.graph().input())
        if (!initializers.contains(vi.name())) sig.inputs.push_back(vi.name());
    for (const auto& vi : model.graph().output())
        sig.outputs.push_back(vi.name());
    sig.parsed = true;
    return sig;
}

// prefix_0.pb, prefix_1.pb, ... in numeric order (input_10 after input_9).
std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
    std::vector<std::pair<std::size_t, fs::path>> found;
    for (const auto& entry : fs::directory_iterator(dir)) {
        auto name = entry.path().filename().string();
        if (!name.starts_with(prefix + "_") || entry.path().extension() != ".pb") continue;
        auto digits = name.substr(prefix.size() + 1, name.size() - prefix.size() - 4);
        if (digits.empty() || !std::all_of(digits.begin(), digits.end(),
                                           [](unsigned char c) { return c >= '0' && c <= '9'; }))
            continue;
        found.emplace_back(std::stoul(digits), entry.path());
    }
    std::sort(found.begin(), found.end());
    std::vector<fs::path> paths;
    for (auto& [i, p] : found)
        paths.push_back(std::move(p));
    return paths;
}

std::vector<fs::path> data_sets(const fs::path& dir) {
    std::vector<fs::path> sets;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
            sets.push_back(entry.path());
    std::sort(sets.begin(), sets.end());
    return sets;
}

struct named_tensor {
    std::string name; // the model's name for it
    argument value;
};

// Reads DIR/<prefix>_N.pb and decides which of `names` each one is: by the tensor's own name
// when it has one the model knows, else by position.
std::vector<named_tensor> read_tensors(const fs::path& dir, const std::string& prefix,
                                       const std::vector<std::string>& names) {
    std::vector<named_tensor> tensors;
    auto files = numbered_files(dir, prefix);
    for (std::size_t i = 0; i < files.size(); ++i) {
        std::string name;
        argument value = onnx::read_tensor_file(files[i].string(), &name);
        if (std::find(names.begin(), names.end(), name) == names.end()) {
            CONFLUX_USER_CHECK(i < names.size(), files[i].filename().string(),
                               ": the model has only ", names.size(), " ", prefix, "s");
            name = names[i];
        }
        tensors.push_back({name, std::move(value)});
    }
    return tensors;
}

std::optional<verdict> import_failure(const user_error& e) {
    std::string msg = e.what();
    if (is_unsupported(msg)) return verdict{outcome::skipped, msg};
    return verdict{outcome::failed, "import: " + msg};
}

std::optional<verdict> run_data_set(const test_case& test, const model_signature& sig,
                                    const fs::path& set, const run_options& run) {
    if (!sig.parsed) {
        // Let the importer say what is wrong with the file.
        try {
            onnx::import_model((test.dir / "model.onnx").string());
        } catch (const user_error& e) {
            return import_failure(e);
        }
        return verdict{outcome::failed, "model.onnx does not parse as a ModelProto"};
    }
    std::vector<named_tensor> inputs, expected;
    try {
        inputs = read_tensors(set, "input", sig.inputs);
        expected = read_tensors(set, "output", sig.outputs);
    } catch (const std::exception& e) {
        // Data that is not a tensor (sequences, optionals: read as a TensorProto they can claim
        // huge dims, hence std::exception) usually belongs to a model the importer rejects; its
        // reason is the one to report.
        try {
            onnx::import_model((test.dir / "model.onnx").string());
        } catch (const user_error& import_error) {
            return import_failure(import_error);
        }
        std::string msg = e.what();
        if (is_unsupported(msg)) return verdict{outcome::skipped, msg};
        return verdict{outcome::failed, "reading test data: " + msg};
    }

    // The data fixes every input's lens, symbolic dims included.
    onnx::import_options options;
    for (const auto& in : inputs)
        options.input_dims[in.name] = in.value.get_shape().lens();
    program p;
    try {
        p = onnx::import_model((test.dir / "model.onnx").string(), options);
    } catch (const user_error& e) {
        // Conflux compiles for static shapes: operands such as a Reshape's shape or Slice's
        // starts must be known at compile time. The backend tests feed them as integer graph
        // inputs, so freeze those to the test's values (as a deployment would) and retry.
        if (std::string(e.what()).find("must be a constant") == std::string::npos)
            return import_failure(e);
        // Integer inputs first (shape operands); if a float operand must be constant too (a
        // Pad value, Range bounds), every input.
        for (bool all : {false, true}) {
            for (const auto& in : inputs)
                if (all || is_integral(in.value.get_shape().type()))
                    options.constant_inputs[in.name] = in.value;
            try {
                p = onnx::import_model((test.dir / "model.onnx").string(), options);
                break;
            } catch (const user_error& again) {
                if (all ||
                    std::string(again.what()).find("must be a constant") == std::string::npos)
                    return import_failure(again);
            }
        }
    }

    if (run.optimize)
        run_passes(p.main(), target_independent_passes(std::nullopt, fuse_attention{}));

    ref::parameter_map params;
    for (auto& in : inputs)
        if (options.constant_inputs.count(in.name) == 0) params[in.name] = std::move(in.value);
    auto names = p.main().output_names();
    std::vector<argument> results;
    try {
        if (run.target == "cuda") {
            cuda::compile_options copts;
            copts.compile_threads = 1; // tests already run in parallel
            // Correctness, not speed: the heuristic's configs, nothing read from or written to
            // the user's problem cache.
            copts.tune = cuda::tune_mode::none;
            copts.use_problem_cache = false;
            // The backend tests hold f32 results to rtol 1e-3 per element; TF32 (the default)
            // is a documented, tolerance-checked deviation, so conformance runs exact fp32.
            copts.exact_fp32 = true;
            auto compiled = cuda::compile(std::move(p), copts);
            if (run.compile_only) return std::nullopt;
            results = compiled.run(params, {.poison = true, .sync_each_step = true});
        } else {
            results = ref::evaluate(p, params);
        }
    } catch (const user_error& e) {
        return verdict{outcome::failed, "evaluate: " + std::string(e.what())};
    }

    if (results.size() != expected.size())
        return verdict{outcome::failed, set.filename().string() + ": the model computes " +
                                            std::to_string(results.size()) +
                                            " outputs, the test data has " +
                                            std::to_string(expected.size())};
    for (std::size_t i = 0; i < expected.size(); ++i) {
        auto it = std::find(names.begin(), names.end(), expected[i].name);
        std::size_t j = it == names.end() ? i : std::size_t(it - names.begin());
        if (auto why = compare(expected[i].value, results[j]))
            return verdict{outcome::failed, set.filename().string() + ": output '" +
                                                expected[i].name + "': " + *why};
    }
    return std::nullopt;
}

} // namespace

std::vector<test_case> discover_tests(const fs::path& root, const std::string& filter) {
    std::error_code ec;
    CONFLUX_USER_CHECK(fs::is_directory(root, ec), "test root '", root.string(),
                       "' is not a directory");
    fs::path normal = root.lexically_normal();
    std::string root_name = normal.has_filename() ? normal.filename().string()
                                                  : normal.parent_path().filename().string();

    std::vector<test_case> tests;
    auto consider = [&](const fs::path& dir, const std::string& name) {
        if (name.find(filter) == std::string::npos) return;
        if (!fs::is_regular_file(dir / "model.onnx", ec)) return;
        if (data_sets(dir).empty()) return;
        tests.push_back({name, dir});
    };
    if (fs::is_regular_file(root / "model.onnx", ec)) {
        consider(root, root_name);
    } else {
        for (const auto& entry : fs::directory_iterator(root))
            if (entry.is_directory())
                consider(entry.path(), root_name + "/" + entry.path().filename().string());
    }
    std::sort(tests.begin(), tests.end(),
              [](const test_case& a, const test_case& b) { return a.name < b.name; });
    return tests;
}

test_result run_test(const test_case& test, const run_options& options) {
    test_result r{test.name, outcome::passed, {}, 0};
    auto start = std::chrono::steady_clock::now();
    try {
        auto sig = read_signature(test.dir / "model.onnx");
        for (const auto& set : data_sets(test.dir)) {
            if (auto v = run_data_set(test, sig, set, options)) {
                r.result = v->result;
                r.reason = std::move(v->reason);
                break;
            }
        }
    } catch (const user_error& e) {
        r.result = outcome::failed;
        r.reason = e.what();
    } catch (const internal_error& e) {
        r.result = outcome::failed;
        r.reason = std::string("internal error: ") + e.what();
    } catch (const std::exception& e) {
        r.result = outcome::failed;
        r.reason = std::string("exception: ") + e.what();
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

} // namespace conflux::conformance
