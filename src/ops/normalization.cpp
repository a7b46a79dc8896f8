#include "conflux/ops/normalization.hpp"

#include "ops/attribute_reader.hpp"

#include "conflux/util/parallel_for.hpp"

#include <algorithm>
#include <cmath>

namespace conflux::op {

namespace {

// `a` read as if broadcast (numpy rules, right-aligned) to `target`, in row-major order.
template <class T> std::vector<T> read_broadcast(const argument& a, const dims& target) {
    const auto& s = a.get_shape();
    const std::size_t off = target.size() - s.rank();
    dims strides(target.size(), 0);
    for (std::size_t i = 0; i < s.rank(); ++i)
        strides[off + i] = s.lens()[i] == 1 ? 0 : s.strides()[i];
    return to_vector<T>(a.view(shape{s.type(), target, strides}));
}

std::size_t product(dims::const_iterator b, dims::const_iterator e) {
    std::size_t n = 1;
    for (; b != e; ++b)
        n *= *b;
    return n;
}

std::size_t grain_for(std::size_t per_item) {
    return std::max<std::size_t>(1, (std::size_t{1} << 16) / std::max<std::size_t>(1, per_item));
}

} // namespace

batch_norm batch_norm::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).real("epsilon")};
}

shape batch_norm::compute_shape(const std::vector<shape>& in) const {
    const std::string op = name();
    check_input_count(op, in, 5);
    const auto& x = in[0];
    CONFLUX_USER_CHECK(x.rank() >= 2, op, ": input must be [N, C, ...], got ", to_string(x));
    CONFLUX_USER_CHECK(is_floating(x.type()), op, ": input must be floating point, got ",
                       to_string(x.type()));
    const char* names[] = {"scale", "bias", "mean", "variance"};
    for (std::size_t i = 1; i < 5; ++i) {
        CONFLUX_USER_CHECK(in[i].lens() == dims{x.lens()[1]}, op, ": ", names[i - 1], " ",
                           to_string(in[i]), " must be [", x.lens()[1], "] for input ",
                           to_string(x));
        CONFLUX_USER_CHECK(is_floating(in[i].type()), op, ": ", names[i - 1],
                           " must be floating point, got ", to_string(in[i].type()));
    }
    // ONNX lets the parameters have their own types, but scale/bias and mean/var come in pairs.
    CONFLUX_USER_CHECK(
        in[1].type() == in[2].type() && in[3].type() == in[4].type(), op, ": scale/bias types (",
        to_string(in[1].type()), ", ", to_string(in[2].type()), ") and mean/variance types (",
        to_string(in[3].type()), ", ", to_string(in[4].type()), ") must match pairwise");
    return x.as_standard();
}

argument batch_norm::eval(const shape& out, const std::vector<argument>& in) const {
    const auto& xl = in[0].get_shape().lens();
    const std::size_t channels = xl[1];
    const std::size_t inner = product(xl.begin() + 2, xl.end());
    const std::size_t planes = xl[0] * channels;
    return visit_compute(in[0].get_shape().type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const auto x = to_vector<T>(in[0]);
        const auto scale = to_vector<T>(in[1]);
        const auto bias = to_vector<T>(in[2]);
        const auto mean = to_vector<T>(in[3]);
        const auto var = to_vector<T>(in[4]);
        std::vector<T> factor(channels);
        for (std::size_t c = 0; c < channels; ++c)
            factor[c] = scale[c] / std::sqrt(var[c] + T(epsilon));
        std::vector<T> y(x.size());
        parallel_for(
            planes,
            [&](std::size_t begin, std::size_t end) {
                for (std::size_t p = begin; p < end; ++p) {
                    const std::size_t c = p % channels;
                    const T* xp = x.data() + p * inner;
                    T* yp = y.data() + p * inner;
                    for (std::size_t i = 0; i < inner; ++i)
                        yp[i] = (xp[i] - mean[c]) * factor[c] + bias[c];
                }
            },
            grain_for(inner));
        return from_vector<T>(out.type(), out.lens(), y);
    });
}

