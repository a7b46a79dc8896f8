// Resize's coordinates and filters follow the ONNX operator spec; where the spec leaves a detail
// open, the choice of ONNX's reference implementation (whose outputs are the node tests') is
// taken: align_corners and tf_crop_and_resize divide by the unrounded output length
// (scale * input length), and a coordinate that falls exactly on an input position takes the
// position on its left as the filter's base (ratio 1, not 0), which decides the taps of even
// filters there. Where the two differ, the spec wins: pytorch_half_pixel maps the only position
// of a length-1 output to 0 (the reference implementation uses -0.5; only cubic tells them apart).
#include "conflux/ops/resize.hpp"

#include "ops/attribute_reader.hpp"

#include "conflux/util/checked_size.hpp"
#include "op_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace conflux::op {

namespace {

// At most this many (position, tap) pairs per axis: far beyond any image, and small enough that
// the tables never strain memory.
constexpr double max_axis_taps = double(std::uint64_t{1} << 32);

double cubic_weight(double d, double a) {
    d = std::fabs(d);
    if (d <= 1) return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2) return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0;
}

std::int64_t clamp_index(std::int64_t j, std::size_t len) {
    return std::max<std::int64_t>(0, std::min<std::int64_t>(j, std::int64_t(len) - 1));
}

} // namespace

std::string_view resize_mode_name(resize_mode m) {
    switch (m) {
    case resize_mode::nearest:
        return "nearest";
    case resize_mode::linear:
        return "linear";
    case resize_mode::cubic:
        return "cubic";
    }
    return "?";
}

std::string_view resize_coordinates_name(resize_coordinates c) {
    switch (c) {
    case resize_coordinates::half_pixel:
        return "half_pixel";
    case resize_coordinates::half_pixel_symmetric:
        return "half_pixel_symmetric";
    case resize_coordinates::pytorch_half_pixel:
        return "pytorch_half_pixel";
    case resize_coordinates::align_corners:
        return "align_corners";
    case resize_coordinates::asymmetric:
        return "asymmetric";
    case resize_coordinates::tf_half_pixel_for_nn:
        return "tf_half_pixel_for_nn";
    case resize_coordinates::tf_crop_and_resize:
        return "tf_crop_and_resize";
    }
    return "?";
}

std::string_view resize_nearest_name(resize_nearest n) {
    switch (n) {
    case resize_nearest::round_prefer_floor:
        return "round_prefer_floor";
    case resize_nearest::round_prefer_ceil:
        return "round_prefer_ceil";
    case resize_nearest::floor:
        return "floor";
    case resize_nearest::ceil:
        return "ceil";
    }
    return "?";
}

nlohmann::json resize::attributes() const {
    return {{"mode", resize_mode_name(mode)},
            {"coordinate_transformation_mode", resize_coordinates_name(coordinates)},
            {"nearest_mode", resize_nearest_name(nearest)},
            {"cubic_coeff_a", cubic_coeff_a},
            {"exclude_outside", exclude_outside},
            {"antialias", antialias},
            {"extrapolation_value", extrapolation_value},
            {"scales", scales},
            {"roi", roi},
            {"out_lens", out_lens}};
}

resize resize::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.mode = r.choice("mode", all_resize_modes, resize_mode_name),
            .coordinates = r.choice("coordinate_transformation_mode", all_resize_coordinates,
                                    resize_coordinates_name),
            .nearest = r.choice("nearest_mode", all_resize_nearest, resize_nearest_name),
            .cubic_coeff_a = r.real("cubic_coeff_a"),
            .exclude_outside = r.flag("exclude_outside"),
            .antialias = r.flag("antialias"),
            .extrapolation_value = r.real("extrapolation_value"),
            .scales = r.reals("scales"),
            .roi = r.reals("roi"),
            .out_lens = r.sizes("out_lens")};
}

