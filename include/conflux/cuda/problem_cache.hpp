// The persistent problem cache: per tuned problem, the perf config that won its tuning.
//
// One SQLite file, shared by every Conflux process of a user: each write is one transaction that
// waits for the others (busy timeout) instead of failing, and a process killed mid-write leaves
// either the whole entry or none. Entries are only ever complete winners; nothing marks a problem
// as being tuned.
//
// The store is an optimization and hardly ever stops a compile: an SQLite file that is not a
// Conflux problem cache (corrupt, or another program's database) is moved aside (never deleted)
// and a fresh one is started, and a path that cannot be written gives a store that lives in
// memory for this process. Both say so through `warn`. What it never does is write to a file
// that may not be its own: a path that is a symlink, not a regular file, another user's file, or
// a non-empty file that is not an SQLite database is refused (a user_error naming the path),
// and is left as it is. New files are created 0600 and new parent directories 0700, as the
// entries steer which kernels run.
//
// The header is public (not under src/cuda/tuning/, where the implementation lives) because the
// command-line tool's `conflux cache` lists, exports and clears it through the library's API.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace conflux::cuda {

struct cache_entry {
    // What identifies the problem: kernel family + anchor problem + fusion signature. The
    // primary key: one winner per slot.
    std::string slot;
    // The full printable key (slot plus device and generator version), for listings.
    std::string key;
    std::string device;            // e.g. "sm_90/132"
    std::string generator_version; // e.g. "gemm-5"
    // The perf config text as stored. Never parsed here: whoever reads it checks it (it may be
    // garbage written by another version or by hand).
    std::string config;
    double time_ms = 0; // measured time of the winner, 0 when unknown

    bool operator==(const cache_entry&) const = default;
};

class problem_cache {
public:
    using warn_fn = std::function<void(const std::string&)>;

    // Opens the store at `path`, creating it (0600) and its parent directories (0700):
    //  - a symlink, anything but a regular file, another user's file, or a non-empty file that
    //    does not start with SQLite's header is a user_error naming the path; nothing is
    //    written to it;
    //  - an SQLite database that is corrupt or another program's is renamed to
    //    PATH.corrupt-<unix time> (with its journal files) and a fresh store is created at
    //    `path`;
    //  - a path that cannot be written (or a file that cannot be moved aside) gives a store in
    //    memory for this process; persistent() is false. Entries a read-only file holds are
    //    copied into it, so a read-only shared cache still answers finds.
    // Each case calls `warn` once with a message naming the path and the reason. SQLite errors
    // of any other kind are internal errors.
    static problem_cache open(const std::filesystem::path& path, const warn_fn& warn);
    // A store that lives in memory only.
    static problem_cache in_memory();

    // Movable; a moved-from store may only be assigned to or destroyed.
    problem_cache(problem_cache&&) noexcept;
    problem_cache& operator=(problem_cache&&) noexcept;
    ~problem_cache();

    std::optional<cache_entry> find(const std::string& slot) const;
    // Inserts e, or replaces the entry with its slot; one transaction.
    void put(const cache_entry& e);
    // Whether an entry was removed.
    bool erase(const std::string& slot);
    // Every entry, sorted by slot.
    std::vector<cache_entry> list() const;
    // Removes every entry; returns how many there were.
    std::size_t clear();

    // Writes {"conflux_problem_cache": 1, "entries": [...]}; a file that cannot be written is a
    // user_error naming it.
    void export_json(const std::filesystem::path& file) const;
    // Adds (or replaces, by slot) the entries of a file export_json wrote; returns how many. A
    // path that is not a regular file (of at most 256 MiB), bad JSON (numbers past a double's
    // range included), a wrong format marker, or an entry with a missing or mistyped field, a
    // field longer than 4096 characters or holding a control character, or a time_ms that is
    // not a finite non-negative number is a user_error naming the file (and the entry), and
    // then nothing is changed.
    std::size_t import_json(const std::filesystem::path& file);

    // False for in_memory() and for a store that fell back to memory.
    bool persistent() const;
    // The file the store was opened at (empty for in_memory()).
    const std::filesystem::path& path() const;

private:
    struct impl;
    explicit problem_cache(std::unique_ptr<impl> p);
    std::unique_ptr<impl> impl_;
};

// $CONFLUX_PROBLEM_CACHE when set and non-empty, else $XDG_CACHE_HOME/conflux/problems.sqlite,
// else $HOME/.cache/conflux/problems.sqlite; empty when none of those variables is set.
std::filesystem::path default_problem_cache_path();

} // namespace conflux::cuda
