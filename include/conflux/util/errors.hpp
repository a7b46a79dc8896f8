// Two error channels, as the design asks: a user_error means the input (model, options, cache
// file) is wrong and the message says which part and why; an internal_error means Conflux has a
// bug. Tools map them to different exit codes.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace conflux {

struct user_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct internal_error : std::logic_error {
    using std::logic_error::logic_error;
};

namespace detail {
template <class... Ts> std::string concat(const Ts&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    return os.str();
}
} // namespace detail

template <class... Ts> [[noreturn]] void throw_user_error(const Ts&... parts) {
    throw user_error(detail::concat(parts...));
}

template <class... Ts> [[noreturn]] void throw_internal_error(const Ts&... parts) {
    throw internal_error(detail::concat(parts...));
}

} // namespace conflux

// Checks a user-facing precondition; the message parts are streamed together.
#define CONFLUX_USER_CHECK(cond, ...)                                                              \
    do {                                                                                           \
        if (!(cond)) ::conflux::throw_user_error(__VA_ARGS__);                                     \
    } while (false)

// Checks an invariant of the compiler itself; failure is a Conflux bug.
#define CONFLUX_ASSERT(cond, ...)                                                                  \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ::conflux::throw_internal_error(__FILE__, ":", __LINE__, ": ", #cond, ": ",            \
                                            ##__VA_ARGS__);                                        \
    } while (false)
