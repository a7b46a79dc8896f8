// The container of a compiled-program file (.cfx): a fixed preamble, a JSON header anyone can
// read with `head`, and named sections stored as CBOR. Which sections a file has and what they
// mean belongs to whoever saves programs (src/cuda/compile/saved_program.cpp); this file only
// makes the bytes safe to trust.
//
//   offset 0   8 bytes   magic "\x89CFX\r\n\x1a\n" (binary-unsafe transfers and text files fail it)
//          8   u32 LE    format version
//         12   u32 LE    header bytes H
//         16   u64 LE    file bytes (so a truncated file says so before its digest is checked)
//         24   H bytes   header: a JSON object, with "sections": [{"name", "offset", "bytes"}]
//                        (offsets from the end of the header, so the header needs no
//                        fixed point with its own length)
//      24+H   ...       the sections' CBOR, one after the other
//         B   ...       blobs: raw bytes (weights, kernel binaries) that the sections refer to
//                        as {"blob": index}; B is the first multiple of 64 after the sections,
//                        each blob starts at a multiple of 64, and the header's "blobs":
//                        [{"offset", "bytes"}] places them (offsets from B)
//    end-16   16 bytes  XXH3-128 of every byte before it
//
// The digest covers the whole file and is checked on every open, so a truncated file or one
// flipped byte anywhere is refused before anything is parsed. Files are mapped, not read: a
// section's bytes are parsed straight from the page cache, only the sections asked for, and a
// blob is used where it lies (a loaded weight is a view of the mapping, which it keeps alive).
#pragma once

#include "conflux/ir/serialize.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace conflux {

// The version this build writes and the only one it reads. A change to the layout above or to
// what any section holds raises it.
inline constexpr std::uint32_t program_file_format_version = 1;

// Writes the file atomically (a temporary beside it, renamed over `path` when complete), so a
// failed save leaves whatever was at `path` as it was. `header` is an object; its "sections"
// field is written here. A user_error names the path when it cannot be written.
void write_program_file(const std::filesystem::path& path, nlohmann::json header,
                        const std::vector<std::pair<std::string, nlohmann::json>>& sections,
                        const blob_list& blobs = {});

// True when the file starts with the magic (a .cfx, whatever its name).
bool is_program_file(const std::filesystem::path& path);

// An opened, checked program file. Every problem is a user_error that names the file and the
// reason: not a .cfx, written by a newer or older format, truncated, a digest mismatch
// (corrupted), a header that is not what this format says.
class program_file {
public:
    static program_file open(const std::filesystem::path& path);

    program_file(program_file&&) noexcept;
    program_file& operator=(program_file&&) noexcept;
    ~program_file();

    const std::filesystem::path& path() const;
    const nlohmann::json& header() const;
    bool has_section(const std::string& name) const;
    // The section parsed from its CBOR (a user_error when it is missing or does not parse).
    nlohmann::json section(const std::string& name) const;
    // Every blob, as views of the mapping that keep it alive (writes to them go to private
    // copies of the pages, never to the file).
    const blob_table& blobs() const { return blobs_; }

private:
    struct mapping;
    program_file();
    std::shared_ptr<mapping> map_;
    blob_table blobs_;
    std::filesystem::path path_;
    nlohmann::json header_;
    std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> sections_;
};

} // namespace conflux
