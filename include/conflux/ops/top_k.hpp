// The k largest or smallest elements along one axis and their indices (ONNX TopK).
#pragma once

#include "conflux/ir/operation.hpp"

#include <cstdint>

namespace conflux::op {

// The result is a tuple (values of x's dtype, i64 indices), both of x's lens with lens[axis] = k,
// read with get_tuple_elem. Elements are ranked by value, NaN above every number (numpy's sort
// order), equal values by the smaller index; the results are always in rank order, which ONNX
// also allows for sorted = 0.
struct top_k {
    std::int64_t axis = 0; // non-negative
    std::size_t k = 0;     // at most lens[axis]
    bool largest = true;
    std::string name() const { return "top_k"; }
    static top_k from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"axis", axis}, {"k", k}, {"largest", largest}}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const top_k&) const = default;
};

} // namespace conflux::op
