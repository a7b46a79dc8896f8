#include "conflux/ops/views.hpp"

#include "ops/attribute_reader.hpp"

#include "conflux/util/checked_size.hpp"
#include "ops/strided_loop.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace conflux::op {

namespace {

// Strides of len-1 axes never affect addressing; making them canonical keeps shapes that
// describe the same layout equal (and a standard layout exactly `shape{type, lens}`).
shape normalized(const shape& s) {
    if (s.standard()) return s.as_standard();
    return s;
}

// The stride a len-1 axis at position i gets: what a standard layout would give it relative to
// the axis after it.
void set_unit_strides(const dims& lens, dims& strides) {
    for (std::size_t i = lens.size(); i-- > 0;) {
        if (lens[i] != 1) continue;
        strides[i] =
            i + 1 < lens.size() ? strides[i + 1] * std::max<std::size_t>(lens[i + 1], 1) : 1;
    }
}

template <std::size_t W>
void copy_runs(const std::byte* src, std::byte* dst, const detail::loop_space& ls) {
    detail::for_each_run(
        ls, 0, 0, ls.elements,
        [&](std::size_t offset, std::size_t done, std::size_t count, std::size_t stride) {
            const std::byte* s = src + offset * W;
            std::byte* d = dst + done * W;
            if (stride == 1) {
                std::memcpy(d, s, count * W);
                return;
            }
            for (std::size_t j = 0; j < count; ++j)
                std::memcpy(d + j * W, s + j * stride * W, W);
        });
}

// A standard copy of `a`: one memcpy per contiguous run rather than an index computation per
// element, since reshapes of transposed activations copy whole tensors.
argument copy_to_standard(const argument& a) {
    const shape out_shape = a.get_shape().as_standard();
    argument out{out_shape};
    if (out_shape.elements() == 0) return out;
    auto ls = detail::make_loop_space({&a.get_shape(), &out_shape});
    switch (size_of(out_shape.type())) {
    case 1:
        copy_runs<1>(a.data(), out.data(), ls);
        break;
    case 2:
        copy_runs<2>(a.data(), out.data(), ls);
        break;
    case 4:
        copy_runs<4>(a.data(), out.data(), ls);
        break;
    case 8:
        copy_runs<8>(a.data(), out.data(), ls);
        break;
    default:
        throw_internal_error("copy_to_standard: unexpected element size ",
                             size_of(out_shape.type()));
    }
    return out;
}

const shape& single_input(const std::string& op, const std::vector<shape>& in) {
    check_input_count(op, in, 1);
    return in[0];
}

std::vector<shape> shapes_of(const std::vector<argument>& in) {
    std::vector<shape> s;
    s.reserve(in.size());
    for (const auto& a : in)
        s.push_back(a.get_shape());
    return s;
}

std::size_t product(dims::const_iterator first, dims::const_iterator last) {
    std::size_t p = 1;
    for (; first != last; ++first)
        p *= *first;
    return p;
}

// An axis given as possibly negative (counted from the end), checked against `rank`.
std::size_t normalize_axis(const std::string& op, std::int64_t axis, std::size_t rank) {
    const auto r = static_cast<std::int64_t>(rank);
    CONFLUX_USER_CHECK(axis >= -r && axis < r, op, ": axis ", axis, " is out of range for rank ",
                       rank);
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

// Evaluates a view whose layout does not depend on the data: the view of the actual input.
template <class Op> argument eval_view(const Op& op, const std::vector<argument>& in) {
    return in[0].view(op.compute_shape(shapes_of(in)));
}

} // namespace

std::optional<shape> reshape_as_view(const shape& in, const dims& lens) {
    // The group matching below walks past the end of `lens` when its product only equals the
    // input's by wrapping around.
    CONFLUX_ASSERT(bounded_extent(lens).has_value() &&
                       in.elements() == product(lens.begin(), lens.end()),
                   "reshape_as_view: element counts differ");
    if (in.elements() == 0) return shape{in.type(), lens};
    // Old axes of len 1 constrain nothing. The rest are matched with the new axes in groups of
    // equal product; a group can be re-split only when its old axes are contiguous among
    // themselves, and the new strides then follow from the group's innermost stride.
    dims old_lens, old_strides;
    for (std::size_t i = 0; i < in.rank(); ++i) {
        if (in.lens()[i] == 1) continue;
        old_lens.push_back(in.lens()[i]);
        old_strides.push_back(in.strides()[i]);
    }
    dims strides(lens.size(), 0);
    std::size_t oi = 0, ni = 0;
    while (oi < old_lens.size() && ni < lens.size()) {
        const std::size_t o_first = oi, n_first = ni;
        std::size_t o_prod = old_lens[oi], n_prod = lens[ni];
        while (o_prod != n_prod) {
            if (n_prod < o_prod)
                n_prod *= lens[++ni];
            else
                o_prod *= old_lens[++oi];
        }
        for (std::size_t k = o_first; k < oi; ++k)
            if (old_strides[k] != old_strides[k + 1] * old_lens[k + 1]) return std::nullopt;
        strides[ni] = old_strides[oi];
        for (std::size_t k = ni; k > n_first; --k)
            strides[k - 1] = strides[k] * lens[k];
        ++oi;
        ++ni;
    }
    set_unit_strides(lens, strides);
    return normalized(shape{in.type(), lens, strides});
}

// ---------------------------------------------------------------------------------------------
// reshape

reshape reshape::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).sizes("dims")};
}

