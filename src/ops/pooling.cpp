#include "conflux/ops/pooling.hpp"

#include "ops/attribute_reader.hpp"

#include "channels_last.hpp"
#include "conflux/util/checked_size.hpp"
#include "conflux/util/parallel_for.hpp"
#include "ops/op_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace conflux::op {

namespace {

// Attributes other than `lengths` may be left empty for ONNX's defaults.
struct pool_params {
    dims pad_begin, pad_end, stride, dilation;
};

pool_params normalise(const pooling& p, std::size_t nd) {
    const std::string op = p.name();
    CONFLUX_USER_CHECK(p.lengths.size() == nd, op, ": window needs ", nd, " values for ", nd,
                       " spatial axes, got ", p.lengths.size());
    CONFLUX_USER_CHECK(p.padding.empty() || p.padding.size() == 2 * nd, op, ": padding needs ",
                       2 * nd, " values, got ", p.padding.size());
    CONFLUX_USER_CHECK(p.stride.empty() || p.stride.size() == nd, op, ": stride needs ", nd,
                       " values, got ", p.stride.size());
    CONFLUX_USER_CHECK(p.dilation.empty() || p.dilation.size() == nd, op, ": dilation needs ", nd,
                       " values, got ", p.dilation.size());
    pool_params r;
    r.pad_begin.assign(nd, 0);
    r.pad_end.assign(nd, 0);
    r.stride.assign(nd, 1);
    r.dilation.assign(nd, 1);
    for (std::size_t i = 0; i < nd; ++i) {
        if (!p.padding.empty()) {
            r.pad_begin[i] = p.padding[i];
            r.pad_end[i] = p.padding[nd + i];
        }
        if (!p.stride.empty()) r.stride[i] = p.stride[i];
        if (!p.dilation.empty()) r.dilation[i] = p.dilation[i];
        CONFLUX_USER_CHECK(p.lengths[i] > 0, op, ": window axis ", i, " is empty");
        CONFLUX_USER_CHECK(r.stride[i] > 0, op, ": stride must be positive");
        CONFLUX_USER_CHECK(r.dilation[i] > 0, op, ": dilation must be positive");
        // Bounded like a len, a padded axis and every tap position then fit in a signed
        // 64-bit integer, which the window arithmetic relies on.
        for (auto [value, what] :
             {std::pair{p.lengths[i], "window"}, std::pair{r.pad_begin[i], "padding"},
              std::pair{r.pad_end[i], "padding"}, std::pair{r.stride[i], "stride"},
              std::pair{r.dilation[i], "dilation"}})
            CONFLUX_USER_CHECK(value <= max_tensor_elements, op, ": ", what, " ", value,
                               " of spatial axis ", i, " is larger than ",
                               max_tensor_elements_text);
    }
    return r;
}

// Per output position along one axis: the window taps that read real input, and how many taps
// fall inside the explicitly padded extent (the count_include_pad divisor; ceil mode can push a
// window past the end padding, and those taps never count).
struct axis_window {
    std::ptrdiff_t start = 0;        // input coordinate of tap 0
    std::size_t first = 0, last = 0; // taps [first, last) are inside the input
    std::size_t padded_taps = 0;
};

// The number of taps t in [0, len) with start + t * d < bound (d > 0).
std::size_t taps_below(std::ptrdiff_t start, std::ptrdiff_t bound, std::size_t len,
                       std::ptrdiff_t d) {
    if (bound <= start) return 0;
    return std::min(len, std::size_t((bound - start + d - 1) / d));
}

// Closed forms rather than a walk over the taps: a window may be as long as its (bounded)
// padded axis, and walking it once per output position would take quadratic time.
std::vector<axis_window> axis_windows(std::size_t in_len, std::size_t out_len, std::size_t len,
                                      std::size_t stride, std::size_t dilation,
                                      std::size_t pad_begin, std::size_t pad_end) {
    std::vector<axis_window> ws(out_len);
    const auto n = std::ptrdiff_t(in_len);
    const auto d = std::ptrdiff_t(dilation);
    for (std::size_t o = 0; o < out_len; ++o) {
        auto& w = ws[o];
        w.start = std::ptrdiff_t(o * stride) - std::ptrdiff_t(pad_begin);
        w.first = w.start >= 0 ? 0 : std::min(len, std::size_t((-w.start + d - 1) / d));
        w.last = taps_below(w.start, n, len, d);
        w.padded_taps = taps_below(w.start, n + std::ptrdiff_t(pad_end), len, d);
        if (w.first >= w.last) w.first = w.last = 0;
    }
    return ws;
}

} // namespace

