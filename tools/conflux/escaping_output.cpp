#include "escaping_output.hpp"

#include <iostream>

namespace conflux::tool {

namespace {

bool needs_escape(char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
}

} // namespace

bool escaping_output::buffer::put_escaped(char ch) {
    static constexpr char hex[] = "0123456789abcdef";
    const auto c = static_cast<unsigned char>(ch);
    const char text[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
    return target_->sputn(text, 4) == 4;
}

escaping_output::buffer::int_type escaping_output::buffer::overflow(int_type ch) {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    const char c = traits_type::to_char_type(ch);
    if (needs_escape(c)) return put_escaped(c) ? ch : traits_type::eof();
    return traits_type::eq_int_type(target_->sputc(c), traits_type::eof()) ? traits_type::eof()
                                                                           : ch;
}

std::streamsize escaping_output::buffer::xsputn(const char* s, std::streamsize n) {
    // Runs of ordinary characters go through in one call.
    std::streamsize start = 0;
    for (std::streamsize i = 0; i < n; ++i) {
        if (!needs_escape(s[i])) continue;
        if (target_->sputn(s + start, i - start) != i - start || !put_escaped(s[i])) return start;
        start = i + 1;
    }
    if (target_->sputn(s + start, n - start) != n - start) return start;
    return n;
}

int escaping_output::buffer::sync() {
    return target_->pubsync();
}

escaping_output::escaping_output() : out_(std::cout.rdbuf()), err_(std::cerr.rdbuf()) {
    std::cout.rdbuf(&out_);
    std::cerr.rdbuf(&err_);
}

escaping_output::~escaping_output() {
    std::cout.flush();
    std::cerr.flush();
    std::cout.rdbuf(out_.target());
    std::cerr.rdbuf(err_.target());
}

} // namespace conflux::tool