namespace {

std::size_t normalised_axis(std::int64_t axis, std::size_t rank) {
    const auto r = std::int64_t(rank);
    CONFLUX_USER_CHECK(axis >= -r && axis < r, "layer_normalization: axis ", axis,
                       " is out of range for rank ", rank);
    return std::size_t(axis < 0 ? axis + r : axis);
}

} // namespace

layer_norm layer_norm::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.axis = r.integer("axis"),
            .epsilon = r.real("epsilon"),
            .centered = r.flag_or("centered", true)};
}

shape layer_norm::compute_shape(const std::vector<shape>& in) const {
    const std::string op = name();
    check_input_count(op, in, 2, 3);
    const auto& x = in[0];
    CONFLUX_USER_CHECK(x.rank() >= 1, op, ": input must have rank >= 1");
    CONFLUX_USER_CHECK(is_floating(x.type()), op, ": input must be floating point, got ",
                       to_string(x.type()));
    const std::size_t a = normalised_axis(axis, x.rank());
    const dims normalised(x.lens().begin() + std::ptrdiff_t(a), x.lens().end());
    const char* names[] = {"scale", "bias"};
    for (std::size_t i = 1; i < in.size(); ++i) {
        const auto& p = in[i];
        const bool f32_for_16bit =
            p.type() == dtype::f32 && (x.type() == dtype::f16 || x.type() == dtype::bf16);
        CONFLUX_USER_CHECK(p.type() == x.type() || f32_for_16bit, op, ": ", names[i - 1], " is ",
                           to_string(p.type()), " but input is ", to_string(x.type()));
        bool fits = p.rank() <= normalised.size();
        for (std::size_t d = 0; fits && d < p.rank(); ++d) {
            auto want = normalised[normalised.size() - p.rank() + d];
            fits = p.lens()[d] == want || p.lens()[d] == 1;
        }
        CONFLUX_USER_CHECK(fits, op, ": ", names[i - 1], " ", to_string(p),
                           " does not broadcast to the normalised lens [",
                           conflux::to_string(normalised), "] of ", to_string(x));
    }
    return x.as_standard();
}

argument layer_norm::eval(const shape& out, const std::vector<argument>& in) const {
    const auto& xl = in[0].get_shape().lens();
    const std::size_t a = normalised_axis(axis, xl.size());
    const dims normalised(xl.begin() + std::ptrdiff_t(a), xl.end());
    const std::size_t inner = product(normalised.begin(), normalised.end());
    const std::size_t rows = product(xl.begin(), xl.begin() + std::ptrdiff_t(a));
    return visit_compute(in[0].get_shape().type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const auto x = to_vector<T>(in[0]);
        const auto scale = read_broadcast<T>(in[1], normalised);
        const auto bias =
            in.size() > 2 ? read_broadcast<T>(in[2], normalised) : std::vector<T>(inner, T(0));
        std::vector<T> y(x.size());
        parallel_for(
            rows,
            [&](std::size_t begin, std::size_t end) {
                for (std::size_t r = begin; r < end; ++r) {
                    const T* xr = x.data() + r * inner;
                    T* yr = y.data() + r * inner;
                    // Two passes with double sums: long rows would otherwise lose digits in the
                    // mean, and E[x^2] - E[x]^2 cancels badly.
                    double sum = 0; // not centred (RMS normalisation): the mean is 0
                    if (centered)
                        for (std::size_t i = 0; i < inner; ++i)
                            sum += double(xr[i]);
                    const T mean = T(sum / double(inner));
                    double sq = 0;
                    for (std::size_t i = 0; i < inner; ++i) {
                        double d = double(xr[i] - mean);
                        sq += d * d;
                    }
                    const T var = T(sq / double(inner));
                    const T inv = T(1) / std::sqrt(var + T(epsilon));
                    for (std::size_t i = 0; i < inner; ++i)
                        yr[i] = (xr[i] - mean) * inv * scale[i] + bias[i];
                }
            },
            grain_for(inner));
        return from_vector<T>(out.type(), out.lens(), y);
    });
}

} // namespace conflux::op
