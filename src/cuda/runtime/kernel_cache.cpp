#include "cuda/runtime/kernel_cache.hpp"

#include "cuda/runtime/embedded_headers.hpp"
#include "cuda/runtime/nvrtc_compiler.hpp"
#include "util/user_cache_dir.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
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

std::optional<std::vector<char>> read_file(const fs::path& path) {
    // The size comes from the open file, not the path: a store may rename a new file over the
    // path meanwhile.
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return std::nullopt;
    const std::streamoff size = in.tellg();
    // Far above any cubin; a file this large is not an entry and is not worth reading.
    constexpr std::streamoff max_entry_size = std::streamoff(1) << 30;
    if (size < 0 || size > max_entry_size || !in.seekg(0)) return std::nullopt;
    std::vector<char> bytes(static_cast<std::size_t>(size));
    if (!in.read(bytes.data(), size)) return std::nullopt;
    return bytes;
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
fs::path temporary_name(const fs::path& dir, const std::string& stem) {
    static std::atomic<unsigned long long> counter{0};
    const auto thread = std::hash<std::thread::id>{}(std::this_thread::get_id());
    return dir / (stem + ".tmp-" + std::to_string(::getpid()) + "-" + hex_64(thread) + "-" +
                  std::to_string(counter++));
}

// Writes bytes to path through a temporary file and a rename; the error's text on failure.
std::optional<std::string> write_atomically(const fs::path& path, const std::vector<char>& bytes) {
    const fs::path temp = temporary_name(path.parent_path(), path.filename().string());
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out)
            return "cannot create " + temp.string() + ": " +
                   std::error_code(errno, std::generic_category()).message();
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        out.close();
        if (!out) {
            std::error_code ignored;
            fs::remove(temp, ignored);
            return "cannot write " + temp.string();
        }
    }
    std::error_code ec;
    fs::rename(temp, path, ec);
    if (ec) {
        std::error_code ignored;
        fs::remove(temp, ignored);
        return "cannot rename " + temp.string() + " to " + path.string() + ": " + ec.message();
    }
    return std::nullopt;
}

} // namespace

fs::path default_kernel_cache_dir() {
    if (const std::string dir = environment_value("CONFLUX_KERNEL_CACHE"); !dir.empty()) return dir;
    if (const fs::path base = user_cache_dir(); !base.empty()) return base / "kernels";
    return {};
}

std::string kernel_cache_key(const kernel_source& k, const std::string& arch) {
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
    std::error_code ec;
    fs::create_directories(dir_, ec);
    if (ec || !fs::is_directory(dir_, ec)) {
        disable("cannot create directory " + dir_.string() + ": " +
                (ec ? ec.message() : std::string("it is not a directory")));
        return;
    }
    // Permission bits alone do not say whether a write will succeed (root, read-only mounts),
    // so try one.
    const fs::path probe = temporary_name(dir_, ".probe");
    if (const auto error = write_atomically(probe, {})) {
        disable("directory " + dir_.string() + " is not writable: " + *error);
        return;
    }
    fs::remove(probe, ec);
    enabled_ = true;
}

void kernel_cache::disable(const std::string& why) {
    enabled_ = false;
    // Concurrent stores may all fail (a full disk); one warning says it.
    if (warned_.exchange(true)) return;
    if (warn_) warn_("kernel cache disabled (compiling without it): " + why);
}

fs::path kernel_cache::entry_path(const kernel_source& k, const std::string& arch) const {
    return dir_ / (hex_64(fnv1a_64(kernel_cache_key(k, arch))) + ".cxkc");
}

std::optional<std::vector<char>> kernel_cache::load(const kernel_source& k,
                                                    const std::string& arch) {
    if (enabled()) {
        const std::string key = kernel_cache_key(k, arch);
        const fs::path path = dir_ / (hex_64(fnv1a_64(key)) + ".cxkc");
        if (auto bytes = read_file(path)) {
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
    const fs::path path = dir_ / (hex_64(fnv1a_64(key)) + ".cxkc");
    if (const auto error = write_atomically(path, bytes)) {
        disable(*error);
        return;
    }
    ++stores_;
}

} // namespace conflux::cuda
