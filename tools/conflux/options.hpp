// Options that several commands share, and their translation into the library's option structs.
#pragma once

#include "conflux/onnx/import.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace conflux::tool {

struct model_options {
    std::string model;
    std::vector<std::string> input_dims; // NAME:d0,d1,...
    std::size_t batch = 1;
    CLI::Option* batch_option = nullptr;
};

// MODEL (positional), --input-dim, --batch.
void add_model_options(CLI::App& command, model_options& options);

// Parses --input-dim and --batch; a malformed value is a user_error quoting it.
onnx::import_options to_import_options(const model_options& options);

// Imports the model, checking first that the file exists so the message is about the path.
program load_model(const model_options& options);

struct target_options {
    std::string target = "ref";
};

// --target ref|cuda.
void add_target_options(CLI::App& command, target_options& options);

// Throws a user_error when the chosen target is not part of this build.
void check_target_available(const target_options& options);

} // namespace conflux::tool
