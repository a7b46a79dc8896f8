// Compiled-program files (.cfx): a program compiled once, saved, and loaded by another process
// ready to run, with no NVRTC and no tuning. The container (preamble, header, digest) is
// program_file.hpp's; this file decides what it holds:
//   header   what anyone may want to know without loading it: the Conflux version that wrote it,
//            the target ("cuda" or "ref"), the architecture and the CUDA runtime and NVRTC
//            versions it was compiled with (cuda), the model it came from, its inputs and outputs
//   "cuda"   the lowered program with every kernel's cubin, the memory plan, the launches and
//            the weights in their final dtypes and layouts (cuda::compiled_program)
//   "stats"  the compile statistics (cuda)
//   "program" the IR program the reference target runs (target "ref"), or for a cuda program
//            saved with one, the model as imported: what `conflux verify FILE.cfx` compares
//            the cuda target with
// A file for another architecture loads, and running it says so (the same error as a program
// compiled with --arch for another GPU).
#pragma once

#include "conflux/cuda/target.hpp"
#include "conflux/ir/program_file.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace conflux {

struct saved_program {
    nlohmann::json header;
    std::string target; // "cuda" or "ref"
    std::optional<cuda::compiled_program> cuda;
    // Target "ref": the program it runs. Target "cuda": the model as imported, when it was saved
    // with one and load_program was asked for it.
    std::optional<program> reference;
    // With the model loaded as asked: a fresh copy of it on each call, read from the file opened
    // once (verify evaluates the model more than once, precision models of it included).
    std::function<program()> read_reference;
    // What the cuda program was compiled in: f16/bf16 (--fp16/--bf16), else none.
    std::optional<dtype> precision;
};

// Writes `compiled` to path (atomically: a failed save leaves what was there). `model` names
// where it came from, for the header; `precision` is what it was compiled in; `reference`, when
// given, is stored too (the model as imported, for verify).
void save_program(const std::filesystem::path& path, const cuda::compiled_program& compiled,
                  const std::string& model, std::optional<dtype> precision = {},
                  const program* reference = nullptr);
// A program for the reference target.
void save_program(const std::filesystem::path& path, const program& p, const std::string& model);

// Opens, checks and loads path; the reference section of a cuda program only when
// `with_reference` (and a user_error when asked for and absent). Every problem is a user_error
// naming the file and the reason: not a .cfx, another format version, truncated, corrupted (the
// digest), a section that is not what this version writes.
saved_program load_program(const std::filesystem::path& path, bool with_reference = false);

} // namespace conflux
