// The names generated code uses for each dtype (see src/cuda/kernels/types.cuh).
#pragma once

#include "conflux/ir/dtype.hpp"

#include <string>

namespace conflux::cuda {

// Storage type of one element: "float", "cx_f16", "cx_bf16", "double", "signed char",
// "unsigned char", "int", "long long", "bool".
std::string storage_type(dtype t);
// Arithmetic type: "float" for f32/f16/bf16, "double" for f64, "long long" otherwise.
std::string compute_type(dtype t);
// A literal of the compute type of t holding v, exact for every float (hex float syntax), e.g.
// "0x1.8p+1f"; non-finite values through __int_as_float / __longlong_as_double.
std::string compute_literal(dtype t, double v);

} // namespace conflux::cuda
