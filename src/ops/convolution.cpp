#include "conflux/ops/convolution.hpp"

#include "ops/attribute_reader.hpp"

#include "channels_last.hpp"
#include "conflux/util/checked_size.hpp"
#include "conflux/util/parallel_for.hpp"

#include <algorithm>
#include <cstdint>

namespace conflux::op {

namespace {

// Attributes may be left empty for ONNX's defaults; everything below works on the filled form.
struct conv_params {
    std::size_t nd = 0;
    dims pad_begin, pad_end, stride, dilation;
};

conv_params normalise(const convolution& c, std::size_t nd) {
    const std::string op = c.name();
    CONFLUX_USER_CHECK(c.padding.empty() || c.padding.size() == 2 * nd, op, ": padding needs ",
                       2 * nd, " values for ", nd, " spatial axes, got ", c.padding.size());
    CONFLUX_USER_CHECK(c.stride.empty() || c.stride.size() == nd, op, ": stride needs ", nd,
                       " values, got ", c.stride.size());
    CONFLUX_USER_CHECK(c.dilation.empty() || c.dilation.size() == nd, op, ": dilation needs ", nd,
                       " values, got ", c.dilation.size());
    conv_params p;
    p.nd = nd;
    p.pad_begin.assign(nd, 0);
    p.pad_end.assign(nd, 0);
    p.stride.assign(nd, 1);
    p.dilation.assign(nd, 1);
    for (std::size_t i = 0; i < nd; ++i) {
        if (!c.padding.empty()) {
            p.pad_begin[i] = c.padding[i];
            p.pad_end[i] = c.padding[nd + i];
        }
        if (!c.stride.empty()) p.stride[i] = c.stride[i];
        if (!c.dilation.empty()) p.dilation[i] = c.dilation[i];
        CONFLUX_USER_CHECK(p.stride[i] > 0, op, ": stride must be positive");
        CONFLUX_USER_CHECK(p.dilation[i] > 0, op, ": dilation must be positive");
        // Bounded like a len, a padded axis (len + both pads) and every tap position then fit
        // in a signed 64-bit integer, which the evaluation's offsets rely on.
        for (auto [value, what] :
             {std::pair{p.pad_begin[i], "padding"}, std::pair{p.pad_end[i], "padding"},
              std::pair{p.stride[i], "stride"}, std::pair{p.dilation[i], "dilation"}})
            CONFLUX_USER_CHECK(value <= max_tensor_elements, op, ": ", what, " ", value,
                               " of spatial axis ", i, " is larger than ",
                               max_tensor_elements_text);
    }
    return p;
}

// Output positions o in [lo, hi) whose input coordinate o*stride + offset lies inside [0, len).
struct tap_range {
    std::size_t lo = 0, hi = 0;
    std::ptrdiff_t offset = 0; // kernel tap position minus begin padding
};

tap_range valid_outputs(std::ptrdiff_t offset, std::size_t len, std::size_t stride,
                        std::size_t out_len) {
    auto s = std::ptrdiff_t(stride);
    auto n = std::ptrdiff_t(len);
    tap_range r;
    r.offset = offset;
    r.lo = offset >= 0 ? 0 : std::size_t((-offset + s - 1) / s);
    r.hi = (n - 1 - offset) < 0 ? 0 : std::min(out_len, std::size_t((n - 1 - offset) / s + 1));
    if (r.hi < r.lo) r.hi = r.lo;
    return r;
}

} // namespace

nlohmann::json convolution::attributes() const {
    nlohmann::json j = {
        {"padding", padding}, {"stride", stride}, {"dilation", dilation}, {"group", group}};
    // Printed only when set, so the text of every NCHW program stays as it was.
    if (channels_last) j["channels_last"] = true;
    return j;
}

convolution convolution::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.padding = r.sizes("padding"),
            .stride = r.sizes("stride"),
            .dilation = r.sizes("dilation"),
            .group = r.size("group"),
            .channels_last = r.flag_or("channels_last", false)};
}

