// Ops that rearrange data: views (Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Expand,
// Slice, Split, Tile) and the data movers (Concat, Pad, Gather, GatherElements, GatherND,
// ScatterND, ScatterElements, Scatter, Trilu, OneHot). Their shape operands (Reshape's shape,
// Slice's starts, OneHot's depth, ...) must be constants: Conflux programs have static shapes.
#include "onnx/node_context.hpp"

#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/scatter.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/util/checked_size.hpp"
#include "ops/op_helpers.hpp"

#include <algorithm>
#include <cmath>

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;

using op::product;

outputs build_reshape(node_context& c) {
    auto x = c.input(0);
    const auto& in = x->get_shape().lens();
    auto spec = c.constant_ints(1, "shape");
    const bool allowzero = c.attr_int("allowzero", 0) != 0;
    dims lens(spec.size(), 0);
    std::optional<std::size_t> infer;
    for (std::size_t i = 0; i < spec.size(); ++i) {
        auto d = spec[i];
        if (d == -1) {
            if (infer) c.fail("shape [", to_string(lens), "] has more than one -1");
            infer = i;
        } else if (d == 0 && !allowzero) {
            if (i >= in.size())
                c.fail("shape has 0 at axis ", i, " but the input has rank ", in.size());
            lens[i] = in[i];
        } else if (d < 0) {
            c.fail("shape has invalid dim ", d);
        } else {
            lens[i] = std::size_t(d);
        }
    }
    const auto total = product(in);
    if (infer) lens[*infer] = 1;
    // Checked before any product is taken: [2^62+1, 4] multiplies out to 4 and would pass as a
    // reshape of 4 elements.
    if (!bounded_extent(lens))
        c.fail("shape [", to_string(lens), "] has more than ", max_tensor_elements_text,
               " elements, the most a tensor may have");
    if (infer) {
        auto known = product(lens);
        if (known == 0 || total % known != 0)
            c.fail("cannot reshape ", to_string(x->get_shape()), " to the shape given (",
                   spec.size(), " dims with -1)");
        lens[*infer] = total / known;
    }
    if (product(lens) != total)
        c.fail("cannot reshape ", to_string(x->get_shape()), " to [", to_string(lens), "]");
    if (lens == in) return {x};
    return {c.add(op::reshape{lens}, {x})};
}

outputs build_transpose(node_context& c) {
    auto x = c.input(0);
    auto rank = x->get_shape().rank();
    std::vector<std::int64_t> perm(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
    if (auto given = c.attr_ints("perm")) {
        perm = *given;
        if (perm.size() != rank) c.fail("perm has ", perm.size(), " values for rank ", rank);
        auto sorted = perm;
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t i = 0; i < sorted.size(); ++i)
            if (sorted[i] != std::int64_t(i))
                c.fail("perm is not a permutation of the ", rank, " input axes");
    }
    return {c.add(op::transpose{perm}, {x})};
}

// Axes from the attribute before `input_opset`, from input 1 since.
std::optional<std::vector<std::int64_t>> axes_operand(node_context& c, std::int64_t input_opset,
                                                      std::size_t input_index = 1) {
    if (c.opset() < input_opset) return c.attr_ints("axes");
    if (!c.has_input(input_index)) return std::nullopt;
    return c.constant_ints(input_index, "axes");
}

outputs build_squeeze(node_context& c) {
    auto x = c.input(0);
    const auto& lens = x->get_shape().lens();
    std::vector<std::int64_t> axes;
    if (auto given = axes_operand(c, 13)) {
        axes = c.normalize_axes(*given, lens.size());
        for (auto a : axes)
            if (lens[std::size_t(a)] != 1)
                c.fail("cannot squeeze axis ", a, " of ", to_string(x->get_shape()),
                       ": its length is not 1");
    } else {
        for (std::size_t i = 0; i < lens.size(); ++i)
            if (lens[i] == 1) axes.push_back(std::int64_t(i));
    }
    if (axes.empty()) return {x};
    std::sort(axes.begin(), axes.end());
    return {c.add(op::squeeze{axes}, {x})};
}

outputs build_unsqueeze(node_context& c) {
    auto x = c.input(0);
    auto given = axes_operand(c, 13);
    if (!given) c.fail("axes are required");
    auto axes = c.normalize_axes(*given, x->get_shape().rank() + given->size());
    std::sort(axes.begin(), axes.end());
    if (axes.empty()) return {x};
    return {c.add(op::unsqueeze{axes}, {x})};
}

