// A lowered program and its compiled kernels as a JSON value: the "cuda" section of a saved
// program (.cfx). Everything an executable needs is kept (kernels' cubins, launches, operands,
// literals, buffers, the memory plan), and the kernels' CUDA source for --dump-kernels, so a
// loaded program runs and prints as the compiled one did without NVRTC or tuning.
#pragma once

#include "conflux/ir/serialize.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"
#include "cuda/runtime/lowered_program.hpp"

#include <nlohmann/json.hpp>

#include <vector>

namespace conflux::cuda {

// Cubins and literals go to `blobs` (which then points into `program` and `binaries`).
nlohmann::json lowered_program_to_json(const lowered_program& program,
                                       const std::vector<compiled_kernel>& binaries,
                                       blob_list& blobs);

// Reading checks what the executable relies on (every index in range, operands within their
// memory, one binary per kernel) and throws user_error naming the field, since a file is input.
void lowered_program_from_json(const nlohmann::json& j, const blob_table& blobs,
                               lowered_program& program, std::vector<compiled_kernel>& binaries);

} // namespace conflux::cuda
