// The scatters: the output is the data with the updates written at the places the indices name,
// one update after the other in the updates' row-major order, so with reduction none a place
// named twice keeps the last update (as the ONNX reference implementation does), and add, mul,
// max and min combine in that order too.
#pragma once

#include "conflux/ir/operation.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace conflux::op {

// How an update combines with the value already at its place. max and min let a NaN win.
enum class scatter_reduction { none, add, mul, max, min };
inline constexpr scatter_reduction all_scatter_reductions[] = {
    scatter_reduction::none, scatter_reduction::add, scatter_reduction::mul, scatter_reduction::max,
    scatter_reduction::min};

// "none", "add", "mul", "max", "min" (the ONNX spellings).
std::string_view scatter_reduction_name(scatter_reduction r);
std::optional<scatter_reduction> parse_scatter_reduction(std::string_view name);

// ONNX ScatterND: inputs data (rank r), indices (rank q, last axis k <= r), updates of lens
// indices.lens[:-1] + data.lens[k:]. Row n of the indices names the slice data[i0, ..., ik-1]
// that update row n goes to. Negative indices count from the end; out-of-range ones are a user
// error at evaluation.
struct scatter_nd {
    scatter_reduction reduction = scatter_reduction::none;
    std::string name() const { return "scatter_nd"; }
    static scatter_nd from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"reduction", scatter_reduction_name(reduction)}}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const scatter_nd&) const = default;
};

// ONNX ScatterElements (and the deprecated Scatter): inputs data, indices and updates of one
// rank, indices and updates of equal lens, no longer than data's outside `axis`. The update at
// position p goes to p with its `axis` coordinate replaced by indices[p].
struct scatter_elements {
    std::int64_t axis = 0; // non-negative
    scatter_reduction reduction = scatter_reduction::none;
    std::string name() const { return "scatter_elements"; }
    static scatter_elements from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const {
        return {{"axis", axis}, {"reduction", scatter_reduction_name(reduction)}};
    }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const scatter_elements&) const = default;
};

} // namespace conflux::op
