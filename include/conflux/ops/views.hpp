// View ops: the output aliases input 0 with new lens/strides whenever the input's strides allow
// (always for transpose, broadcast, squeeze, unsqueeze, slice with positive steps; for reshape
// and flatten when the input's layout is compatible). Where a view is impossible the reference
// evaluation copies; compute_shape says which by the strides it returns.
#pragma once

#include "conflux/ir/operation.hpp"

#include <cstdint>
#include <optional>

namespace conflux::op {

// lens: the new lens, all known (the importer resolves 0 and -1).
struct reshape {
    dims lens;
    std::string name() const { return "reshape"; }
    static reshape from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"dims", lens}}; }
    op_traits traits() const { return {.view = true, .layout_only = true, .reshape_like = true}; }
    std::optional<std::size_t> view_offset(const shape& in) const;
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const reshape&) const = default;
};

// Whether perm holds each of 0 .. rank-1 once.
bool is_permutation_of(const std::vector<std::int64_t>& perm, std::size_t rank);

// output axis i is input axis permutation[i].
struct transpose {
    std::vector<std::int64_t> permutation;
    std::string name() const { return "transpose"; }
    static transpose from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"permutation", permutation}}; }
    op_traits traits() const { return {.view = true, .layout_only = true}; }
    std::optional<std::size_t> view_offset(const shape&) const { return 0; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const transpose&) const = default;
};

// axes: normalised (non-negative), each of len 1.
struct squeeze {
    std::vector<std::int64_t> axes;
    std::string name() const { return "squeeze"; }
    static squeeze from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"axes", axes}}; }
    op_traits traits() const { return {.view = true, .layout_only = true, .reshape_like = true}; }
    std::optional<std::size_t> view_offset(const shape&) const { return 0; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const squeeze&) const = default;
};

// axes: positions in the output (non-negative).
struct unsqueeze {
    std::vector<std::int64_t> axes;
    std::string name() const { return "unsqueeze"; }
    static unsqueeze from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"axes", axes}}; }
    op_traits traits() const { return {.view = true, .layout_only = true, .reshape_like = true}; }
    std::optional<std::size_t> view_offset(const shape&) const { return 0; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const unsqueeze&) const = default;
};

// 2-D result: [prod(lens[:axis]), prod(lens[axis:])].
struct flatten {
    std::int64_t axis = 1;
    std::string name() const { return "flatten"; }
    static flatten from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"axis", axis}}; }
    op_traits traits() const { return {.view = true, .layout_only = true, .reshape_like = true}; }
    std::optional<std::size_t> view_offset(const shape& in) const;
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const flatten&) const = default;
};

// Numpy-style broadcast to out_lens (input right-aligned; len-1 or missing axes get stride 0).
struct broadcast {
    dims out_lens;
    std::string name() const { return "broadcast"; }
    static broadcast from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"out_lens", out_lens}}; }
    op_traits traits() const { return {.view = true, .replicates = true}; }
    std::optional<std::size_t> view_offset(const shape&) const { return 0; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const broadcast&) const = default;
};

// ONNX Slice semantics on the given axes (starts/ends clamped as ONNX does, negative values
// counted from the end). A view when every step is positive; a copy otherwise.
struct slice {
    std::vector<std::int64_t> axes;
    std::vector<std::int64_t> starts;
    std::vector<std::int64_t> ends;
    std::vector<std::int64_t> steps; // empty means all 1
    std::string name() const { return "slice"; }
    static slice from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const;
    op_traits traits() const;
    std::optional<std::size_t> view_offset(const shape& in) const;
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const slice&) const = default;
};

// One axis of a slice as ONNX defines it (negative values counted from the end, starts/ends
// clamped): output index j reads input index start + j * step, for len outputs.
struct slice_axis {
    std::int64_t start = 0;
    std::int64_t step = 1;
    std::size_t len = 0;
};
// The plan of every axis of `in` (axes not sliced: start 0, step 1, the whole len); a
// user_error for inconsistent attributes.
std::vector<slice_axis> plan_slice(const slice& op, const shape& in);

// A standard-layout copy of its input.
struct contiguous {
    std::string name() const { return "contiguous"; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const contiguous&) const = default;
};

// Numpy broadcasting of several lens; throws user_error naming `who` when incompatible.
dims broadcast_lens(const std::string& who, const std::vector<dims>& lens);

// The shape of `in` reshaped to `lens` as a view of the same memory (offset 0), or nullopt when
// the strides do not allow one and reshape must copy. Element counts must already match.
std::optional<shape> reshape_as_view(const shape& in, const dims& lens);

// Where a view op's output starts inside its input's memory, in elements, when applying `op` to
// an input of shape `in` aliases it; nullopt when the op must copy (a reshape the strides do not
// allow, a slice with a negative step) or is not a view op. Targets use it to alias buffers.
// Each view op answers for itself (its view_offset member); this asks `op`.
std::optional<std::size_t> view_offset(const operation& op, const shape& in);

} // namespace conflux::op
