// A disk cache of compiled cubins, so that compiling the same model a second time skips NVRTC.
//
// An entry's key is everything that decides the cubin: the kernel's entry name and source text,
// the target arch, NVRTC's options and version, and the embedded device headers. One file per
// entry, named by the key's 64-bit hash; the file repeats the full key, so a hash collision, a
// foreign or truncated or corrupted file is a miss (and is overwritten by the next store), never
// a wrong cubin or a crash. Writes go to a temporary file renamed into place, so readers, other
// threads and other processes see either no entry or a whole one.
//
// Trust: a cached cubin runs on the GPU in every process that loads it, and its hash proves
// nothing (anyone can recompute it). So the cache is used only when no one but this user can
// write it: the directory (and the parents Conflux creates) is created 0700, and before use it
// must belong to this process's effective user and not be writable by its group or by others,
// as ssh and ccache require of their directories. Entries are opened relative to that checked
// directory, without following symlinks and without blocking (a FIFO is a miss), and must be
// regular files owned by the user and writable by no one else; entries are written 0600.
//
// The cache is an optimization only: a directory that cannot be created, written or trusted
// disables it with one warning, and compilation goes on without it (kernels are compiled fresh
// and nothing is stored).
#pragma once

#include "conflux/util/fnv1a.hpp"
#include "cuda/jit/kernel_source.hpp"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace conflux::cuda {

// $CONFLUX_KERNEL_CACHE, else $XDG_CACHE_HOME/conflux/kernels, else $HOME/.cache/conflux/kernels;
// empty when none of those variables is set.
std::filesystem::path default_kernel_cache_dir();

// The text an entry is keyed by (the device headers enter it as a digest, as they would
// otherwise be repeated in every file).
std::string kernel_cache_key(const kernel_source& k, const std::string& arch);

class kernel_cache {
public:
    using warn_fn = std::function<void(const std::string&)>;

    // dir: where entries live; default_kernel_cache_dir() when not given. warn receives the one
    // message saying why the cache is disabled; it may be called from compile_kernels' worker
    // threads, one call at most per cache. Without it the cache is disabled silently.
    explicit kernel_cache(std::optional<std::filesystem::path> dir = std::nullopt,
                          warn_fn warn = {});
    kernel_cache(const kernel_cache&) = delete;
    kernel_cache& operator=(const kernel_cache&) = delete;
    ~kernel_cache();

    // The cubin stored for k and arch, or nothing (a miss). Thread-safe; never throws for what
    // the file holds.
    std::optional<std::vector<char>> load(const kernel_source& k, const std::string& arch);
    // Thread-safe. A failed write disables the cache with its warning, and does not throw.
    void store(const kernel_source& k, const std::string& arch, const std::vector<char>& cubin);

    bool enabled() const { return enabled_.load(); }
    const std::filesystem::path& dir() const { return dir_; }
    // The file that holds (or would hold) the entry for k and arch.
    std::filesystem::path entry_path(const kernel_source& k, const std::string& arch) const;

    std::size_t hits() const { return hits_.load(); }
    std::size_t misses() const { return misses_.load(); }
    std::size_t stores() const { return stores_.load(); }

private:
    void disable(const std::string& why);

    std::filesystem::path dir_;
    // The directory as checked; entries are opened relative to it, so a path renamed or
    // replaced after the check does not redirect them.
    int dir_fd_ = -1;
    warn_fn warn_;
    std::atomic<bool> enabled_{false};
    std::atomic<bool> warned_{false};
    std::atomic<std::size_t> hits_{0}, misses_{0}, stores_{0};
};

} // namespace conflux::cuda