outputs build_flatten(node_context& c) {
    auto x = c.input(0);
    auto rank = std::int64_t(x->get_shape().rank());
    auto axis = c.attr_int("axis", 1);
    if (axis < -rank || axis > rank) c.fail("axis ", axis, " is out of range for rank ", rank);
    if (axis < 0) axis += rank;
    return {c.add(op::flatten{axis}, {x})};
}

outputs build_expand(node_context& c) {
    auto x = c.input(0);
    auto spec = c.constant_ints(1, "shape");
    dims target;
    for (auto d : spec) {
        if (d < 0) c.fail("shape has negative dim ", d);
        target.push_back(std::size_t(d));
    }
    if (!bounded_extent(target))
        c.fail("shape [", to_string(target), "] has more than ", max_tensor_elements_text,
               " elements, the most a tensor may have");
    // Expand broadcasts both ways: a 1 in `shape` keeps the input's length.
    auto lens = op::broadcast_lens("Expand", {x->get_shape().lens(), target});
    if (!bounded_extent(lens))
        c.fail("the result [", to_string(lens), "] has more than ", max_tensor_elements_text,
               " elements, the most a tensor may have");
    return {c.broadcast_to(x, lens)};
}

outputs build_slice(node_context& c) {
    auto x = c.input(0);
    auto rank = x->get_shape().rank();
    std::vector<std::int64_t> starts;
    std::vector<std::int64_t> ends;
    std::optional<std::vector<std::int64_t>> axes;
    std::vector<std::int64_t> steps;
    if (c.opset() < 10) {
        starts = c.attr_ints("starts", {});
        ends = c.attr_ints("ends", {});
        axes = c.attr_ints("axes");
    } else {
        starts = c.constant_ints(1, "starts");
        ends = c.constant_ints(2, "ends");
        if (c.has_input(3)) axes = c.constant_ints(3, "axes");
        if (c.has_input(4)) steps = c.constant_ints(4, "steps");
    }
    if (!axes) {
        axes.emplace(starts.size());
        std::iota(axes->begin(), axes->end(), 0);
    }
    if (starts.size() != ends.size() || axes->size() != starts.size() ||
        (!steps.empty() && steps.size() != starts.size()))
        c.fail("starts, ends, axes and steps must have equal lengths");
    for (auto s : steps)
        if (s == 0) c.fail("steps must not be 0");
    auto norm = c.normalize_axes(*axes, rank);
    if (norm.empty()) return {x};
    return {c.add(op::slice{norm, starts, ends, steps}, {x})};
}

outputs build_concat(node_context& c) {
    std::vector<instruction_ref> xs;
    for (std::size_t i = 0; i < c.input_count(); ++i)
        xs.push_back(c.input(i));
    auto axis_attr = c.attr_int("axis");
    if (!axis_attr) c.fail("attribute 'axis' is required");
    auto axis = c.normalize_axis(*axis_attr, xs.front()->get_shape().rank());
    if (xs.size() == 1) return {xs.front()};
    return {c.add(op::concat{axis}, xs)};
}

