// Compiled-program files (.cfx): a program compiled once, saved, and loaded by another process
// ready to run, with no NVRTC and no tuning. The container (preamble, header, digest) is
// program_file.hpp's; this file decides what it holds:
//   header   what anyone may want to know without loading it: the Conflux version that wrote it,
//            the target ("cuda" or "ref"), the architecture and the CUDA runtime and NVRTC
//            versions it was compiled with (cuda), the model it came from, its inputs and outputs
//   "cuda"   the lowered program with every kernel's cubin, the memory plan, the launches and
//            the weights in their final dtypes and layouts (cuda::compiled_program)
//   "stats"  the compile statistics (cuda)
// A file for another architecture loads, and running it says so (the same error as a program
// compiled with --arch for another GPU).
#pragma once

#include "conflux/cuda/target.hpp"
#include "conflux/ir/program_file.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace conflux {

struct saved_program {
    nlohmann::json header;
    std::string target; // "cuda" or "ref"
    std::optional<cuda::compiled_program> cuda;
};

// Writes `compiled` to path (atomically: a failed save leaves what was there). `model` names
// where it came from, for the header.
void save_program(const std::filesystem::path& path, const cuda::compiled_program& compiled,
                  const std::string& model);

// Opens, checks and loads path. Every problem is a user_error naming the file and the reason:
// not a .cfx, another format version, truncated, corrupted (the digest), a section that is not
// what this version writes.
saved_program load_program(const std::filesystem::path& path);

} // namespace conflux