shape convolution::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 2);
    if (!channels_last) return nchw_shape(in[0], in[1]);
    const std::size_t rank = in[0].rank();
    CONFLUX_USER_CHECK(rank >= 3 && rank <= 5, name(),
                       ": channels-last input must be [N, spatial..., C] with 1 to 3 spatial "
                       "axes, got ",
                       to_string(in[0]));
    auto out = nchw_shape(permuted(in[0], to_channels_first(rank)),
                          permuted(in[1], to_channels_first(rank)));
    return {out.type(), permuted(out, to_channels_last(rank)).lens()};
}

shape convolution::nchw_shape(const shape& x, const shape& w) const {
    const std::string op = name();
    CONFLUX_USER_CHECK(x.rank() >= 3 && x.rank() <= 5, op,
                       ": input must be [N, C, spatial...] with 1 to 3 spatial axes, got ",
                       to_string(x));
    CONFLUX_USER_CHECK(w.rank() == x.rank(), op, ": weights ", to_string(w),
                       " must have the input's rank ", x.rank());
    CONFLUX_USER_CHECK(x.type() == w.type(), op, ": input is ", to_string(x.type()),
                       " but weights are ", to_string(w.type()));
    CONFLUX_USER_CHECK(group > 0, op, ": group must be positive");
    const std::size_t nd = x.rank() - 2;
    auto p = normalise(*this, nd);
    const auto& xl = x.lens();
    const auto& wl = w.lens();
    CONFLUX_USER_CHECK(mul_size(wl[1], group) == xl[1], op, ": input has ", xl[1],
                       " channels but weights expect ", wl[1], " x group ", group, " = ",
                       wl[1] * group);
    CONFLUX_USER_CHECK(wl[0] % group == 0, op, ": ", wl[0],
                       " output channels are not divisible by group ", group);
    dims out{xl[0], wl[0]};
    for (std::size_t i = 0; i < nd; ++i) {
        CONFLUX_USER_CHECK(wl[i + 2] > 0, op, ": kernel axis ", i, " is empty");
        auto dilated = mul_size(p.dilation[i], wl[i + 2] - 1);
        CONFLUX_USER_CHECK(dilated.has_value(), op, ": spatial axis ", i, ": the kernel of ",
                           wl[i + 2], " taps dilated by ", p.dilation[i], " spans more than ",
                           max_tensor_elements_text, " positions");
        std::size_t extent = *dilated + 1;
        // Each term is at most 2^48 (normalise and the shape bound): no wrap.
        std::size_t padded = xl[i + 2] + p.pad_begin[i] + p.pad_end[i];
        CONFLUX_USER_CHECK(padded >= extent, op, ": spatial axis ", i, " has padded size ", padded,
                           ", smaller than the dilated kernel extent ", extent);
        out.push_back((padded - extent) / p.stride[i] + 1);
    }
    return {x.type(), out};
}

argument convolution::eval(const shape& out, const std::vector<argument>& in) const {
    if (!channels_last) return nchw_eval(out, in[0], in[1]);
    // The reference reads its inputs through their strides anyway, so channels-last data is
    // evaluated as a permuted view of itself; only the result is reordered (copied).
    const std::size_t rank = out.rank();
    auto x = in[0].view(permuted(in[0].get_shape(), to_channels_first(rank)));
    auto w = in[1].view(permuted(in[1].get_shape(), to_channels_first(rank)));
    auto y = nchw_eval(nchw_shape(x.get_shape(), w.get_shape()), x, w);
    return y.view(permuted(y.get_shape(), to_channels_last(rank))).contiguous();
}

