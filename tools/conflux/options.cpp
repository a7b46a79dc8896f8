#include "options.hpp"

#include <charconv>
#include <filesystem>

namespace conflux::tool {

namespace {

dims parse_dim_list(const std::string& text, const std::string& whole) {
    dims lens;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        auto comma = text.find(',', pos);
        auto end = comma == std::string::npos ? text.size() : comma;
        std::size_t v = 0;
        const char* first = text.data() + pos;
        const char* last = text.data() + end;
        auto [ptr, ec] = std::from_chars(first, last, v);
        CONFLUX_USER_CHECK(first != last && ec == std::errc() && ptr == last, "--input-dim '",
                           whole, "': '", std::string(first, last),
                           "' is not a non-negative integer (expected NAME:d0,d1,...)");
        lens.push_back(v);
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return lens;
}

} // namespace

void add_model_options(CLI::App& command, model_options& options) {
    command.add_option("MODEL", options.model, "ONNX model file (.onnx)")->required();
    command
        .add_option("--input-dim", options.input_dims,
                    "Full lens of an input with symbolic dims, NAME:d0,d1,... (repeatable)")
        ->type_name("NAME:DIMS");
    options.batch_option = command
                               .add_option("--batch", options.batch,
                                           "Value of every symbolic dim in axis 0 (default 1)")
                               ->check(CLI::PositiveNumber);
}

onnx::import_options to_import_options(const model_options& options) {
    onnx::import_options result;
    for (const auto& spec : options.input_dims) {
        // ONNX names may contain ':' (e.g. "input:0" from TensorFlow); dims never do.
        auto colon = spec.rfind(':');
        CONFLUX_USER_CHECK(colon != std::string::npos && colon != 0, "--input-dim '", spec,
                           "': expected NAME:d0,d1,...");
        std::string name = spec.substr(0, colon);
        CONFLUX_USER_CHECK(!result.input_dims.contains(name), "--input-dim: input '", name,
                           "' is given twice");
        result.input_dims[name] = parse_dim_list(spec.substr(colon + 1), spec);
    }
    if (options.batch_option != nullptr && options.batch_option->count() > 0)
        result.batch = options.batch;
    return result;
}

program load_model(const model_options& options) {
    std::error_code ec;
    CONFLUX_USER_CHECK(std::filesystem::is_regular_file(options.model, ec), "model '",
                       options.model, "' does not exist or is not a file");
    return onnx::import_model(options.model, to_import_options(options));
}

void add_target_options(CLI::App& command, target_options& options) {
    command.add_option("--target", options.target, "Where to run: ref (interpreter) or cuda")
        ->check(CLI::IsMember({"ref", "cuda"}))
        ->capture_default_str();
}

void check_target_available(const target_options& options) {
    CONFLUX_USER_CHECK(options.target == "ref", "target '", options.target,
                       "' is not available in this build");
}

} // namespace conflux::tool
