#include "conflux/util/printable.hpp"

namespace conflux {

namespace {

bool is_control(unsigned char c) {
    return c < 0x20 || c == 0x7f;
}

} // namespace

std::string printable(std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (is_control(c)) {
            out += "\\x";
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        } else {
            out.push_back(ch);
        }
    }
    return out;
}

bool has_control_character(std::string_view s) {
    for (const char ch : s)
        if (is_control(static_cast<unsigned char>(ch))) return true;
    return false;
}

} // namespace conflux
