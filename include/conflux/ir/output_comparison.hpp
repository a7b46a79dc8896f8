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
    // How far the precision that ran moves this output on the reference target by itself
    // (0: not measured); the tolerance is at least noise_margin times it.
    double noise = 0;
    bool passed = false;
};

// A correct result is about `noise` away from the exact one (rounding errors of the same size,
// drawn differently); a wrong one is further. Twice leaves room for the draw.
inline constexpr double noise_margin = 2.0;

// The relative-RMS tolerance per dtype: f32 1e-3, f16 1e-2, bf16 2e-2, f64 1e-9; integers and
// bools must match exactly.
double verify_tolerance(dtype t);

// The precision a target computed floating-point values in, when it is narrower than the
// values' dtype; its tolerance applies to them.
struct computed_precision {
    std::string name; // "f16", "bf16", "tf32"
    double tolerance = 0;
};
// A model run in f16 or bf16 (--fp16, --bf16) that keeps f32 inputs and outputs.
computed_precision dtype_precision(dtype computed_in);
// f32 convolutions and matrix products on TF32 tensor cores: inputs rounded to a 10-bit
// mantissa, as f16's, with f32 accumulation, so f16's tolerance fits.
computed_precision tf32_precision();

// Compares element by element in logical order (layouts may differ). NaN/Inf in `got` never
// pass unless the reference has the same non-finite value at that element.
// `computed_in`: the precision the values were computed in, when narrower than their dtype.
// `noise`: the reference's own spread under that precision (see output_comparison::noise).
output_comparison compare_outputs(const argument& got, const argument& want,
                                  const std::optional<computed_precision>& computed_in = {},
                                  double noise = 0);

} // namespace conflux
