// Shared by the libFuzzer targets of tests/fuzz: what counts as a finding, and scratch files for
// the readers that take a path.
//
// Bad input must end in a user_error (the CLI's exit 2). Anything else that escapes is a
// finding: an internal_error or any other exception is left uncaught so that std::terminate
// aborts with its message, and libFuzzer saves the input as a crash. Sanitizer reports, timeouts
// and allocations past -malloc_limit_mb are findings too (libFuzzer's own checks).
#pragma once

#include "conflux/util/errors.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace conflux::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// Reports a broken property of an input that parsed (a round trip that changed the value) and
// aborts, so that libFuzzer keeps the input.
[[noreturn]] inline void finding(const std::string& what) {
    std::fprintf(stderr, "fuzz finding: %s\n", what.c_str());
    std::abort();
}

// Runs f and swallows the user_error that bad input may end in; returns whether f completed.
template <class F> bool user_error_is_fine(F&& f) {
    try {
        f();
        return true;
    } catch (const user_error&) {
        return false;
    }
}

// A private directory of this process for files the code under test reads or writes by path;
// removed at exit. One per process: each execution overwrites the same few files.
class scratch_dir {
public:
    scratch_dir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "conflux-fuzz-XXXXXX");
        if (::mkdtemp(pattern.data()) == nullptr) {
            std::perror("mkdtemp");
            std::abort();
        }
        path_ = pattern;
    }
    ~scratch_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    scratch_dir(const scratch_dir&) = delete;
    scratch_dir& operator=(const scratch_dir&) = delete;

    // Writes bytes to the file `name` in the directory and returns its path.
    std::string write(const std::string& name, std::string_view bytes) const {
        const std::string file = (path_ / name).string();
        std::ofstream out(file, std::ios::binary | std::ios::trunc);
        out.write(bytes.data(), std::streamsize(bytes.size()));
        out.close();
        if (!out) finding("cannot write the scratch file " + file);
        return file;
    }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

inline const scratch_dir& scratch() {
    static const scratch_dir dir;
    return dir;
}

} // namespace conflux::fuzz
