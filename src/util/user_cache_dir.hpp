// The per-user directory Conflux keeps its caches under (the kernel cache, the problem cache), so
// that every cache resolves the XDG rules the same way.
#pragma once

#include <filesystem>
#include <string>

namespace conflux {

// $XDG_CACHE_HOME/conflux (when it is absolute), else $HOME/.cache/conflux; empty when neither
// variable gives one.
std::filesystem::path user_cache_dir();

// The value of environment variable `name`, empty when it is not set.
std::string environment_value(const char* name);

// Creates `dir` and each of its missing parents with mode 0700, so that a cache directory
// Conflux creates is private from the start (directories that exist are left as they are).
// Empty on success, else the reason ("cannot create /a/b: Permission denied").
std::string create_private_directories(const std::filesystem::path& dir);

// Why the directory `fd` refers to (named `dir` in the message) cannot be trusted with cached
// data that Conflux would act on, or empty when it can: it must belong to this process's
// effective user and not be writable by its group or by others, as ssh and ccache require of
// theirs. Whoever else can write it could otherwise plant entries.
std::string untrusted_directory_reason(int fd, const std::filesystem::path& dir);

} // namespace conflux
