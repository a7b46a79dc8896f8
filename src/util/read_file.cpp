#include "conflux/util/read_file.hpp"

#include "conflux/util/errors.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace conflux {

namespace {

// Closes the descriptor on every path out.
struct fd_guard {
    int fd = -1;
    fd_guard(const fd_guard&) = delete;
    fd_guard& operator=(const fd_guard&) = delete;
    explicit fd_guard(int f) : fd(f) {}
    ~fd_guard() {
        if (fd >= 0) ::close(fd);
    }
};

std::string open_failure(int error, bool follow_symlinks) {
    // O_NOFOLLOW reports a symlink as ELOOP.
    if (error == ELOOP && !follow_symlinks) return "it is a symbolic link";
    // A socket cannot be opened at all.
    if (error == ENXIO) return "it is not a regular file (a socket or a device without a driver)";
    return std::string("cannot open it (") + std::strerror(error) + ")";
}

// Checks what the descriptor names; an empty string when it may be read.
std::string check_opened(int fd, const file_read_options& options, struct stat& st) {
    if (::fstat(fd, &st) != 0) return std::string("cannot stat it (") + std::strerror(errno) + ")";
    if (!S_ISREG(st.st_mode)) return describe_file_type(st.st_mode) + ", not a regular file";
    if (options.private_file) {
        if (st.st_uid != ::geteuid())
            return "it is owned by another user (uid " + std::to_string(st.st_uid) + ")";
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return "others can write it";
    }
    if (st.st_size < 0 || std::uint64_t(st.st_size) > options.max_size)
        return "it is larger than " + format_byte_size(options.max_size);
    return {};
}

} // namespace

std::string describe_file_type(unsigned mode) {
    switch (mode & S_IFMT) {
    case S_IFDIR:
        return "it is a directory";
    case S_IFIFO:
        return "it is a FIFO (named pipe)";
    case S_IFCHR:
        return "it is a character device";
    case S_IFBLK:
        return "it is a block device";
    case S_IFSOCK:
        return "it is a socket";
    case S_IFLNK:
        return "it is a symbolic link";
    case S_IFREG:
        return "it is a regular file";
    default:
        return "it is of an unknown file type";
    }
}

std::string format_byte_size(std::uint64_t bytes) {
    constexpr std::uint64_t kib = 1024, mib = kib * 1024, gib = mib * 1024;
    if (bytes >= gib && bytes % gib == 0) return std::to_string(bytes / gib) + " GiB";
    if (bytes >= mib && bytes % mib == 0) return std::to_string(bytes / mib) + " MiB";
    if (bytes >= kib && bytes % kib == 0) return std::to_string(bytes / kib) + " KiB";
    return std::to_string(bytes) + " bytes";
}

std::optional<std::string> try_read_regular_file(const std::filesystem::path& path,
                                                 const file_read_options& options,
                                                 std::string& why) {
    // A device or FIFO is refused before it is opened when the path says so already: opening
    // some devices has effects of its own. fstat below is what decides, race-free.
    struct stat st {};
    const int stat_rc = options.follow_symlinks
                            ? ::fstatat(options.dir_fd, path.c_str(), &st, 0)
                            : ::fstatat(options.dir_fd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW);
    if (stat_rc == 0 && !S_ISREG(st.st_mode)) {
        why = describe_file_type(st.st_mode) + ", not a regular file";
        return std::nullopt;
    }
    int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    if (!options.follow_symlinks) flags |= O_NOFOLLOW;
    const fd_guard file(::openat(options.dir_fd, path.c_str(), flags));
    if (file.fd < 0) {
        why = open_failure(errno, options.follow_symlinks);
        return std::nullopt;
    }
    if (why = check_opened(file.fd, options, st); !why.empty()) return std::nullopt;

    std::string bytes;
    bytes.resize(static_cast<std::size_t>(st.st_size));
    std::size_t done = 0;
    while (true) {
        // One byte of room past the bound tells a file that grew beyond it from one that ends.
        if (done == bytes.size()) {
            if (bytes.size() > options.max_size) {
                why = "it is larger than " + format_byte_size(options.max_size);
                return std::nullopt;
            }
            bytes.resize(std::min<std::uint64_t>(options.max_size + 1,
                                                 std::max<std::uint64_t>(2 * bytes.size(), 4096)));
        }
        const ssize_t n = ::read(file.fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            why = std::string("cannot read it (") + std::strerror(errno) + ")";
            return std::nullopt;
        }
        if (n == 0) break;
        done += static_cast<std::size_t>(n);
    }
    if (done > options.max_size) {
        why = "it is larger than " + format_byte_size(options.max_size);
        return std::nullopt;
    }
    bytes.resize(done);
    return bytes;
}

std::string read_regular_file(const std::filesystem::path& path, std::uint64_t max_size,
                              std::string_view what) {
    std::string why;
    auto bytes = try_read_regular_file(path, {.max_size = max_size}, why);
    if (!bytes) throw_user_error(what, " '", path.string(), "': ", why);
    return std::move(*bytes);
}

} // namespace conflux
