// Comparing a computed tensor with an expected one, with per-dtype tolerances. Shared by the
// conformance runner and the command-line checkers of the model tests.
#pragma once

#include "conflux/ir/argument.hpp"

#include <optional>
#include <string>

namespace conflux::conformance {

// |actual - expected| <= atol + rtol * |expected|.
struct tolerance {
    double atol = 0;
    double rtol = 0;
};

// f32 like ONNX's backend tests (rtol 1e-3) with a pragmatic atol, since the reference target's
// summation order differs from numpy's; f16/bf16 a few units in the last place; f64 tight;
// integers and bool exact.
tolerance default_tolerance(dtype t);

// nullopt when `actual` matches `expected`: same dtype, same lens (strides may differ), every
// value within tolerance, NaN exactly where expected has NaN, infinities equal. Otherwise a
// one-line reason naming the worst element.
std::optional<std::string> compare(const argument& expected, const argument& actual);
std::optional<std::string> compare(const argument& expected, const argument& actual, tolerance tol);

} // namespace conflux::conformance
