// Random values for a shape, for inputs the user did not give (conflux run/verify) and for timing
// and checking tuning candidates.
#pragma once

#include "conflux/ir/argument.hpp"

#include <random>

namespace conflux {

// Floating types: uniform in [-1, 1); integers 0..3 (small enough to index most axes); bools
// fair coin flips. Any strides: every element
// of the shape's element space gets a value.
argument random_argument(const shape& s, std::mt19937_64& rng);

} // namespace conflux