outputs build_pad(node_context& c) {
    auto x = c.input(0);
    auto rank = x->get_shape().rank();
    auto mode_name = c.attr_string("mode", "constant");
    op::pad p;
    if (mode_name == "constant")
        p.mode = op::pad_mode::constant;
    else if (mode_name == "reflect")
        p.mode = op::pad_mode::reflect;
    else if (mode_name == "edge")
        p.mode = op::pad_mode::edge;
    else
        c.unsupported("mode '", mode_name, "'");

    std::vector<std::int64_t> pads;
    if (c.opset() < 11) {
        pads = c.attr_ints("pads", {});
        p.value = c.attr_float("value", 0.0f);
    } else {
        pads = c.constant_ints(1, "pads");
        if (c.has_input(2)) {
            auto v = c.constant_doubles(2, "constant_value");
            if (v.size() != 1) c.fail("constant_value must hold one value, got ", v.size());
            p.value = float(v.front());
        }
        if (c.has_input(3)) {
            // Pads for the listed axes only: spread them over all axes.
            auto axes = c.normalize_axes(c.constant_ints(3, "axes"), rank);
            if (pads.size() != 2 * axes.size())
                c.fail("pads needs ", 2 * axes.size(), " values for ", axes.size(), " axes, got ",
                       pads.size());
            std::vector<std::int64_t> full(2 * rank, 0);
            for (std::size_t i = 0; i < axes.size(); ++i) {
                full[std::size_t(axes[i])] = pads[i];
                full[rank + std::size_t(axes[i])] = pads[axes.size() + i];
            }
            pads = full;
        }
    }
    if (pads.size() != 2 * rank) c.fail("pads needs ", 2 * rank, " values, got ", pads.size());
    // Negative pads crop (RWKV's time shift pads one step in front and crops one at the end):
    // the positive pads are applied, then the crops are one slice of the padded tensor.
    const auto given = pads;
    std::vector<std::int64_t> crop_axes, crop_front, crop_back;
    for (std::size_t d = 0; d < rank; ++d) {
        if (pads[d] >= 0 && pads[rank + d] >= 0) continue;
        if (pads[d] < -std::int64_t(max_tensor_elements) ||
            pads[rank + d] < -std::int64_t(max_tensor_elements))
            c.fail("pads ", pads[d], " and ", pads[rank + d], " of axis ", d, " are out of range");
        crop_axes.push_back(std::int64_t(d));
        crop_front.push_back(std::max<std::int64_t>(-pads[d], 0));
        crop_back.push_back(std::max<std::int64_t>(-pads[rank + d], 0));
        pads[d] = std::max<std::int64_t>(pads[d], 0);
        pads[rank + d] = std::max<std::int64_t>(pads[rank + d], 0);
    }
    if (!crop_axes.empty() && p.mode != op::pad_mode::constant)
        c.unsupported("negative pads (cropping) in mode '", mode_name, "'");
    for (std::size_t d = 0; d < rank; ++d) {
        auto grown = add_size(x->get_shape().lens()[d], checked_dim(pads[d], "pads"));
        if (grown) grown = add_size(*grown, checked_dim(pads[rank + d], "pads"));
        if (!grown)
            c.fail("pads ", pads[d], " and ", pads[rank + d], " make axis ", d, " of length ",
                   x->get_shape().lens()[d], " longer than ", max_tensor_elements_text);
    }
    auto padded = x;
    if (std::any_of(pads.begin(), pads.end(), [](auto v) { return v != 0; })) {
        p.pads = pads;
        padded = c.add(p, {x});
    }
    if (crop_axes.empty()) return {padded};
    std::vector<std::int64_t> ends;
    for (std::size_t i = 0; i < crop_axes.size(); ++i) {
        const auto d = std::size_t(crop_axes[i]);
        const auto len = std::int64_t(padded->get_shape().lens()[d]);
        if (crop_front[i] >= len || crop_back[i] >= len - crop_front[i])
            c.fail("pads ", given[d], " and ", given[rank + d], " crop all of axis ", d,
                   " of padded length ", len);
        ends.push_back(len - crop_back[i]);
    }
    return {c.add(op::slice{crop_axes, crop_front, ends, {}}, {padded})};
}

// Constant indices are checked here, naming the node: out of range, the reference would
// refuse them only when run, and a GPU kernel must not be handed them at all. `axis_of(i)`: the
// axis of `data_lens` that element i of the indices (row-major) indexes.
template <class AxisOf>
void check_constant_indices(node_context& c, const dims& data_lens, AxisOf axis_of) {
    auto v = c.constant_input(1);
    if (!v || !is_integral(v->get_shape().type()) || v->get_shape().type() == dtype::boolean)
        return;
    auto idx = to_vector<std::int64_t>(*v);
    for (std::size_t i = 0; i < idx.size(); ++i) {
        const std::size_t axis = axis_of(i);
        const std::size_t len = data_lens[axis];
        const auto n = std::int64_t(len);
        if (idx[i] < -n || idx[i] >= n)
            c.fail("index ", idx[i], " (element ", i, " of the indices) is out of range [", -n,
                   ", ", n, ") for axis ", axis, " of length ", len);
    }
}

void check_constant_indices(node_context& c, const dims& data_lens, std::int64_t axis) {
    check_constant_indices(c, data_lens, [&](std::size_t) { return std::size_t(axis); });
}

