// Ops that move data without arithmetic and cannot be views: concat, pad, the gathers, trilu.
#pragma once

#include "conflux/ir/operation.hpp"

#include <cstdint>
#include <string_view>

namespace conflux::op {

struct concat {
    std::int64_t axis = 0; // non-negative
    std::string name() const { return "concat"; }
    static concat from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"axis", axis}}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const concat&) const = default;
};

enum class pad_mode { constant, reflect, edge };
inline constexpr pad_mode all_pad_modes[] = {pad_mode::constant, pad_mode::reflect, pad_mode::edge};

// "constant", "reflect", "edge" (the ONNX spellings).
std::string_view pad_mode_name(pad_mode m);

// pads: 2*rank values, all begins then all ends (ONNX order), non-negative. reflect mirrors
// without repeating the border element and, like numpy, keeps reflecting when a pad is longer
// than the axis; reflect and edge need a non-empty axis wherever that axis is padded.
struct pad {
    std::vector<std::int64_t> pads;
    float value = 0;
    pad_mode mode = pad_mode::constant;
    std::string name() const { return "pad"; }
    static pad from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const;
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const pad&) const = default;
};

// ONNX Gather: out = data indexed along `axis` by an integer indices tensor (negative indices
// count from the end; out-of-range indices are a user error at evaluation).
struct gather {
    std::int64_t axis = 0; // non-negative
    std::string name() const { return "gather"; }
    static gather from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"axis", axis}}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const gather&) const = default;
};

// ONNX GatherElements.
struct gather_elements {
    std::int64_t axis = 0; // non-negative
    std::string name() const { return "gather_elements"; }
    static gather_elements from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"axis", axis}}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const gather_elements&) const = default;
};

// ONNX Trilu on the last two axes (any batch axes before them): element (i, j) is kept where
// j - i >= k (upper) or j - i <= k (lower), and is zero elsewhere. k may be any value: beyond
// the matrix it keeps everything or nothing.
struct trilu {
    bool upper = true;
    std::int64_t k = 0;
    std::string name() const { return "trilu"; }
    static trilu from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"upper", upper}, {"k", k}}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    // Whether element (row, col) keeps its value.
    bool keeps(std::size_t row, std::size_t col) const;
    bool operator==(const trilu&) const = default;
};

// ONNX GatherND: each row of the indices (its last axis, of length k) picks the slice
// data[b..., i0, ..., ik-1] whose batch coordinates b are the row's first `batch_dims` ones.
// Negative indices count from the end; out-of-range ones are a user error at evaluation.
struct gather_nd {
    std::int64_t batch_dims = 0; // non-negative
    std::string name() const { return "gather_nd"; }
    static gather_nd from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"batch_dims", batch_dims}}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const gather_nd&) const = default;
};

} // namespace conflux::op
