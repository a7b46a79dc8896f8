// Replacing every occurrence of a string: the store formats of the gemm generator and the kernel
// name placeholder of the lowering are filled in with it.
#pragma once

#include <string>

namespace conflux {

// `s` with every occurrence of `from` replaced by `to`, found left to right; the inserted text is
// not searched again, so `to` may contain `from`. `from` must not be empty (internal error).
std::string replace_all(std::string s, const std::string& from, const std::string& to);

} // namespace conflux
