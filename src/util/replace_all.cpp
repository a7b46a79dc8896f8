#include "conflux/util/replace_all.hpp"

#include "conflux/util/errors.hpp"

namespace conflux {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    CONFLUX_ASSERT(!from.empty(), "replace_all: nothing to replace");
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
}

} // namespace conflux
