// 64-bit FNV-1a: names and checksums of compiled things (kernel names, kernel cache files,
// fusion signatures). Fast and stable across runs and machines; not for anything adversarial.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace conflux {

std::uint64_t fnv1a_64(std::string_view bytes);

// 16 lowercase hex digits.
std::string hex_64(std::uint64_t v);

} // namespace conflux
