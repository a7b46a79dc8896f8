// Everything the tool prints on std::cout and std::cerr passes through a filter that writes
// control characters (other than newline and tab) as \xNN. Names in a model or a cache may hold
// escape sequences; printed raw they could rewrite the terminal or forge lines of output. The
// filter catches every place a name is printed, including ones added later.
#pragma once

#include <streambuf>

namespace conflux::tool {

// Installs the filter on std::cout and std::cerr for its lifetime.
class escaping_output {
public:
    escaping_output();
    escaping_output(const escaping_output&) = delete;
    escaping_output& operator=(const escaping_output&) = delete;
    ~escaping_output();

private:
    class buffer : public std::streambuf {
    public:
        explicit buffer(std::streambuf* target) : target_(target) {}
        std::streambuf* target() const { return target_; }

    protected:
        int_type overflow(int_type ch) override;
        std::streamsize xsputn(const char* s, std::streamsize n) override;
        int sync() override;

    private:
        bool put_escaped(char c);
        std::streambuf* target_;
    };
    buffer out_, err_;
};

} // namespace conflux::tool