// GatherND and ScatterND: element i of the indices is component i % k of its row, k the length
// of their last axis; that component indexes data axis first_axis + i % k. Called once the op's
// shape is known to be valid.
void check_constant_index_rows(node_context& c, std::size_t first_axis) {
    const std::size_t k = c.input_shape(1).lens().back();
    check_constant_indices(c, c.input_shape(0).lens(),
                           [&](std::size_t i) { return first_axis + i % k; });
}

outputs build_gather(node_context& c) {
    auto x = c.input(0);
    auto axis = c.normalize_axis(c.attr_int("axis", 0), x->get_shape().rank());
    check_constant_indices(c, x->get_shape().lens(), axis);
    return {c.add(op::gather{axis}, {x, c.input(1)})};
}

outputs build_gather_elements(node_context& c) {
    auto x = c.input(0);
    auto axis = c.normalize_axis(c.attr_int("axis", 0), x->get_shape().rank());
    check_constant_indices(c, x->get_shape().lens(), axis);
    return {c.add(op::gather_elements{axis}, {x, c.input(1)})};
}

outputs build_gather_nd(node_context& c) {
    const auto batch_dims = c.opset() < 12 ? 0 : c.attr_int("batch_dims", 0);
    if (batch_dims < 0) c.fail("batch_dims must not be negative, got ", batch_dims);
    auto y = c.add(op::gather_nd{batch_dims}, {c.input(0), c.input(1)});
    check_constant_index_rows(c, std::size_t(batch_dims));
    return {y};
}

// The reduction attribute: none before opset 16, add and mul since, max and min since 18.
op::scatter_reduction scatter_reduction_of(node_context& c) {
    const std::string name = c.attr_string("reduction", "none");
    const auto r = op::parse_scatter_reduction(name);
    if (!r) c.fail("unknown reduction '", name, "' (none, add, mul, max or min)");
    const std::int64_t since =
        *r == op::scatter_reduction::none                                      ? 0
        : *r == op::scatter_reduction::add || *r == op::scatter_reduction::mul ? 16
                                                                               : 18;
    if (c.opset() < since) c.fail("reduction '", name, "' needs opset ", since, " or later");
    return *r;
}

outputs build_scatter_nd(node_context& c) {
    auto y = c.add(op::scatter_nd{scatter_reduction_of(c)}, {c.input(0), c.input(1), c.input(2)});
    check_constant_index_rows(c, 0);
    return {y};
}

// ScatterElements, and Scatter, its name before opset 11.
outputs build_scatter_elements(node_context& c) {
    auto x = c.input(0);
    auto axis = c.normalize_axis(c.attr_int("axis", 0), x->get_shape().rank());
    auto y =
        c.add(op::scatter_elements{axis, scatter_reduction_of(c)}, {x, c.input(1), c.input(2)});
    check_constant_indices(c, x->get_shape().lens(), axis);
    return {y};
}

outputs build_split(node_context& c) {
    auto x = c.input(0);
    const auto& lens = x->get_shape().lens();
    auto axis = c.normalize_axis(c.attr_int("axis", 0), lens.size());
    const auto len = std::int64_t(lens[std::size_t(axis)]);
    std::vector<std::int64_t> sizes;
    if (c.opset() < 13) {
        sizes = c.attr_ints("split", {});
    } else if (c.has_input(1)) {
        sizes = c.constant_ints(1, "split");
    }
    if (sizes.empty()) {
        std::int64_t n = std::int64_t(c.output_count());
        if (c.opset() >= 18) {
            if (auto given = c.attr_int("num_outputs")) n = *given;
        }
        if (n <= 0) c.fail("there is nothing to split into");
        if (c.opset() >= 18 && c.has_attr("num_outputs")) {
            // Since opset 18 the last chunk may be smaller.
            std::int64_t chunk = len / n + (len % n != 0 ? 1 : 0);
            for (std::int64_t off = 0, i = 0; i < n; ++i, off += chunk)
                sizes.push_back(std::max<std::int64_t>(0, std::min(chunk, len - off)));
        } else {
            if (len % n != 0)
                c.fail("axis ", axis, " of length ", len, " does not split evenly into ", n,
                       " outputs");
            sizes.assign(std::size_t(n), len / n);
        }
    }
    std::int64_t total = 0;
    for (auto s : sizes) {
        if (s < 0) c.fail("split sizes must not be negative");
        auto sum = add_i64(total, s);
        if (!sum) c.fail("split sizes add up to more than ", len, ", the length of axis ", axis);
        total = *sum;
    }
    if (total != len)
        c.fail("split sizes add up to ", total, " but axis ", axis, " has length ", len);
    if (sizes.size() < c.output_count())
        c.fail("split gives ", sizes.size(), " parts for ", c.output_count(), " outputs");
    outputs out;
    std::int64_t start = 0;
    for (auto s : sizes) {
        out.push_back(c.add(op::slice{{axis}, {start}, {start + s}, {}}, {x}));
        start += s;
    }
    return out;
}

