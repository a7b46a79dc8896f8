#include "conflux/util/checked_size.hpp"

namespace conflux {

namespace {
std::string lens_text(const std::vector<std::size_t>& lens) {
    std::string s = "[";
    for (std::size_t i = 0; i < lens.size(); ++i)
        s += (i ? "," : "") + std::to_string(lens[i]);
    return s + "]";
}
} // namespace

std::size_t checked_elements(const std::vector<std::size_t>& lens, const std::string& what) {
    CONFLUX_USER_CHECK(bounded_extent(lens).has_value(), what, ": shape ", lens_text(lens),
                       " has more than ", max_tensor_elements_text,
                       " elements, the most a tensor may have");
    std::size_t n = 1;
    for (auto len : lens)
        n *= len;
    return n;
}

std::size_t checked_dim(std::int64_t value, const std::string& what) {
    CONFLUX_USER_CHECK(value >= 0, what, " is negative (", value, ")");
    CONFLUX_USER_CHECK(std::size_t(value) <= max_tensor_elements, what, " is ", value,
                       ", larger than ", max_tensor_elements_text,
                       ", the most elements a tensor may have");
    return std::size_t(value);
}

} // namespace conflux
