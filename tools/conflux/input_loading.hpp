// Binding the model's parameters for `conflux run`: values from files named on the command line
// (.npy or ONNX TensorProto .pb), seeded random values for the rest.
#pragma once

#include "conflux/ref/evaluate.hpp"

#include "conflux/ir/random_argument.hpp"
#include <cstdint>
#include <iosfwd>

#include <random>
#include <string>
#include <vector>

namespace conflux::tool {

struct input_file {
    std::string name;
    std::string path;
};

// "NAME=FILE" each; a malformed one is a user_error quoting it.
std::vector<input_file> parse_input_files(const std::vector<std::string>& specs);

// Reads a tensor by the file's extension: .npy, or .pb (a serialized ONNX TensorProto).
argument load_tensor(const std::string& path);

// Every parameter of `m` bound: from `files` where given, else random (seeded by `seed`, said on
// `notes`). Names not among the parameters, duplicates and dtype/lens mismatches are
// user_errors naming the input.
ref::parameter_map bind_inputs(const module& m, const std::vector<input_file>& files,
                               std::uint64_t seed, std::ostream& notes);

// The same for parameters given by name and shape (a loaded .cfx has no module): in the same
// order, the same random values as the module it was compiled from.
ref::parameter_map bind_inputs(const std::vector<std::string>& names,
                               const std::vector<shape>& shapes,
                               const std::vector<input_file>& files, std::uint64_t seed,
                               std::ostream& notes);

} // namespace conflux::tool
