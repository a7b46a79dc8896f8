// Resize (opsets 11 to 19): X, roi, scales, sizes. Exactly one of scales and sizes is given and
// non-empty; both, like roi for tf_crop_and_resize, must be constants, so the output lens and
// every interpolation weight are fixed here (Conflux programs have static shapes). Opset 18's
// `axes` lists the axes that scales, sizes and roi speak of; the others keep their length.
// Upsample (opsets 7 to 9, still in older exports) is the Resize of its day: asymmetric
// coordinates, nearest rounding down.
#include "onnx/node_context.hpp"

#include "conflux/ops/resize.hpp"
#include "conflux/util/checked_size.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;

op::resize_mode parse_mode(node_context& c) {
    const auto s = c.attr_string("mode", "nearest");
    for (auto m : {op::resize_mode::nearest, op::resize_mode::linear, op::resize_mode::cubic})
        if (s == op::resize_mode_name(m)) return m;
    c.fail("unknown mode '", s, "' (nearest, linear or cubic)");
}

op::resize_coordinates parse_coordinates(node_context& c) {
    using enum op::resize_coordinates;
    const auto s = c.attr_string("coordinate_transformation_mode", "half_pixel");
    for (auto m : {half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric,
                   tf_half_pixel_for_nn, tf_crop_and_resize})
        if (s == op::resize_coordinates_name(m)) return m;
    c.fail("unknown coordinate_transformation_mode '", s, "'");
}

op::resize_nearest parse_nearest(node_context& c) {
    using enum op::resize_nearest;
    const auto s = c.attr_string("nearest_mode", "round_prefer_floor");
    for (auto m : {round_prefer_floor, round_prefer_ceil, floor, ceil})
        if (s == op::resize_nearest_name(m)) return m;
    c.fail("unknown nearest_mode '", s, "'");
}

// Whether optional input i holds values: absent, "" and empty tensors do not.
bool given(node_context& c, std::size_t i) {
    return c.has_input(i) && c.input_shape(i).elements() > 0;
}

// `values` (one per listed axis) spread over all `rank` axes, `fill` elsewhere.
template <class T>
std::vector<T> spread(const std::vector<T>& values, const std::vector<std::int64_t>& axes,
                      std::size_t rank, T fill) {
    std::vector<T> all(rank, fill);
    for (std::size_t i = 0; i < axes.size(); ++i)
        all[std::size_t(axes[i])] = values[i];
    return all;
}

// Axis d's length after scaling by s (a positive number): floor(len * s), bounded.
std::size_t scaled_length(node_context& c, std::size_t len, double s, std::size_t d) {
    const double scaled = std::floor(double(len) * s);
    if (scaled > double(max_tensor_elements))
        c.fail("scale ", s, " makes axis ", d, " of length ", len, " longer than ",
               max_tensor_elements_text);
    return std::size_t(scaled);
}

