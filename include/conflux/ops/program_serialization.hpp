// A program as one JSON value, the groundwork of compiled-program files (.cfx, issue 18), which
// store it as CBOR so that literals stay binary. It lives with the ops because reading it builds
// ops by name (op_registry.hpp), which the IR cannot see.
//
//   {"version": 1,
//    "modules": [{"name": "pointwise0", "instructions": [...]}, ..., {"name": "main", ...}]}
//
// Every module of the program, each after the modules its instructions use. An instruction is
//   {"op": "@param", "name": "x", "shape": <shape_to_json>}
//   {"op": "@literal", "value": <argument_to_json>}
//   {"op": "convolution", "attributes": {...}, "inputs": [0, 1], "modules": ["fused0"]}
//   {"op": "@return", "inputs": [7], "names": ["y"]}
// with "modules" only when it has any and "names" only when the return has them. Inputs are the
// positions of earlier instructions of the same module (the numbers the printer shows as @n).
#pragma once

#include "conflux/ir/program.hpp"
#include "conflux/ir/serialize.hpp"

#include <nlohmann/json.hpp>

namespace conflux {

// Literals' bytes go to `blobs` when given (a .cfx's blob area), else inline as JSON binary.
nlohmann::json program_to_json(const program& p, blob_list* blobs = nullptr);

// The program `j` describes, rebuilt through the module API (so every shape is computed again
// and checked) and validated. Anything wrong with `j` is a user_error naming where it is:
// "module main, instruction 12 (convolution): attributes.stride: ...".
// `blobs`: where literals stored as blob references are (required when there are any).
program program_from_json(const nlohmann::json& j, const blob_table* blobs = nullptr);

} // namespace conflux