shape reshape::compute_shape(const std::vector<shape>& in) const {
    const shape& s = single_input(name(), in);
    const std::size_t n = checked_elements(lens, "reshape: target");
    CONFLUX_USER_CHECK(n == s.elements(), "reshape: cannot reshape [", to_string(s.lens()), "] (",
                       s.elements(), " elements) to [", to_string(lens), "] (", n, " elements)");
    if (auto v = reshape_as_view(s, lens)) return *v;
    return {s.type(), lens};
}

std::optional<std::size_t> reshape::view_offset(const shape& in) const {
    if (!reshape_as_view(in, lens)) return std::nullopt;
    return 0;
}

argument reshape::eval(const shape&, const std::vector<argument>& in) const {
    shape out = compute_shape(shapes_of(in));
    if (reshape_as_view(in[0].get_shape(), lens)) return in[0].view(out);
    return copy_to_standard(in[0]).view(out);
}

// ---------------------------------------------------------------------------------------------
// flatten

namespace {
reshape flatten_as_reshape(std::int64_t axis, const shape& s) {
    const auto r = static_cast<std::int64_t>(s.rank());
    CONFLUX_USER_CHECK(axis >= -r && axis <= r, "flatten: axis ", axis,
                       " is out of range for rank ", r);
    const auto a = static_cast<std::ptrdiff_t>(axis < 0 ? axis + r : axis);
    const auto& l = s.lens();
    return reshape{{product(l.begin(), l.begin() + a), product(l.begin() + a, l.end())}};
}
} // namespace

flatten flatten::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).integer("axis")};
}

shape flatten::compute_shape(const std::vector<shape>& in) const {
    const shape& s = single_input(name(), in);
    return flatten_as_reshape(axis, s).compute_shape(in);
}

std::optional<std::size_t> flatten::view_offset(const shape& in) const {
    if (!reshape_as_view(in, compute_shape({in}).lens())) return std::nullopt;
    return 0;
}

argument flatten::eval(const shape& out, const std::vector<argument>& in) const {
    single_input(name(), shapes_of(in));
    return flatten_as_reshape(axis, in[0].get_shape()).eval(out, in);
}

// ---------------------------------------------------------------------------------------------
// transpose

bool is_permutation_of(const std::vector<std::int64_t>& perm, std::size_t rank) {
    std::vector<bool> seen(rank, false);
    if (perm.size() != rank) return false;
    for (const auto p : perm) {
        if (p < 0 || static_cast<std::size_t>(p) >= rank || seen[static_cast<std::size_t>(p)])
            return false;
        seen[static_cast<std::size_t>(p)] = true;
    }
    return true;
}

transpose transpose::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).integers("permutation")};
}