outputs build_resize(node_context& c) {
    if (c.opset() < 11) c.unsupported("Resize before opset 11 is not supported");
    auto x = c.input(0);
    const dims& in = x->get_shape().lens();
    const std::size_t rank = in.size();

    op::resize r;
    r.mode = parse_mode(c);
    r.coordinates = parse_coordinates(c);
    r.nearest = parse_nearest(c);
    r.cubic_coeff_a = c.attr_float("cubic_coeff_a", -0.75f);
    r.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
    r.extrapolation_value = c.attr_float("extrapolation_value", 0.0f);
    std::string policy = "stretch";
    std::vector<std::int64_t> axes(rank);
    std::iota(axes.begin(), axes.end(), 0);
    if (c.opset() >= 18) {
        r.antialias = c.attr_int("antialias", 0) != 0;
        policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
        if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
            c.fail("unknown keep_aspect_ratio_policy '", policy, "'");
        if (auto a = c.attr_ints("axes")) {
            axes = c.normalize_axes(*a, rank);
            auto sorted = axes;
            std::sort(sorted.begin(), sorted.end());
            if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
                c.fail("axes lists an axis more than once");
        }
    }

    const bool has_scales = given(c, 2);
    const bool has_sizes = given(c, 3);
    if (has_scales && has_sizes) c.fail("scales and sizes are both given; give exactly one");
    if (!has_scales && !has_sizes) c.fail("neither scales nor sizes is given; give exactly one");

    r.scales.assign(rank, 1.0);
    r.out_lens = in;
    if (has_scales) {
        auto scales = c.constant_doubles(2, "scales");
        if (scales.size() != axes.size())
            c.fail("scales has ", scales.size(), " values for ", axes.size(), " axes");
        for (std::size_t i = 0; i < axes.size(); ++i) {
            const auto d = std::size_t(axes[i]);
            const double s = scales[i];
            if (!(std::isfinite(s) && s > 0))
                c.fail("scale ", s, " of axis ", d, " is not a positive number");
            r.scales[d] = s;
            r.out_lens[d] = scaled_length(c, in[d], s, d);
        }
    } else {
        auto sizes = c.constant_ints(3, "sizes");
        if (sizes.size() != axes.size())
            c.fail("sizes has ", sizes.size(), " values for ", axes.size(), " axes");
        for (auto s : sizes)
            if (s <= 0) c.fail("size ", s, " is not positive");
        std::vector<double> ratio(axes.size());
        for (std::size_t i = 0; i < axes.size(); ++i)
            ratio[i] = double(sizes[i]) / double(in[std::size_t(axes[i])]);
        if (policy != "stretch" && !axes.empty()) {
            // One scale for all the listed axes, rounded half up to lengths.
            const double s = policy == "not_larger" ? *std::min_element(ratio.begin(), ratio.end())
                                                    : *std::max_element(ratio.begin(), ratio.end());
            for (std::size_t i = 0; i < axes.size(); ++i) {
                ratio[i] = s;
                sizes[i] = std::int64_t(std::floor(s * double(in[std::size_t(axes[i])]) + 0.5));
            }
        }
        for (std::size_t i = 0; i < axes.size(); ++i) {
            const auto d = std::size_t(axes[i]);
            r.out_lens[d] = checked_dim(sizes[i], "sizes");
            // An empty input axis has no scale; compute_shape refuses to resize it.
            r.scales[d] = in[d] == 0 ? 1.0 : ratio[i];
        }
    }

    if (r.coordinates == op::resize_coordinates::tf_crop_and_resize) {
        if (!given(c, 1)) c.fail("tf_crop_and_resize needs roi, which is not given");
        auto roi = c.constant_doubles(1, "roi");
        if (roi.size() != 2 * axes.size())
            c.fail("roi has ", roi.size(), " values for ", axes.size(), " axes (starts then ends)");
        const std::vector<double> starts(roi.begin(), roi.begin() + std::ptrdiff_t(axes.size()));
        const std::vector<double> ends(roi.begin() + std::ptrdiff_t(axes.size()), roi.end());
        r.roi = spread(starts, axes, rank, 0.0);
        const auto all_ends = spread(ends, axes, rank, 1.0);
        r.roi.insert(r.roi.end(), all_ends.begin(), all_ends.end());
    }
    return {c.add(r, {x})};
}

// The scale of every axis: opset 9's second input, or opset 7's attribute.
outputs build_upsample(node_context& c) {
    auto x = c.input(0);
    const dims& in = x->get_shape().lens();
    op::resize r;
    const auto mode = c.attr_string("mode", "nearest");
    if (mode != "nearest" && mode != "linear")
        c.fail("unknown mode '", mode, "' (nearest or linear)");
    r.mode = mode == "nearest" ? op::resize_mode::nearest : op::resize_mode::linear;
    r.coordinates = op::resize_coordinates::asymmetric;
    r.nearest = op::resize_nearest::floor;
    std::vector<double> scales;
    if (c.has_input(1)) {
        scales = c.constant_doubles(1, "scales");
    } else if (auto a = c.attr_floats("scales")) {
        scales.assign(a->begin(), a->end());
    } else {
        c.fail("scales is given neither as the second input nor as an attribute");
    }
    if (scales.size() != in.size())
        c.fail("scales has ", scales.size(), " values for ", in.size(), " axes");
    r.scales = scales;
    r.out_lens = in;
    for (std::size_t d = 0; d < in.size(); ++d) {
        const double s = scales[d];
        if (!(std::isfinite(s) && s >= 1))
            c.fail("scale ", s, " of axis ", d, " is not a number of at least 1");
        r.out_lens[d] = scaled_length(c, in[d], s, d);
    }
    return {c.add(r, {x})};
}

} // namespace

void add_resize_ops(op_table& t) {
    t["Resize"] = {1, 4, build_resize};
    t["Upsample"] = {1, 2, build_upsample};
}

} // namespace conflux::onnx
