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

} // namespace conflux
