// Reductions over a set of axes, softmax and arg-reductions.
#pragma once

#include "conflux/ir/operation.hpp"

#include <cstdint>
#include <string_view>

namespace conflux::op {

enum class reduce_kind { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };
// Every kind, in the enum's order: each is an op of its own name.
inline constexpr reduce_kind all_reduce_kinds[] = {
    reduce_kind::sum,         reduce_kind::mean,      reduce_kind::max, reduce_kind::min,
    reduce_kind::prod,        reduce_kind::l1,        reduce_kind::l2,  reduce_kind::log_sum,
    reduce_kind::log_sum_exp, reduce_kind::sum_square};

// "sum", "mean", ..., "log_sum_exp", "sum_square"; reduce::name() is "reduce_" + this. (Not
// called to_string: that would hide conflux::to_string inside conflux::op.)
std::string_view reduce_kind_name(reduce_kind k);

// axes normalised (non-negative, sorted, unique); empty axes means all axes unless
// noop_with_empty_axes. Reduced axes are kept with len 1 when keepdims.
struct reduce {
    reduce_kind kind = reduce_kind::sum;
    std::vector<std::int64_t> axes;
    bool keepdims = true;
    bool noop_with_empty_axes = false;
    std::string name() const;
    static reduce from_attributes(reduce_kind kind, const nlohmann::json& a);
    nlohmann::json attributes() const;
    // max and min of an empty set give their storage type's lowest / highest value, so they
    // keep reading f32 copies under reduced precision; the others compute the same in f32
    // from a 16-bit input.
    op_traits traits() const {
        return {.accumulates_in_f32 = true,
                .reads_16bit_input = kind != reduce_kind::max && kind != reduce_kind::min};
    }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const reduce&) const = default;
};

// softmax / log_softmax along one axis (opset >= 13 semantics; the importer rewrites the older
// flatten-to-2-D semantics with reshapes).
struct softmax {
    std::int64_t axis = -1; // non-negative
    bool log = false;
    std::string name() const { return log ? "log_softmax" : "softmax"; }
    static softmax from_attributes(bool log, const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"axis", axis}}; }
    op_traits traits() const { return {.accumulates_in_f32 = true, .reads_16bit_input = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const softmax&) const = default;
};

// argmax / argmin along one axis, i64 result.
struct arg_reduce {
    bool max = true;
    std::int64_t axis = 0; // non-negative
    bool keepdims = true;
    bool select_last_index = false;
    std::string name() const { return max ? "argmax" : "argmin"; }
    static arg_reduce from_attributes(bool max, const nlohmann::json& a);
    nlohmann::json attributes() const;
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const arg_reduce&) const = default;
};

} // namespace conflux::op