shape resize::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    const shape& x = in[0];
    const std::size_t r = x.rank();
    CONFLUX_USER_CHECK(out_lens.size() == r, name(), ": ", out_lens.size(),
                       " output lens for an input of rank ", r);
    CONFLUX_USER_CHECK(scales.size() == r, name(), ": ", scales.size(),
                       " scales for an input of rank ", r);
    CONFLUX_USER_CHECK(mode == resize_mode::nearest || is_floating(x.type()), name(), ": ",
                       resize_mode_name(mode), " mode needs a floating-point input, got ",
                       to_string(x.type()));
    const bool crop = coordinates == resize_coordinates::tf_crop_and_resize;
    CONFLUX_USER_CHECK(roi.size() == (crop ? 2 * r : 0), name(), ": roi has ", roi.size(),
                       " values, expected ", crop ? 2 * r : 0);
    for (std::size_t d = 0; d < r; ++d) {
        CONFLUX_USER_CHECK(std::isfinite(scales[d]) && scales[d] > 0, name(), ": scale ", scales[d],
                           " of axis ", d, " is not a positive number");
        CONFLUX_USER_CHECK(out_lens[d] == 0 || x.lens()[d] > 0, name(), ": cannot resize axis ", d,
                           ", which is empty, to length ", out_lens[d]);
    }
    for (double v : roi)
        CONFLUX_USER_CHECK(std::isfinite(v), name(), ": roi value ", v, " is not finite");
    CONFLUX_USER_CHECK(bounded_extent(out_lens).has_value(), name(), ": output [",
                       to_string(out_lens), "] has more than ", max_tensor_elements_text,
                       " elements");
    return {x.type(), out_lens};
}

resize_axis_taps resize::axis_taps(std::size_t axis, std::size_t in_len) const {
    const std::size_t out_len = out_lens.at(axis);
    const double scale = scales.at(axis);
    const auto in = double(in_len);
    const double out_width = scale * in; // the output length before rounding down
    auto coordinate = [&](double j) {
        switch (coordinates) {
        case resize_coordinates::half_pixel:
            return (j + 0.5) / scale - 0.5;
        case resize_coordinates::half_pixel_symmetric: {
            const double adjustment = double(out_len) / out_width;
            const double offset = in / 2 * (1 - adjustment);
            return offset + (j + 0.5) / scale - 0.5;
        }
        case resize_coordinates::pytorch_half_pixel:
            return out_len > 1 ? (j + 0.5) / scale - 0.5 : 0.0;
        case resize_coordinates::align_corners:
            return out_len > 1 ? j * (in - 1) / (out_width - 1) : 0.0;
        case resize_coordinates::asymmetric:
            return j / scale;
        case resize_coordinates::tf_half_pixel_for_nn:
            return (j + 0.5) / scale;
        case resize_coordinates::tf_crop_and_resize: {
            const double start = roi.at(axis);
            const double end = roi.at(out_lens.size() + axis);
            const double x = out_len > 1 ? j * (end - start) * (in - 1) / (out_width - 1)
                                         : (end - start) * (in - 1) / 2;
            return x + start * (in - 1);
        }
        }
        return j;
    };

    // The filter: `count` taps starting `first` positions from the base (the input position at
    // or left of the coordinate), weighed by the distance to the coordinate times
    // filter_scale; antialias stretches the filter over 1/scale input positions.
    const double filter_scale = antialias && scale < 1 ? scale : 1;
    std::int64_t first = 0;
    double count = 1;
    if (mode == resize_mode::linear) {
        first = std::int64_t(std::floor(-1 / filter_scale)) + 1;
        count = 2 - 2 * double(first);
    } else if (mode == resize_mode::cubic) {
        first = std::int64_t(std::floor(-2 / filter_scale)) + 1;
        count = 2 - 2 * double(first);
    }
    CONFLUX_USER_CHECK(count * double(out_len) <= max_axis_taps, name(), ": axis ", axis, " needs ",
                       count, " taps for each of its ", out_len,
                       " output positions, more than supported");

    resize_axis_taps t;
    t.taps = std::size_t(count);
    t.index.assign(out_len * t.taps, 0);
    t.weight.assign(out_len * t.taps, 0);
    const bool crop = coordinates == resize_coordinates::tf_crop_and_resize;
    if (crop) t.outside.assign(out_len, false);
    for (std::size_t j = 0; j < out_len; ++j) {
        const double x = coordinate(double(j));
        std::int64_t* index = t.index.data() + j * t.taps;
        double* weight = t.weight.data() + j * t.taps;
        if (crop && (x < 0 || x > in - 1)) {
            t.outside[j] = true;
            continue;
        }
        if (mode == resize_mode::nearest) {
            const double below = std::floor(x);
            const double frac = x - below;
            bool up = false;
            switch (nearest) {
            case resize_nearest::round_prefer_floor:
                up = frac > 0.5;
                break;
            case resize_nearest::round_prefer_ceil:
                up = frac >= 0.5;
                break;
            case resize_nearest::floor:
                break;
            case resize_nearest::ceil:
                up = frac > 0;
                break;
            }
            index[0] = clamp_index(std::int64_t(below) + (up ? 1 : 0), in_len);
            weight[0] = 1;
            continue;
        }
        const double base = std::ceil(x) - 1;
        const double ratio = x - base; // in (0, 1]
        double sum = 0;
        for (std::size_t k = 0; k < t.taps; ++k) {
            const double offset = double(first) + double(k);
            const double d = (offset - ratio) * filter_scale;
            const double w = mode == resize_mode::linear ? std::max(0.0, 1 - std::fabs(d))
                                                         : cubic_weight(d, cubic_coeff_a);
            const auto at = std::int64_t(base + offset);
            const bool inside = at >= 0 && at < std::int64_t(in_len);
            weight[k] = exclude_outside && !inside ? 0 : w;
            index[k] = clamp_index(at, in_len);
            sum += weight[k];
        }
        // Antialiased filters and exclude_outside are normalised to a sum of 1; the plain
        // filters already sum to 1.
        if ((antialias || exclude_outside) && sum != 0)
            for (std::size_t k = 0; k < t.taps; ++k)
                weight[k] /= sum;
    }

    // An axis that is not resized reads position j at j alone; one tap makes it cheap.
    bool identity = out_len == in_len && !(crop && std::find(t.outside.begin(), t.outside.end(),
                                                             true) != t.outside.end());
    for (std::size_t j = 0; identity && j < out_len; ++j) {
        double own = 0;
        for (std::size_t k = 0; k < t.taps; ++k) {
            const double w = t.weight[j * t.taps + k];
            if (t.index[j * t.taps + k] == std::int64_t(j))
                own += w;
            else if (w != 0)
                identity = false;
        }
        identity = identity && own == 1;
    }
    if (identity) {
        t.taps = 1;
        t.outside.clear();
        t.index.resize(out_len);
        t.weight.assign(out_len, 1);
        for (std::size_t j = 0; j < out_len; ++j)
            t.index[j] = std::int64_t(j);
        t.identity = true;
    }
    return t;
}

