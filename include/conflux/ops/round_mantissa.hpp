// Rounds f32 values to a shorter mantissa, as a narrower floating format stores them. Only the
// reference target evaluates it: `conflux verify` inserts it (passes/precision_emulation.hpp) to
// see how far a model's outputs move when its operands are rounded as tensor cores round them.
#pragma once

#include "conflux/ir/operation.hpp"

#include <cstddef>

namespace conflux::op {

// Each f32 element rounded to `bits` explicit mantissa bits, to nearest with ties away from
// zero (what cvt.rna.tf32.f32 does for TF32's 10 bits); NaN and Inf pass unchanged.
struct round_mantissa {
    std::size_t bits = 10; // 0 to 23
    std::string name() const { return "round_mantissa"; }
    static round_mantissa from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"bits", bits}}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const round_mantissa&) const = default;
};

// One value, as round_mantissa rounds it.
float round_to_mantissa(float x, std::size_t bits);

} // namespace conflux::op
