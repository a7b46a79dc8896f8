#include "cuda/jit/kernel_cache.hpp"

#include "conflux/util/read_file.hpp"
#include "cuda/jit/embedded_headers.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"
#include "util/user_cache_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <thread>

namespace conflux::cuda {

namespace fs = std::filesystem;

namespace {

// Bumped whenever the key text or the file layout changes, so old entries become misses.
constexpr std::string_view file_magic = "CXKC1";
constexpr std::string_view key_version = "conflux kernel cache key v1";

const std::string& headers_digest() {
    static const std::string digest = [] {
        std::string all;
        for (const auto& h : embedded_headers()) {
            const std::string_view text = h.text;
            all.append(h.include_name).push_back('\0');
            all.append(std::to_string(text.size())).push_back('\0');
            all.append(text);
        }
        return hex_64(fnv1a_64(all));
    }();
    return digest;
}

void append_u64(std::vector<char>& out, std::uint64_t v) {
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff)); // little-endian on every host
}

// Reads a little-endian u64 at pos, advancing it; false when fewer than 8 bytes remain.
bool read_u64(const std::vector<char>& in, std::size_t& pos, std::uint64_t& v) {
    if (in.size() - pos < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i)
        v |= std::uint64_t(static_cast<unsigned char>(in[pos + i])) << (8 * i);
    pos += 8;
    return true;
}

// The entry file `name` in the directory dir_fd, when it is one this user alone could have
// written. The size comes from the open file, not the path: a store may rename a new file over
// the path meanwhile.
std::optional<std::vector<char>> read_entry_file(int dir_fd, const std::string& name) {
    // Far above any cubin; a file this large is not an entry and is not worth reading.
    constexpr std::uint64_t max_entry_size = std::uint64_t(1) << 30;
    std::string why;
    const auto bytes = try_read_regular_file(name,
                                             {.max_size = max_entry_size,
                                              .dir_fd = dir_fd,
                                              .follow_symlinks = false,
                                              .private_file = true},
                                             why);
    if (!bytes) return std::nullopt;
    return std::vector<char>(bytes->begin(), bytes->end());
}

// The cubin in an entry file's bytes if they are a whole entry for exactly this key.
std::optional<std::vector<char>> parse_entry(const std::vector<char>& bytes,
                                             const std::string& key) {
    std::size_t pos = file_magic.size();
    if (bytes.size() < pos || std::string_view(bytes.data(), pos) != file_magic)
        return std::nullopt;
    std::uint64_t key_size = 0;
    if (!read_u64(bytes, pos, key_size) || key_size != key.size() ||
        bytes.size() - pos < key_size ||
        std::memcmp(bytes.data() + pos, key.data(), key.size()) != 0)
        return std::nullopt;
    pos += key.size();
    std::uint64_t cubin_size = 0, cubin_hash = 0;
    if (!read_u64(bytes, pos, cubin_size) || !read_u64(bytes, pos, cubin_hash) ||
        bytes.size() - pos != cubin_size)
        return std::nullopt;
    std::vector<char> cubin(bytes.begin() + static_cast<std::ptrdiff_t>(pos), bytes.end());
    if (fnv1a_64(std::string_view(cubin.data(), cubin.size())) != cubin_hash) return std::nullopt;
    return cubin;
}

// A name no other thread or process writing into the same directory uses at the same time.
std::string temporary_name(const std::string& stem) {
    static std::atomic<unsigned long long> counter{0};
    const auto thread = std::hash<std::thread::id>{}(std::this_thread::get_id());
    return stem + ".tmp-" + std::to_string(::getpid()) + "-" + hex_64(thread) + "-" +
           std::to_string(counter++);
}

std::string errno_text() {
    return std::strerror(errno);
}

// Writes bytes to the file `name` in directory dir_fd (shown as dir in messages) through a
// temporary file created 0600 and a rename; the error's text on failure.
std::optional<std::string> write_atomically(int dir_fd, const fs::path& dir,
                                            const std::string& name,
                                            const std::vector<char>& bytes) {
    const std::string temp = temporary_name(name);
    const auto shown = [&](const std::string& n) { return (dir / n).string(); };
    // O_EXCL: never reuse (or write through) something already at the temporary name.
    const int fd =
        ::openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot create " + shown(temp) + ": " + errno_text();
    std::size_t done = 0;
    std::optional<std::string> error;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            error = "cannot write " + shown(temp) + ": " + errno_text();
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0 && !error) error = "cannot write " + shown(temp) + ": " + errno_text();
    if (!error && ::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str()) != 0)
        error = "cannot rename " + shown(temp) + " to " + shown(name) + ": " + errno_text();
    if (error) ::unlinkat(dir_fd, temp.c_str(), 0);
    return error;
}

