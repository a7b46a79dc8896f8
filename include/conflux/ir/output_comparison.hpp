// How a target's output is judged against the reference target's (conflux verify, the GPU tests).
#pragma once

#include "conflux/ir/argument.hpp"

#include <optional>
#include <string>

namespace conflux {

struct output_comparison {
    double relative_rms = 0; // ||got - want|| / ||want|| (absolute RMS when want is all zero)
    double max_abs_diff = 0;
    std::size_t mismatches = 0; // integers and bools: elements that differ
    std::size_t non_finite = 0; // NaN or Inf in `got` where `want` is finite
    double tolerance = 0;
    bool passed = false;
};

// The relative-RMS tolerance per dtype: f32 1e-3 (TF32 tensor cores by default), f16 1e-2,
// bf16 2e-2, f64 1e-9; integers and bools must match exactly.
double verify_tolerance(dtype t);

// Compares element by element in logical order (layouts may differ). NaN/Inf in `got` never
// pass unless the reference has the same non-finite value at that element.
// `computed_in`: the dtype the values were computed in when it is narrower than the outputs'
// (a model run with --fp16 keeps f32 outputs); its tolerance applies.
output_comparison compare_outputs(const argument& got, const argument& want,
                                  std::optional<dtype> computed_in = std::nullopt);

} // namespace conflux