shape transpose::compute_shape(const std::vector<shape>& in) const {
    const shape& s = single_input(name(), in);
    const std::size_t r = s.rank();
    if (!is_permutation_of(permutation, r)) {
        std::string perm;
        for (std::size_t i = 0; i < permutation.size(); ++i)
            perm += (i ? "," : "") + std::to_string(permutation[i]);
        throw_user_error("transpose: [", perm, "] is not a permutation of the ", r, " axes of [",
                         to_string(s.lens()), "]");
    }
    dims lens(r), strides(r);
    for (std::size_t i = 0; i < r; ++i) {
        const auto p = static_cast<std::size_t>(permutation[i]);
        lens[i] = s.lens()[p];
        strides[i] = s.strides()[p];
    }
    return normalized(shape{s.type(), lens, strides});
}

argument transpose::eval(const shape&, const std::vector<argument>& in) const {
    return eval_view(*this, in);
}

// ---------------------------------------------------------------------------------------------
// squeeze

squeeze squeeze::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).integers("axes")};
}

shape squeeze::compute_shape(const std::vector<shape>& in) const {
    const shape& s = single_input(name(), in);
    std::vector<bool> drop(s.rank(), false);
    if (axes.empty()) {
        // ONNX: no axes means every axis of len 1.
        for (std::size_t i = 0; i < s.rank(); ++i)
            drop[i] = s.lens()[i] == 1;
    }
    for (auto axis : axes) {
        const std::size_t a = normalize_axis(name(), axis, s.rank());
        CONFLUX_USER_CHECK(!drop[a], "squeeze: axis ", axis, " is given twice");
        CONFLUX_USER_CHECK(s.lens()[a] == 1, "squeeze: axis ", axis, " of [", to_string(s.lens()),
                           "] has len ", s.lens()[a], ", not 1");
        drop[a] = true;
    }
    dims lens, strides;
    for (std::size_t i = 0; i < s.rank(); ++i) {
        if (drop[i]) continue;
        lens.push_back(s.lens()[i]);
        strides.push_back(s.strides()[i]);
    }
    return normalized(shape{s.type(), lens, strides});
}

argument squeeze::eval(const shape&, const std::vector<argument>& in) const {
    return eval_view(*this, in);
}

// ---------------------------------------------------------------------------------------------
// unsqueeze

unsqueeze unsqueeze::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).integers("axes")};
}

shape unsqueeze::compute_shape(const std::vector<shape>& in) const {
    const shape& s = single_input(name(), in);
    const std::size_t out_rank = s.rank() + axes.size();
    std::vector<bool> added(out_rank, false);
    for (auto axis : axes) {
        const std::size_t a = normalize_axis(name(), axis, out_rank);
        CONFLUX_USER_CHECK(!added[a], "unsqueeze: axis ", axis, " is given twice");
        added[a] = true;
    }
    dims lens(out_rank, 1), strides(out_rank, 0);
    for (std::size_t i = 0, j = 0; i < out_rank; ++i) {
        if (added[i]) continue;
        lens[i] = s.lens()[j];
        strides[i] = s.strides()[j];
        ++j;
    }
    for (std::size_t i = out_rank; i-- > 0;) {
        if (!added[i]) continue;
        strides[i] = i + 1 < out_rank ? strides[i + 1] * std::max<std::size_t>(lens[i + 1], 1) : 1;
    }
    return normalized(shape{s.type(), lens, strides});
}

argument unsqueeze::eval(const shape&, const std::vector<argument>& in) const {
    return eval_view(*this, in);
}

// ---------------------------------------------------------------------------------------------
// broadcast

broadcast broadcast::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).sizes("out_lens")};
}

shape broadcast::compute_shape(const std::vector<shape>& in) const {
    const shape& s = single_input(name(), in);
    const std::size_t r = out_lens.size();
    bool ok = s.rank() <= r;
    dims strides(r, 0);
    for (std::size_t i = 0; ok && i < s.rank(); ++i) {
        const std::size_t o = r - s.rank() + i;
        const std::size_t len = s.lens()[i];
        if (len == out_lens[o])
            strides[o] = s.strides()[i];
        else
            ok = len == 1;
    }
    CONFLUX_USER_CHECK(ok, "broadcast: cannot broadcast [", to_string(s.lens()), "] to [",
                       to_string(out_lens), "]");
    return normalized(shape{s.type(), out_lens, strides});
}