std::string entry_name(const std::string& key) {
    return hex_64(fnv1a_64(key)) + ".cxkc";
}

} // namespace

fs::path default_kernel_cache_dir() {
    if (const std::string dir = environment_value("CONFLUX_KERNEL_CACHE"); !dir.empty()) return dir;
    if (const fs::path base = user_cache_dir(); !base.empty()) return base / "kernels";
    return {};
}

std::string kernel_cache_key(const kernel_source& k, const std::string& requested_arch) {
    const std::string arch = target_arch(k, requested_arch);
    std::string key(key_version);
    key += "\narch ";
    key += arch;
    key += "\nnvrtc ";
    key += nvrtc_version();
    for (const auto& option : nvrtc_options(arch)) {
        key += "\noption ";
        key += option;
    }
    key += "\nheaders ";
    key += headers_digest();
    key += "\nentry ";
    key += k.entry;
    // Lengths make the layout unambiguous whatever the texts contain.
    key += "\ncode " + std::to_string(k.code.size()) + "\n";
    key += k.code;
    return key;
}

kernel_cache::kernel_cache(std::optional<fs::path> dir, warn_fn warn)
    : dir_(dir ? std::move(*dir) : default_kernel_cache_dir()), warn_(std::move(warn)) {
    if (dir_.empty()) {
        disable("no cache directory: none given, and none of CONFLUX_KERNEL_CACHE, "
                "XDG_CACHE_HOME, HOME is set");
        return;
    }
    if (const std::string error = create_private_directories(dir_); !error.empty()) {
        disable(error);
        return;
    }
    // O_NONBLOCK: the path may name a FIFO, whose open would wait for a writer.
    dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (dir_fd_ < 0) {
        disable("cannot open directory " + dir_.string() + ": " + errno_text());
        return;
    }
    if (const std::string why = untrusted_directory_reason(dir_fd_, dir_); !why.empty()) {
        disable(why);
        return;
    }
    // Permission bits alone do not say whether a write will succeed (root, read-only mounts),
    // so try one.
    const std::string probe = temporary_name(".probe");
    if (const auto error = write_atomically(dir_fd_, dir_, probe, {})) {
        disable("directory " + dir_.string() + " is not writable: " + *error);
        return;
    }
    ::unlinkat(dir_fd_, probe.c_str(), 0);
    enabled_ = true;
}

kernel_cache::~kernel_cache() {
    if (dir_fd_ >= 0) ::close(dir_fd_);
}

void kernel_cache::disable(const std::string& why) {
    enabled_ = false;
    // Concurrent stores may all fail (a full disk); one warning says it.
    if (warned_.exchange(true)) return;
    if (warn_) warn_("kernel cache disabled (compiling without it): " + why);
}

fs::path kernel_cache::entry_path(const kernel_source& k, const std::string& arch) const {
    return dir_ / entry_name(kernel_cache_key(k, arch));
}

std::optional<std::vector<char>> kernel_cache::load(const kernel_source& k,
                                                    const std::string& arch) {
    if (enabled()) {
        const std::string key = kernel_cache_key(k, arch);
        if (auto bytes = read_entry_file(dir_fd_, entry_name(key))) {
            if (auto cubin = parse_entry(*bytes, key)) {
                ++hits_;
                return cubin;
            }
        }
    }
    ++misses_;
    return std::nullopt;
}

void kernel_cache::store(const kernel_source& k, const std::string& arch,
                         const std::vector<char>& cubin) {
    if (!enabled()) return;
    const std::string key = kernel_cache_key(k, arch);
    std::vector<char> bytes;
    bytes.reserve(file_magic.size() + 24 + key.size() + cubin.size());
    bytes.insert(bytes.end(), file_magic.begin(), file_magic.end());
    append_u64(bytes, key.size());
    bytes.insert(bytes.end(), key.begin(), key.end());
    append_u64(bytes, cubin.size());
    append_u64(bytes, fnv1a_64(std::string_view(cubin.data(), cubin.size())));
    bytes.insert(bytes.end(), cubin.begin(), cubin.end());
    if (const auto error = write_atomically(dir_fd_, dir_, entry_name(key), bytes)) {
        disable(*error);
        return;
    }
    ++stores_;
}

} // namespace conflux::cuda