// Tile as views: [d0, d1] -> unsqueeze [1, d0, 1, d1] -> broadcast [r0, d0, r1, d1] ->
// reshape [r0*d0, r1*d1].
outputs build_trilu(node_context& c) {
    op::trilu t;
    t.upper = c.attr_int("upper", 1) != 0;
    if (c.has_input(1)) t.k = c.constant_int(1, "k");
    return {c.add(t, {c.input(0)})};
}

// OneHot as a comparison: the indices (negative ones counted from depth) unsqueezed at `axis`
// against the literal 0 .. depth - 1 along that axis, then `where` picks on or off. An index
// outside [-depth, depth) matches nothing, so its row is all off, as ONNX asks.
outputs build_one_hot(node_context& c) {
    using K = op::elementwise_kind;
    auto indices = c.input(0);
    const std::size_t rank = indices->get_shape().rank() + 1;
    const auto depth_values = c.constant_doubles(1, "depth");
    if (depth_values.size() != 1) c.fail("depth must hold one value, got ", depth_values.size());
    const double depth_d = std::floor(depth_values.front());
    // The positions 0 .. depth - 1 are a literal built here: a vocabulary's worth at most.
    if (!(depth_d >= 1 && depth_d <= double(std::size_t{1} << 24)))
        c.fail("depth ", depth_values.front(), " is not a length from 1 to 2^24");
    const auto depth = std::int64_t(depth_d);
    const auto values = c.input(2);
    if (values->get_shape().elements() != 2)
        c.fail("values must hold two values (off, on), got ", to_string(values->get_shape()));
    const auto axis = std::size_t(c.normalize_axis(c.attr_int("axis", -1), rank));
    // Indices of any numeric type; floating ones are truncated, as ONNX's reference casts them.
    auto idx = c.convert(indices, dtype::i64);
    auto depth_i = c.scalar(dtype::i64, double(depth));
    idx = c.elementwise(K::where, {c.elementwise(K::less, {idx, c.scalar(dtype::i64, 0)}),
                                   c.elementwise(K::add, {idx, depth_i}), idx});
    idx = c.add(op::unsqueeze{{std::int64_t(axis)}}, {idx});
    auto hit = c.elementwise(K::equal, {idx, c.positions_along(axis, rank, std::size_t(depth))});
    auto flat = c.add(op::reshape{{2}}, {values});
    auto off = c.add(op::slice{{0}, {0}, {1}, {}}, {flat});
    auto on = c.add(op::slice{{0}, {1}, {2}, {}}, {flat});
    auto scalar_of = [&](instruction_ref v) { return c.add(op::reshape{{}}, {v}); };
    return {c.elementwise(K::where, {hit, scalar_of(on), scalar_of(off)})};
}

outputs build_tile(node_context& c) {
    auto x = c.input(0);
    const auto& lens = x->get_shape().lens();
    auto repeats = c.constant_ints(1, "repeats");
    if (repeats.size() != lens.size())
        c.fail("repeats needs ", lens.size(), " values, got ", repeats.size());
    if (std::all_of(repeats.begin(), repeats.end(), [](auto r) { return r == 1; })) return {x};
    std::vector<std::int64_t> axes;
    dims wide;
    dims out;
    for (std::size_t i = 0; i < lens.size(); ++i) {
        if (repeats[i] < 0) c.fail("repeats must not be negative, got ", repeats[i]);
        checked_dim(repeats[i], "repeats");
        axes.push_back(std::int64_t(2 * i));
        wide.push_back(std::size_t(repeats[i]));
        wide.push_back(lens[i]);
        auto len = mul_size(std::size_t(repeats[i]), lens[i]);
        if (!len)
            c.fail("repeating axis ", i, " of length ", lens[i], " ", repeats[i],
                   " times gives more than ", max_tensor_elements_text, " elements");
        out.push_back(*len);
    }
    if (!bounded_extent(out))
        c.fail("the result [", to_string(out), "] has more than ", max_tensor_elements_text,
               " elements, the most a tensor may have");
    auto y = c.add(op::unsqueeze{axes}, {x});
    y = c.broadcast_to(y, wide);
    return {c.add(op::reshape{out}, {y})};
}