argument broadcast::eval(const shape&, const std::vector<argument>& in) const {
    return eval_view(*this, in);
}

dims broadcast_lens(const std::string& who, const std::vector<dims>& lens) {
    std::size_t rank = 0;
    for (const auto& l : lens)
        rank = std::max(rank, l.size());
    dims out(rank, 1);
    bool ok = true;
    for (const auto& l : lens) {
        for (std::size_t i = 0; i < l.size(); ++i) {
            std::size_t& o = out[rank - l.size() + i];
            if (l[i] == o || l[i] == 1) continue;
            if (o == 1)
                o = l[i];
            else
                ok = false;
        }
    }
    if (!ok) {
        std::string all;
        for (std::size_t i = 0; i < lens.size(); ++i)
            all += (i ? ", [" : "[") + to_string(lens[i]) + "]";
        throw_user_error(who, ": cannot broadcast lens ", all, " together");
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// slice

std::vector<slice_axis> plan_slice(const slice& op, const shape& s) {
    CONFLUX_USER_CHECK(op.starts.size() == op.ends.size(), "slice: ", op.starts.size(),
                       " starts but ", op.ends.size(), " ends");
    CONFLUX_USER_CHECK(op.axes.empty() || op.axes.size() == op.starts.size(),
                       "slice: ", op.axes.size(), " axes but ", op.starts.size(), " starts");
    CONFLUX_USER_CHECK(op.steps.empty() || op.steps.size() == op.starts.size(),
                       "slice: ", op.steps.size(), " steps but ", op.starts.size(), " starts");
    std::vector<slice_axis> plan(s.rank());
    for (std::size_t i = 0; i < s.rank(); ++i)
        plan[i].len = s.lens()[i];
    std::vector<bool> seen(s.rank(), false);
    for (std::size_t k = 0; k < op.starts.size(); ++k) {
        // ONNX: absent axes mean 0, 1, ..., len(starts) - 1.
        const std::int64_t axis = op.axes.empty() ? static_cast<std::int64_t>(k) : op.axes[k];
        const std::size_t a = normalize_axis("slice", axis, s.rank());
        CONFLUX_USER_CHECK(!seen[a], "slice: axis ", axis, " is given twice");
        seen[a] = true;
        const std::int64_t step = op.steps.empty() ? 1 : op.steps[k];
        CONFLUX_USER_CHECK(step != 0, "slice: step of axis ", axis, " is 0");
        const auto dim = static_cast<std::int64_t>(s.lens()[a]);
        // Negative values count from the end; a dim never exceeds INT64_MAX, so adding it to
        // a negative value cannot overflow.
        std::int64_t start = op.starts[k] < 0 ? op.starts[k] + dim : op.starts[k];
        std::int64_t end = op.ends[k] < 0 ? op.ends[k] + dim : op.ends[k];
        std::int64_t count = 0;
        if (step > 0) {
            start = std::clamp<std::int64_t>(start, 0, dim);
            end = std::clamp<std::int64_t>(end, 0, dim);
            if (end > start) count = (end - start - 1) / step + 1;
        } else {
            start = std::clamp<std::int64_t>(start, 0, dim - 1);
            end = std::clamp<std::int64_t>(end, -1, dim - 1);
            // -step is not representable for INT64_MIN, whose steps never reach a second
            // element anyway.
            if (start > end)
                count = step == std::numeric_limits<std::int64_t>::min()
                            ? 1
                            : (start - end - 1) / (-step) + 1;
        }
        plan[a] = {start, step, static_cast<std::size_t>(count)};
    }
    return plan;
}

namespace {

bool any_negative(const std::vector<slice_axis>& plan) {
    return std::any_of(plan.begin(), plan.end(), [](const slice_axis& p) { return p.step < 0; });
}

// The positive-step case: the view's shape and its element offset into the input.
std::pair<shape, std::size_t> slice_view(const shape& s, const std::vector<slice_axis>& plan) {
    dims lens(s.rank()), strides(s.rank());
    std::size_t offset = 0;
    for (std::size_t i = 0; i < s.rank(); ++i) {
        lens[i] = plan[i].len;
        // A step longer than the axis takes one element; its product with the stride could
        // wrap and would address nothing anyway.
        strides[i] = plan[i].len <= 1 ? s.strides()[i]
                                      : s.strides()[i] * static_cast<std::size_t>(plan[i].step);
        offset += static_cast<std::size_t>(plan[i].start) * s.strides()[i];
    }
    shape out = normalized(shape{s.type(), lens, strides});
    // An empty view must not point past its input's storage.
    if (out.elements() == 0) offset = 0;
    return {out, offset};
}

// The negative-step case: an element-by-element copy into a standard buffer.
argument slice_copy(const argument& a, const std::vector<slice_axis>& plan) {
    const shape& s = a.get_shape();
    dims lens(s.rank());
    for (std::size_t i = 0; i < s.rank(); ++i)
        lens[i] = plan[i].len;
    argument out{shape{s.type(), lens}};
    const std::size_t n = out.get_shape().elements();
    const std::size_t w = size_of(s.type());
    std::int64_t base = 0;
    std::vector<std::int64_t> step_stride(s.rank());
    for (std::size_t i = 0; i < s.rank(); ++i) {
        base += plan[i].start * static_cast<std::int64_t>(s.strides()[i]);
        // Only axes that take two or more elements step; their step times stride stays inside
        // the input, where a longer step's product could overflow.
        step_stride[i] =
            plan[i].len <= 1 ? 0 : plan[i].step * static_cast<std::int64_t>(s.strides()[i]);
    }
    dims idx(s.rank(), 0);
    std::int64_t offset = base;
    for (std::size_t e = 0; e < n; ++e) {
        std::memcpy(out.data() + e * w, a.data() + offset * static_cast<std::int64_t>(w), w);
        for (std::size_t k = s.rank(); k-- > 0;) {
            offset += step_stride[k];
            if (++idx[k] < lens[k]) break;
            offset -= static_cast<std::int64_t>(lens[k]) * step_stride[k];
            idx[k] = 0;
        }
    }
    return out;
}

} // namespace

nlohmann::json slice::attributes() const {
    return {{"axes", axes}, {"starts", starts}, {"ends", ends}, {"steps", steps}};
}

slice slice::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.axes = r.integers("axes"),
            .starts = r.integers("starts"),
            .ends = r.integers("ends"),
            .steps = r.integers("steps")};
}

