// NumPy .npy files (format 1.0-3.0, little-endian, C or Fortran order) for inputs and outputs.
// Supported dtypes: f2 f4 f8 i1 u1 i4 i8 b1. bf16 has no numpy type: it is written as f4.
#pragma once

#include "conflux/ir/argument.hpp"

#include <string>

namespace conflux {

argument read_npy(const std::string& path);
void write_npy(const std::string& path, const argument& value);

} // namespace conflux
