// ONNX import: a ModelProto (opsets 7-21) becomes a program whose main module takes the graph's
// non-initializer inputs as parameters and returns the graph outputs under their ONNX names.
// Shape arithmetic that depends only on constants is folded here (Shape, ConstantOfShape,
// Range, ...), so the imported program holds only computation on real data.
// Every problem with the file or model is a user_error whose one-line message names the node
// (its name, op type and the opset), the input, or the file, and the reason.
#pragma once

#include "conflux/ir/program.hpp"

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace conflux::onnx {

struct import_options {
    // --input-dim NAME:d0,d1,...: the full lens of an input with symbolic dims.
    std::map<std::string, dims> input_dims;
    // --batch N: the value of every symbolic dim in axis 0 (default 1).
    std::optional<std::size_t> batch;
    // Inputs frozen to known values: they become literals, so operands that must be constant
    // (a Reshape's shape, Slice's starts, ...) may come from graph inputs.
    std::map<std::string, argument> constant_inputs;
    // Where tensors stored outside the model file (external data) are read from: their
    // locations are relative to it. import_model: the model's directory unless given;
    // import_model_bytes: none unless given (an external tensor is then an error).
    std::optional<std::filesystem::path> external_data_dir;
};

program import_model(const std::string& path, const import_options& options = {});
// `what` names the source in error messages.
program import_model_bytes(std::string_view bytes, const import_options& options = {},
                           const std::string& what = "<memory>");

// A serialized ONNX TensorProto (.pb), as in the ONNX backend test data.
argument read_tensor_file(const std::string& path);
// Also returns the tensor's name (may be empty).
argument read_tensor_file(const std::string& path, std::string* name);

} // namespace conflux::onnx