op_traits slice::traits() const {
    return {.view = std::all_of(steps.begin(), steps.end(), [](auto s) { return s > 0; }),
            .selects = true};
}

std::optional<std::size_t> slice::view_offset(const shape& in) const {
    auto plan = plan_slice(*this, in);
    if (any_negative(plan)) return std::nullopt;
    return slice_view(in, plan).second;
}

shape slice::compute_shape(const std::vector<shape>& in) const {
    const shape& s = single_input(name(), in);
    auto plan = plan_slice(*this, s);
    if (any_negative(plan)) {
        dims lens(s.rank());
        for (std::size_t i = 0; i < s.rank(); ++i)
            lens[i] = plan[i].len;
        return {s.type(), lens};
    }
    return slice_view(s, plan).first;
}

argument slice::eval(const shape&, const std::vector<argument>& in) const {
    const auto shapes = shapes_of(in);
    const shape& s = single_input(name(), shapes);
    auto plan = plan_slice(*this, s);
    if (any_negative(plan)) return slice_copy(in[0], plan);
    auto [out, offset] = slice_view(s, plan);
    return in[0].view(out, offset);
}

// ---------------------------------------------------------------------------------------------
// contiguous

shape contiguous::compute_shape(const std::vector<shape>& in) const {
    return single_input(name(), in).as_standard();
}

argument contiguous::eval(const shape&, const std::vector<argument>& in) const {
    const auto shapes = shapes_of(in);
    const shape& s = single_input(name(), shapes);
    if (s.standard()) return in[0].view(s.as_standard());
    return copy_to_standard(in[0]);
}

// ---------------------------------------------------------------------------------------------
// view_offset

std::optional<std::size_t> view_offset(const operation& op, const shape& in) {
    return op.view_offset(in);
}

} // namespace conflux::op
