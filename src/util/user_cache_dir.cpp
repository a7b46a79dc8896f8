#include "util/user_cache_dir.hpp"

#include <cstdlib>

namespace conflux {

std::string environment_value(const char* name) {
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string{};
}

std::filesystem::path user_cache_dir() {
    // The XDG spec says a relative XDG_CACHE_HOME is invalid and is to be ignored.
    if (const std::filesystem::path xdg = environment_value("XDG_CACHE_HOME");
        !xdg.empty() && xdg.is_absolute())
        return xdg / "conflux";
    if (const std::filesystem::path home = environment_value("HOME"); !home.empty())
        return home / ".cache" / "conflux";
    return {};
}

} // namespace conflux