// DepthToSpace (pixel shuffle) and SpaceToDepth (its inverse) as the reshape -> transpose ->
// reshape the ONNX definition spells out; the passes then treat them as any layout change.
// Both ops' input (rank 4, [N, C, H, W]) and positive blocksize.
std::size_t checked_blocksize(node_context& c) {
    if (c.input_shape(0).rank() != 4)
        c.fail("input must have rank 4 [N, C, H, W], got ", to_string(c.input_shape(0)));
    const std::int64_t block = c.attr_int("blocksize", 0);
    if (block <= 0) c.fail("blocksize must be positive, got ", block);
    return std::size_t(block);
}

outputs build_depth_to_space(node_context& c) {
    const std::size_t b = checked_blocksize(c);
    auto x = c.input(0);
    const auto& lens = x->get_shape().lens();
    const std::string mode = c.attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") c.fail("mode must be DCR or CRD, got '", mode, "'");
    const std::size_t n = lens[0], ch = lens[1], h = lens[2], w = lens[3];
    if (ch % (b * b) != 0)
        c.fail("the ", ch, " channels are not a multiple of blocksize^2 = ", b * b);
    const std::size_t out_ch = ch / (b * b);
    auto y = mode == "DCR" ? c.add(op::reshape{{n, b, b, out_ch, h, w}}, {x})
                           : c.add(op::reshape{{n, out_ch, b, b, h, w}}, {x});
    y = c.add(op::transpose{mode == "DCR" ? std::vector<std::int64_t>{0, 3, 4, 1, 5, 2}
                                          : std::vector<std::int64_t>{0, 1, 4, 2, 5, 3}},
              {y});
    return {c.add(op::reshape{{n, out_ch, h * b, w * b}}, {y})};
}

outputs build_space_to_depth(node_context& c) {
    const std::size_t b = checked_blocksize(c);
    auto x = c.input(0);
    const auto& lens = x->get_shape().lens();
    const std::size_t n = lens[0], ch = lens[1], h = lens[2], w = lens[3];
    if (h % b != 0 || w % b != 0)
        c.fail("the spatial size ", h, "x", w, " is not a multiple of blocksize ", b);
    auto y = c.add(op::reshape{{n, ch, h / b, b, w / b, b}}, {x});
    y = c.add(op::transpose{{0, 3, 5, 1, 2, 4}}, {y});
    return {c.add(op::reshape{{n, ch * b * b, h / b, w / b}}, {y})};
}

} // namespace

void add_shape_ops(op_table& t) {
    t["Reshape"] = {2, 2, build_reshape};
    t["Transpose"] = {1, 1, build_transpose};
    t["Squeeze"] = {1, 2, build_squeeze};
    t["Unsqueeze"] = {1, 2, build_unsqueeze};
    t["Flatten"] = {1, 1, build_flatten};
    t["Expand"] = {2, 2, build_expand};
    t["Slice"] = {1, 5, build_slice};
    t["Concat"] = {1, any_count, build_concat};
    t["Pad"] = {1, 4, build_pad};
    t["Gather"] = {2, 2, build_gather};
    t["GatherElements"] = {2, 2, build_gather_elements};
    t["GatherND"] = {2, 2, build_gather_nd};
    t["ScatterND"] = {3, 3, build_scatter_nd};
    t["ScatterElements"] = {3, 3, build_scatter_elements};
    t["Scatter"] = {3, 3, build_scatter_elements};
    t["Split"] = {1, 2, build_split};
    t["Tile"] = {2, 2, build_tile};
    t["Trilu"] = {1, 2, build_trilu};
    t["OneHot"] = {3, 3, build_one_hot};
    t["DepthToSpace"] = {1, 1, build_depth_to_space};
    t["SpaceToDepth"] = {1, 1, build_space_to_depth};
}

} // namespace conflux::onnx
