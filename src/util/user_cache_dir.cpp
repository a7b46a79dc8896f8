#include "util/user_cache_dir.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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

std::string create_private_directories(const std::filesystem::path& dir) {
    std::filesystem::path prefix;
    for (const auto& part : dir) {
        prefix /= part;
        if (::mkdir(prefix.c_str(), 0700) == 0) continue;
        const int error = errno;
        struct stat st {};
        // EEXIST, or EACCES on a parent that exists but is not ours to write.
        if (::stat(prefix.c_str(), &st) == 0) {
            if (S_ISDIR(st.st_mode)) continue;
            return "cannot create " + dir.string() + ": " + prefix.string() +
                   " exists and is not a directory";
        }
        return "cannot create " + prefix.string() + ": " + std::strerror(error);
    }
    return {};
}

std::string untrusted_directory_reason(int fd, const std::filesystem::path& dir) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return "cannot stat " + dir.string() + ": " + std::strerror(errno);
    if (!S_ISDIR(st.st_mode)) return dir.string() + " is not a directory";
    if (st.st_uid != ::geteuid())
        return "directory " + dir.string() + " belongs to another user (uid " +
               std::to_string(st.st_uid) + "), not to this one (uid " +
               std::to_string(::geteuid()) + ")";
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return "directory " + dir.string() + " is writable by " +
               ((st.st_mode & S_IWOTH) != 0 ? "everyone" : "its group") + " (mode " + mode +
               "); make it private (chmod go-w) to use it";
    }
    return {};
}

} // namespace conflux