argument convolution::nchw_eval(const shape& out, const argument& x_arg,
                                const argument& w_arg) const {
    const argument in[2] = {x_arg, w_arg};
    const auto& xs = in[0].get_shape();
    const auto& ws = in[1].get_shape();
    const std::size_t nd = xs.rank() - 2;
    auto p = normalise(*this, nd);

    // Lift 1-D and 2-D to 3-D with leading unit axes so one loop nest serves all ranks.
    std::size_t in_sp[3] = {1, 1, 1}, k_sp[3] = {1, 1, 1}, out_sp[3] = {1, 1, 1};
    std::size_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
    std::ptrdiff_t pad[3] = {0, 0, 0};
    for (std::size_t i = 0; i < nd; ++i) {
        std::size_t a = 3 - nd + i;
        in_sp[a] = xs.lens()[i + 2];
        k_sp[a] = ws.lens()[i + 2];
        out_sp[a] = out.lens()[i + 2];
        stride[a] = p.stride[i];
        dil[a] = p.dilation[i];
        pad[a] = std::ptrdiff_t(p.pad_begin[i]);
    }
    const std::size_t batch = xs.lens()[0], channels = xs.lens()[1];
    const std::size_t filters = ws.lens()[0], group_channels = ws.lens()[1];
    const std::size_t group_filters = filters / group;
    const std::size_t in_plane = in_sp[0] * in_sp[1] * in_sp[2];
    const std::size_t k_vol = k_sp[0] * k_sp[1] * k_sp[2];
    const std::size_t out_plane = out_sp[0] * out_sp[1] * out_sp[2];

    // Which outputs each kernel tap touches is the same for every channel and filter.
    std::vector<tap_range> taps[3];
    for (std::size_t a = 0; a < 3; ++a)
        for (std::size_t k = 0; k < k_sp[a]; ++k)
            taps[a].push_back(
                valid_outputs(std::ptrdiff_t(k * dil[a]) - pad[a], in_sp[a], stride[a], out_sp[a]));

    return visit_compute(xs.type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const auto x = to_vector<T>(in[0]);
        const auto w = to_vector<T>(in[1]);
        std::vector<T> y(out.elements(), T(0));

        auto work = [&](std::size_t begin, std::size_t end) {
            for (std::size_t item = begin; item < end; ++item) {
                const std::size_t n = item / filters, k = item % filters;
                const std::size_t g = k / group_filters;
                T* acc = y.data() + item * out_plane;
                for (std::size_t c = 0; c < group_channels; ++c) {
                    const T* xc = x.data() + (n * channels + g * group_channels + c) * in_plane;
                    const T* wc = w.data() + (k * group_channels + c) * k_vol;
                    for (std::size_t kd = 0; kd < k_sp[0]; ++kd) {
                        const auto& td = taps[0][kd];
                        for (std::size_t kh = 0; kh < k_sp[1]; ++kh) {
                            const auto& th = taps[1][kh];
                            for (std::size_t kw = 0; kw < k_sp[2]; ++kw) {
                                const auto& tw = taps[2][kw];
                                if (tw.lo >= tw.hi) continue;
                                const T wv = wc[(kd * k_sp[1] + kh) * k_sp[2] + kw];
                                const std::size_t count = tw.hi - tw.lo;
                                const auto iw0 =
                                    std::size_t(std::ptrdiff_t(tw.lo * stride[2]) + tw.offset);
                                for (std::size_t od = td.lo; od < td.hi; ++od) {
                                    const auto id =
                                        std::size_t(std::ptrdiff_t(od * stride[0]) + td.offset);
                                    for (std::size_t oh = th.lo; oh < th.hi; ++oh) {
                                        const auto ih =
                                            std::size_t(std::ptrdiff_t(oh * stride[1]) + th.offset);
                                        T* yrow = acc + (od * out_sp[1] + oh) * out_sp[2] + tw.lo;
                                        const T* xrow = xc + (id * in_sp[1] + ih) * in_sp[2] + iw0;
                                        if (stride[2] == 1) {
                                            for (std::size_t j = 0; j < count; ++j)
                                                yrow[j] += wv * xrow[j];
                                        } else {
                                            for (std::size_t j = 0; j < count; ++j)
                                                yrow[j] += wv * xrow[j * stride[2]];
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        };
        // Small problems stay on the caller: starting threads costs more than they would save.
        const std::size_t per_item = std::max<std::size_t>(1, group_channels * k_vol * out_plane);
        parallel_for(batch * filters, work,
                     std::max<std::size_t>(1, (std::size_t{1} << 16) / per_item));
        return from_vector<T>(out.type(), out.lens(), y);
    });
}

} // namespace conflux::op
