#include "cuda/codegen/index_views.hpp"

#include "conflux/ops/views.hpp"
#include "ops/op_helpers.hpp"

#include <algorithm>
#include <limits>

namespace conflux::cuda::index {

namespace {

std::size_t normalized_axis(std::int64_t axis, std::size_t rank) {
    const auto r = static_cast<std::int64_t>(rank);
    CONFLUX_ASSERT(axis >= -r && axis < r, "axis ", axis, " out of range for rank ", rank);
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

using op::product;

// The axes of `at` regrouped over in_lens. Axes of len 1 carry no information; the others are
// matched in groups of equal product (as reshape_as_view matches them): a group of one axis on
// each side passes its index through, a larger group is linearised and decomposed on its own,
// so only the axes a reshape really merges or splits cost a division.
index_expr regroup_axes(const dims& in_lens, const index_expr& at, kernel_writer& w) {
    std::vector<std::string> in_axes(in_lens.size(), "0");
    if (product(in_lens) == 0) return index_expr::from_axes(in_lens, in_axes); // never read
    const auto out_axes = w.axes(at);
    std::vector<std::size_t> po, pi; // positions of the axes of len > 1
    for (std::size_t k = 0; k < at.lens.size(); ++k)
        if (at.lens[k] != 1) po.push_back(k);
    for (std::size_t k = 0; k < in_lens.size(); ++k)
        if (in_lens[k] != 1) pi.push_back(k);
    std::size_t o = 0, n = 0;
    while (o < po.size() && n < pi.size()) {
        const std::size_t o_first = o, n_first = n;
        std::size_t o_prod = at.lens[po[o]], n_prod = in_lens[pi[n]];
        while (o_prod != n_prod) {
            if (o_prod < n_prod)
                o_prod *= at.lens[po[++o]];
            else
                n_prod *= in_lens[pi[++n]];
        }
        if (o == o_first && n == n_first) {
            in_axes[pi[n]] = out_axes[po[o]];
        } else {
            dims group_out, group_in;
            std::vector<std::string> group_axes;
            for (std::size_t k = o_first; k <= o; ++k) {
                group_out.push_back(at.lens[po[k]]);
                group_axes.push_back(out_axes[po[k]]);
            }
            for (std::size_t k = n_first; k <= n; ++k)
                group_in.push_back(in_lens[pi[k]]);
            const std::string lin = w.linear(index_expr::from_axes(group_out, group_axes));
            const auto split = w.axes(index_expr::from_linear(group_in, lin));
            for (std::size_t k = n_first; k <= n; ++k)
                in_axes[pi[k]] = split[k - n_first];
        }
        ++o;
        ++n;
    }
    return index_expr::from_axes(in_lens, in_axes);
}

index_expr transpose_source(const op::transpose& t, const dims& in_lens, const index_expr& at,
                            kernel_writer& w) {
    const auto out_axes = w.axes(at);
    std::vector<std::string> in_axes(in_lens.size(), "0");
    for (std::size_t i = 0; i < t.permutation.size(); ++i)
        in_axes[static_cast<std::size_t>(t.permutation[i])] = out_axes[i];
    return index_expr::from_axes(in_lens, in_axes);
}

index_expr squeeze_source(const op::squeeze& s, const dims& in_lens, const index_expr& at,
                          kernel_writer& w) {
    std::vector<bool> dropped(in_lens.size(), false);
    if (s.axes.empty()) {
        for (std::size_t k = 0; k < in_lens.size(); ++k)
            dropped[k] = in_lens[k] == 1; // ONNX: no axes means every axis of len 1
    }
    for (auto a : s.axes)
        dropped[normalized_axis(a, in_lens.size())] = true;
    const auto out_axes = w.axes(at);
    std::vector<std::string> in_axes(in_lens.size(), "0");
    for (std::size_t k = 0, j = 0; k < in_lens.size(); ++k)
        if (!dropped[k]) in_axes[k] = out_axes[j++];
    return index_expr::from_axes(in_lens, in_axes);
}

index_expr unsqueeze_source(const op::unsqueeze& u, const dims& in_lens, const index_expr& at,
                            kernel_writer& w) {
    const std::size_t out_rank = at.lens.size();
    std::vector<bool> added(out_rank, false);
    for (auto a : u.axes)
        added[normalized_axis(a, out_rank)] = true;
    const auto out_axes = w.axes(at);
    std::vector<std::string> in_axes;
    for (std::size_t k = 0; k < out_rank; ++k)
        if (!added[k]) in_axes.push_back(out_axes[k]);
    return index_expr::from_axes(in_lens, in_axes);
}

index_expr broadcast_source(const dims& in_lens, const index_expr& at, kernel_writer& w) {
    const auto out_axes = w.axes(at);
    const std::size_t offset = at.lens.size() - in_lens.size();
    std::vector<std::string> in_axes(in_lens.size(), "0");
    for (std::size_t k = 0; k < in_lens.size(); ++k)
        if (in_lens[k] != 1) in_axes[k] = out_axes[offset + k];
    return index_expr::from_axes(in_lens, in_axes);
}

index_expr slice_source(const operation& op, const dims& in_lens, const index_expr& at,
                        kernel_writer& w) {
    const auto* slice = op.get_if<op::slice>();
    CONFLUX_ASSERT(slice != nullptr, "slice_source on ", op.name());
    // Only the lens matter to the plan; the dtype is a placeholder.
    const auto plan = op::plan_slice(*slice, shape{dtype::u8, in_lens});
    const auto out_axes = w.axes(at);
    std::vector<std::string> in_axes(in_lens.size());
    for (std::size_t k = 0; k < in_lens.size(); ++k)
        in_axes[k] = w.add(w.mul(out_axes[k], plan[k].step), plan[k].start);
    return index_expr::from_axes(in_lens, in_axes);
}

} // namespace

index_expr reshape_source(const dims& in_lens, const index_expr& at, kernel_writer& w) {
    if (!at.linear.empty()) return index_expr::from_linear(in_lens, at.linear);
    return regroup_axes(in_lens, at, w);
}

std::optional<index_expr> view_source(const operation& op, const dims& in_lens,
                                      const index_expr& at, kernel_writer& w) {
    const std::string name = op.name();
    if (name == "contiguous") return at;
    if (name == "reshape" || name == "flatten") return reshape_source(in_lens, at, w);
    if (const auto* t = op.get_if<op::transpose>()) return transpose_source(*t, in_lens, at, w);
    if (const auto* s = op.get_if<op::squeeze>()) return squeeze_source(*s, in_lens, at, w);
    if (const auto* u = op.get_if<op::unsqueeze>()) return unsqueeze_source(*u, in_lens, at, w);
    if (name == "broadcast") return broadcast_source(in_lens, at, w);
    if (name == "slice") return slice_source(op, in_lens, at, w);
    return std::nullopt;
}

} // namespace conflux::cuda::index
