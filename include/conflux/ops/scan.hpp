// Cumulative sums along one axis (ONNX CumSum).
#pragma once

#include "conflux/ir/operation.hpp"

#include <cstdint>

namespace conflux::op {

// y[..., j, ...] = sum of x[..., i, ...] over i <= j (i < j when exclusive; i >= j and i > j
// when reverse). Floating types accumulate in the compute type (f32 for f16/bf16) and round each
// result once; integers wrap like their storage type. bool has no sum and is refused.
struct cumsum {
    std::int64_t axis = 0; // non-negative
    bool exclusive = false;
    bool reverse = false;
    std::string name() const { return "cumsum"; }
    static cumsum from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const {
        return {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}};
    }
    op_traits traits() const { return {.accumulates_in_f32 = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const cumsum&) const = default;
};

} // namespace conflux::op