nlohmann::json pooling::attributes() const {
    nlohmann::json j = {{"lengths", lengths},     {"stride", stride},
                        {"padding", padding},     {"dilation", dilation},
                        {"ceil_mode", ceil_mode}, {"count_include_pad", count_include_pad}};
    // Printed only when set, so the text of every NCHW program stays as it was.
    if (channels_last) j["channels_last"] = true;
    return j;
}

pooling pooling::from_attributes(pooling_mode mode, const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.mode = mode,
            .lengths = r.sizes("lengths"),
            .stride = r.sizes("stride"),
            .padding = r.sizes("padding"),
            .dilation = r.sizes("dilation"),
            .ceil_mode = r.flag("ceil_mode"),
            .count_include_pad = r.flag("count_include_pad"),
            .channels_last = r.flag_or("channels_last", false)};
}

shape pooling::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    if (!channels_last) return nchw_shape(in[0]);
    const std::size_t rank = in[0].rank();
    CONFLUX_USER_CHECK(rank >= 3 && rank <= 5, name(),
                       ": channels-last input must be [N, spatial..., C] with 1 to 3 spatial "
                       "axes, got ",
                       to_string(in[0]));
    auto out = nchw_shape(permuted(in[0], to_channels_first(rank)));
    return {out.type(), permuted(out, to_channels_last(rank)).lens()};
}

shape pooling::nchw_shape(const shape& x) const {
    const std::string op = name();
    CONFLUX_USER_CHECK(x.rank() >= 3 && x.rank() <= 5, op,
                       ": input must be [N, C, spatial...] with 1 to 3 spatial axes, got ",
                       to_string(x));
    const std::size_t nd = x.rank() - 2;
    auto p = normalise(*this, nd);
    dims out{x.lens()[0], x.lens()[1]};
    for (std::size_t i = 0; i < nd; ++i) {
        const std::size_t in_len = x.lens()[i + 2];
        auto dilated = mul_size(p.dilation[i], lengths[i] - 1);
        CONFLUX_USER_CHECK(dilated.has_value(), op, ": spatial axis ", i, ": the window of ",
                           lengths[i], " taps dilated by ", p.dilation[i], " spans more than ",
                           max_tensor_elements_text, " positions");
        const std::size_t extent = *dilated + 1;
        // ONNX requires pads smaller than the window: a window entirely in the padding has no
        // value (-inf for max, 0/0 for average).
        CONFLUX_USER_CHECK(p.pad_begin[i] < extent && p.pad_end[i] < extent, op, ": spatial axis ",
                           i, " has pads ", p.pad_begin[i], " and ", p.pad_end[i],
                           ", not smaller than the window extent ", extent,
                           " (a window would lie entirely in the padding)");
        // Each term is at most 2^48 (normalise and the shape bound): no wrap.
        const std::size_t padded = in_len + p.pad_begin[i] + p.pad_end[i];
        CONFLUX_USER_CHECK(padded >= extent, op, ": spatial axis ", i, " has padded size ", padded,
                           ", smaller than the window extent ", extent);
        std::size_t span = padded - extent;
        std::size_t o =
            (ceil_mode ? (span + p.stride[i] - 1) / p.stride[i] : span / p.stride[i]) + 1;
        // ONNX: in ceil mode a last window that would start inside the end padding is dropped.
        if (ceil_mode && o > 1 && (o - 1) * p.stride[i] >= in_len + p.pad_begin[i]) --o;
        out.push_back(o);
    }
    return {x.type(), out};
}

argument pooling::eval(const shape& out, const std::vector<argument>& in) const {
    if (!channels_last) return nchw_eval(out, in[0]);
    const std::size_t rank = out.rank();
    auto x = in[0].view(permuted(in[0].get_shape(), to_channels_first(rank)));
    auto y = nchw_eval(nchw_shape(x.get_shape()), x);
    return y.view(permuted(y.get_shape(), to_channels_last(rank))).contiguous();
}