argument resize::eval(const shape& out, const std::vector<argument>& in) const {
    const argument& x = in.at(0);
    const shape& xs = x.get_shape();
    argument result{shape{out.type(), out.lens()}};
    if (out.elements() == 0) return result;
    const std::size_t r = xs.rank();
    const dims& strides = xs.strides();
    std::vector<resize_axis_taps> taps(r);
    std::vector<std::size_t> resized; // the axes whose taps are walked
    for (std::size_t d = 0; d < r; ++d) {
        taps[d] = axis_taps(d, xs.lens()[d]);
        if (!taps[d].identity) resized.push_back(d);
    }
    visit_storage(out.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        // f32 for f32/f16/bf16, as the other ops compute; only nearest reaches integer types.
        using T = std::conditional_t<std::is_same_v<S, double>, double, float>;
        const S* src = x.typed<S>();
        S* dst = result.typed<S>();
        const S fill = convert_value<S>(extrapolation_value);
        dims pos(r, 0); // the output position, row-major odometer
        dims tap(r, 0); // the tap of each resized axis
        for (std::size_t e = 0; e < out.elements(); ++e) {
            std::size_t base = 0;
            bool outside = false;
            for (std::size_t d = 0; d < r; ++d) {
                if (taps[d].identity)
                    base += pos[d] * strides[d];
                else if (!taps[d].outside.empty() && taps[d].outside[pos[d]])
                    outside = true;
            }
            if (outside) {
                dst[e] = fill;
            } else if (mode == resize_mode::nearest) {
                std::size_t off = base;
                for (std::size_t d : resized)
                    off += std::size_t(taps[d].index[pos[d]]) * strides[d];
                dst[e] = src[off];
            } else {
                // Every combination of the resized axes' taps, the last axis fastest; the
                // weight is the product of the axes' weights in axis order.
                T acc = 0;
                for (std::size_t d : resized)
                    tap[d] = 0;
                while (true) {
                    std::size_t off = base;
                    T w = 1;
                    for (std::size_t d : resized) {
                        const std::size_t k = pos[d] * taps[d].taps + tap[d];
                        off += std::size_t(taps[d].index[k]) * strides[d];
                        w = w * T(taps[d].weight[k]);
                    }
                    acc = acc + w * convert_value<T>(src[off]);
                    std::size_t i = resized.size();
                    while (i > 0 && ++tap[resized[i - 1]] == taps[resized[i - 1]].taps) {
                        tap[resized[i - 1]] = 0;
                        --i;
                    }
                    if (i == 0) break;
                }
                dst[e] = convert_value<S>(acc);
            }
            for (std::size_t d = r; d-- > 0;) {
                if (++pos[d] < out.lens()[d]) break;
                pos[d] = 0;
            }
        }
    });
    return result;
}

} // namespace conflux::op
