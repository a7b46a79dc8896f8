// Reading a whole file that must be a regular file of bounded size: every file Conflux reads
// (models, .npy and .pb inputs, problem cache exports, kernel cache entries) goes through here.
//
// A path can name anything: a FIFO (whose open() blocks until a writer comes, forever), a
// device (/dev/zero never ends), a directory, or a file far larger than memory. The file is
// opened with O_NONBLOCK, so opening a FIFO returns at once, and its type and size are taken
// from the open descriptor (fstat), so what is checked is what is read even if the path is
// replaced meanwhile. Reading stops past the bound even if the file grows while it is read.
#pragma once

#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace conflux {

struct file_read_options {
    // Larger files are refused.
    std::uint64_t max_size = 0;
    // Relative paths are resolved against this directory descriptor (openat).
    int dir_fd = AT_FDCWD;
    // False: a symbolic link as the last path component is refused (O_NOFOLLOW).
    bool follow_symlinks = true;
    // True: the file must belong to this process's effective user and not be writable by its
    // group or by others (what a trusted cache requires of its entries).
    bool private_file = false;
};

// The whole content, or nullopt with `why` set to the reason in a few words ("it is a FIFO
// (named pipe), not a regular file", "cannot open it (No such file or directory)", "it is
// larger than 2 GiB"). Never throws for what the path names.
std::optional<std::string> try_read_regular_file(const std::filesystem::path& path,
                                                 const file_read_options& options,
                                                 std::string& why);

// The whole content of a regular file of at most max_size bytes (symlinks followed); otherwise
// a user_error "WHAT 'PATH': REASON", e.g. ".npy file 'x.npy': it is a FIFO (named pipe), not
// a regular file".
std::string read_regular_file(const std::filesystem::path& path, std::uint64_t max_size,
                              std::string_view what);

// "it is a FIFO" etc. for a stat mode that is not a regular file (mode & S_IFMT).
std::string describe_file_type(unsigned mode);

// "2 GiB", "512 MiB" or "1000 bytes": a size as limits are worded in messages.
std::string format_byte_size(std::uint64_t bytes);

} // namespace conflux