argument pooling::nchw_eval(const shape& out, const argument& x_arg) const {
    const argument in[1] = {x_arg};
    const auto& xs = in[0].get_shape();
    const std::size_t nd = xs.rank() - 2;
    auto p = normalise(*this, nd);

    // Lift to 3 spatial axes with leading unit axes so one loop nest serves every rank.
    std::size_t in_sp[3] = {1, 1, 1}, out_sp[3] = {1, 1, 1};
    std::vector<axis_window> wins[3];
    for (std::size_t a = 0; a < 3; ++a)
        wins[a] = axis_windows(1, 1, 1, 1, 1, 0, 0);
    std::size_t dil[3] = {1, 1, 1};
    for (std::size_t i = 0; i < nd; ++i) {
        std::size_t a = 3 - nd + i;
        in_sp[a] = xs.lens()[i + 2];
        out_sp[a] = out.lens()[i + 2];
        dil[a] = p.dilation[i];
        wins[a] = axis_windows(in_sp[a], out_sp[a], lengths[i], p.stride[i], p.dilation[i],
                               p.pad_begin[i], p.pad_end[i]);
    }
    const std::size_t planes = xs.lens()[0] * xs.lens()[1];
    const std::size_t in_plane = in_sp[0] * in_sp[1] * in_sp[2];
    const std::size_t out_plane = out_sp[0] * out_sp[1] * out_sp[2];
    std::size_t window = 1;
    for (auto l : lengths)
        window *= l;
    const bool is_max = mode == pooling_mode::max;

    return visit_compute(xs.type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const auto x = to_vector<T>(in[0]);
        std::vector<T> y(out.elements(), T(0));
        auto work = [&](std::size_t begin, std::size_t end) {
            for (std::size_t plane = begin; plane < end; ++plane) {
                const T* xp = x.data() + plane * in_plane;
                T* yp = y.data() + plane * out_plane;
                for (std::size_t od = 0; od < out_sp[0]; ++od) {
                    const auto& wd = wins[0][od];
                    for (std::size_t oh = 0; oh < out_sp[1]; ++oh) {
                        const auto& wh = wins[1][oh];
                        for (std::size_t ow = 0; ow < out_sp[2]; ++ow) {
                            const auto& ww = wins[2][ow];
                            T acc = is_max ? std::numeric_limits<T>::lowest() : T(0);
                            if constexpr (std::numeric_limits<T>::has_infinity)
                                if (is_max) acc = -std::numeric_limits<T>::infinity();
                            for (std::size_t td = wd.first; td < wd.last; ++td) {
                                const auto id = std::size_t(wd.start + std::ptrdiff_t(td * dil[0]));
                                for (std::size_t th = wh.first; th < wh.last; ++th) {
                                    const auto ih =
                                        std::size_t(wh.start + std::ptrdiff_t(th * dil[1]));
                                    const T* row = xp + (id * in_sp[1] + ih) * in_sp[2];
                                    for (std::size_t tw = ww.first; tw < ww.last; ++tw) {
                                        const T v = row[std::size_t(ww.start +
                                                                    std::ptrdiff_t(tw * dil[2]))];
                                        if (is_max) {
                                            // A NaN anywhere in the window wins, as in ONNX.
                                            if (v > acc || is_nan(v)) acc = v;
                                        } else {
                                            acc += v;
                                        }
                                    }
                                }
                            }
                            if (!is_max) {
                                std::size_t count =
                                    count_include_pad
                                        ? wd.padded_taps * wh.padded_taps * ww.padded_taps
                                        : (wd.last - wd.first) * (wh.last - wh.first) *
                                              (ww.last - ww.first);
                                acc = count == 0 ? T(0) : acc / T(count);
                            }
                            yp[(od * out_sp[1] + oh) * out_sp[2] + ow] = acc;
                        }
                    }
                }
            }
        };
        const std::size_t per_item = std::max<std::size_t>(1, out_plane * window);
        parallel_for(planes, work, std::max<std::size_t>(1, (std::size_t{1} << 16) / per_item));
        return from_vector<T>(out.type(), out.lens(), y);
    });
}

} // namespace conflux::op
