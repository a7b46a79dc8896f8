// ConvTranspose -> a stride-1 op::convolution (+ bias), so that every target runs it with what
// it has for Conv and the gemm fusion sees an ordinary anchor.
//
// Along one spatial axis ConvTranspose is y[o] = sum over (i, k) with o = i*s + k*d - pad_begin
// of x[i] w[k]. Place x[i] at position i*s of a zero-stuffed z (s-1 zeros between elements);
// then y[o] = sum_k z[o + pad_begin - k*d] w[k]: a correlation, with dilation d, of z padded by
// (K-1)*d - pad_begin in front, with w flipped. Channels regroup: W [C, M/g, k...] becomes
// [M, C/g, k...] for a grouped convolution. The stuffing costs s^nd times the multiply-adds of
// a direct kernel; it needs no new kernel.
#include "onnx/conv_attributes.hpp"

#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/util/checked_size.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;

// One spatial axis, in int64: attribute values may be anything a model holds.
struct transposed_axis {
    std::int64_t in = 0;
    std::int64_t stride = 1;
    std::int64_t dilation = 1;
    std::int64_t output_padding = 0;
    std::int64_t reach = 0; // (kernel - 1) * dilation: how far one output looks back
    std::int64_t pad_begin = 0;
    std::int64_t pad_end = 0;
};

std::int64_t need(node_context& c, std::optional<std::int64_t> v) {
    if (!v) c.fail("the attributes overflow 64-bit sizes");
    return *v;
}

// (in - 1) * stride + output_padding + reach + 1: the output length before pads.
std::int64_t full_length(node_context& c, const transposed_axis& a) {
    auto n = need(c, mul_i64(a.in - 1, a.stride));
    n = need(c, add_i64(n, a.output_padding));
    n = need(c, add_i64(n, a.reach));
    return need(c, add_i64(n, 1));
}

// Python's floor division by 2, which the spec's formulas use: a negative total (an output
// longer than the full one) rounds the same way as a positive one.
std::int64_t floor_half(std::int64_t v) {
    return v >= 0 ? v / 2 : -((-(v + 1)) / 2) - 1;
}

// The pads of every axis: from 'output_shape' when given (the spec derives them from it, and
// so from auto_pad's placement of the odd one), from SAME_* (an output of in * stride), else
// the 'pads' attribute (zeros for VALID).
void place_pads(node_context& c, const shape& xs, std::size_t channels_out,
                std::vector<transposed_axis>& axes) {
    const std::size_t nd = axes.size();
    const auto auto_pad = c.attr_string("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
        auto_pad != "SAME_LOWER")
        c.unsupported("auto_pad '", auto_pad, "'");
    std::optional<std::vector<std::int64_t>> wanted = c.attr_ints("output_shape");
    if (wanted) {
        // [spatial...], or the whole [N, M, spatial...] as some exporters write it.
        if (wanted->size() == nd + 2) {
            if ((*wanted)[0] != std::int64_t(xs.lens()[0]) ||
                (*wanted)[1] != std::int64_t(channels_out))
                c.fail("attribute 'output_shape' has ", nd + 2, " values but does not begin with",
                       " the batch and output channels [", xs.lens()[0], ",", channels_out, "]");
            wanted->erase(wanted->begin(), wanted->begin() + 2);
        }
        if (wanted->size() != nd)
            c.fail("attribute 'output_shape' needs ", nd, " values, got ", wanted->size());
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        wanted.emplace();
        for (const auto& a : axes)
            wanted->push_back(need(c, mul_i64(a.in, a.stride)));
    }
    if (!wanted) {
        if (auto_pad == "VALID") return;
        auto pads = explicit_pads(c, nd);
        for (std::size_t i = 0; i < nd; ++i) {
            axes[i].pad_begin = pads[i];
            axes[i].pad_end = pads[nd + i];
        }
        return;
    }
    for (std::size_t i = 0; i < nd; ++i) {
        auto& a = axes[i];
        const auto out = (*wanted)[i];
        if (out <= 0) c.fail("attribute 'output_shape' must be positive, got ", out);
        const auto total = need(c, sub_i64(full_length(c, a), out));
        const auto small = floor_half(total);
        const bool upper = auto_pad == "SAME_UPPER";
        a.pad_begin = upper ? small : total - small;
        a.pad_end = upper ? total - small : small;
    }
}

std::vector<transposed_axis> spatial_axes(node_context& c, const shape& xs, const dims& kernel,
                                          std::size_t channels_out) {
    const std::size_t nd = kernel.size();
    const auto strides = positive_ints(c, "strides", nd);
    const auto dilations = positive_ints(c, "dilations", nd);
    const auto output_padding = c.attr_ints("output_padding", std::vector<std::int64_t>(nd, 0));
    if (output_padding.size() != nd)
        c.fail("attribute 'output_padding' needs ", nd, " values, got ", output_padding.size());
    std::vector<transposed_axis> axes(nd);
    for (std::size_t i = 0; i < nd; ++i) {
        auto& a = axes[i];
        a.in = std::int64_t(xs.lens()[2 + i]);
        if (a.in == 0) c.unsupported("an empty spatial axis in X ", to_string(xs));
        if (kernel[i] == 0) c.fail("the kernel has an empty axis");
        a.stride = std::int64_t(strides[i]);
        a.dilation = std::int64_t(dilations[i]);
        if (!mul_size(std::size_t(a.in), strides[i]))
            c.fail("stride ", a.stride, " of spatial axis ", i, " makes the input longer than ",
                   max_tensor_elements_text);
        const auto reach = mul_size(kernel[i] - 1, dilations[i]);
        if (!reach)
            c.fail("the kernel with dilation ", a.dilation, " spans more than ",
                   max_tensor_elements_text, " elements along spatial axis ", i);
        a.reach = std::int64_t(*reach);
        a.output_padding = output_padding[i];
        const auto bound = std::max(a.stride, a.dilation);
        if (a.output_padding < 0 || a.output_padding >= bound)
            c.fail("output_padding ", a.output_padding, " of spatial axis ", i,
                   " must be in [0, max(stride, dilation)) = [0, ", bound, ")");
    }
    place_pads(c, xs, channels_out, axes);
    return axes;
}

// W [C, M/g, k...] -> [M, C/g, k...], flipped along every spatial axis.
instruction_ref convolution_weights(node_context& c, instruction_ref w, std::size_t group) {
    const auto& lens = w->get_shape().lens();
    const std::size_t rank = lens.size();
    const std::size_t per_group_in = lens[0] / group;
    const std::size_t per_group_out = lens[1];
    const dims kernel(lens.begin() + 2, lens.end());
    std::vector<std::int64_t> perm(rank + (group > 1 ? 1 : 0));
    std::iota(perm.begin(), perm.end(), 0);
    if (group > 1) {
        dims split{group, per_group_in, per_group_out};
        split.insert(split.end(), kernel.begin(), kernel.end());
        w = c.add(op::reshape{split}, {w});
        std::swap(perm[1], perm[2]);
    } else {
        std::swap(perm[0], perm[1]);
    }
    w = c.add(op::transpose{perm}, {w});
    if (group > 1) {
        dims merged{group * per_group_out, per_group_in};
        merged.insert(merged.end(), kernel.begin(), kernel.end());
        w = c.add(op::reshape{merged}, {w});
    }
    op::slice flip;
    for (std::size_t i = 0; i < kernel.size(); ++i) {
        if (kernel[i] == 1) continue;
        flip.axes.push_back(std::int64_t(2 + i));
        flip.starts.push_back(-1);
        flip.ends.push_back(std::numeric_limits<std::int64_t>::min());
        flip.steps.push_back(-1);
    }
    if (flip.axes.empty()) return w;
    return c.add(flip, {w});
}

// x with s-1 zeros after every element of each spatial axis: [.., D, ..] -> unsqueeze
// [.., D, 1, ..] -> pad [.., D, s, ..] -> reshape [.., D*s, ..]. The s-1 zeros after the last
// element are left for the caller to use as padding or to crop.
instruction_ref stuff_zeros(node_context& c, instruction_ref x,
                            const std::vector<transposed_axis>& axes) {
    std::vector<std::int64_t> new_axes;
    dims stuffed(x->get_shape().lens().begin(), x->get_shape().lens().begin() + 2);
    std::vector<std::int64_t> ends{0, 0};
    for (std::size_t i = 0; i < axes.size(); ++i) {
        ends.push_back(0);
        stuffed.push_back(std::size_t(axes[i].in));
        if (axes[i].stride == 1) continue;
        new_axes.push_back(std::int64_t(ends.size()));
        ends.push_back(axes[i].stride - 1);
        stuffed.back() *= std::size_t(axes[i].stride);
    }
    if (new_axes.empty()) return x;
    if (!bounded_extent(stuffed))
        c.fail("the strides make the input larger than ", max_tensor_elements_text, " elements");
    x = c.add(op::unsqueeze{new_axes}, {x});
    op::pad p;
    p.pads.assign(ends.size(), 0);
    p.pads.insert(p.pads.end(), ends.begin(), ends.end());
    x = c.add(p, {x});
    return c.add(op::reshape{stuffed}, {x});
}

outputs build_conv_transpose(node_context& c) {
    auto x = c.input(0);
    auto w = c.input(1);
    const auto& xs = x->get_shape();
    const auto& ws = w->get_shape();
    const std::size_t nd = spatial_rank(c, xs);
    const auto kernel = weight_kernel(c, xs, ws);
    const auto group = group_count(c);
    if (ws.lens()[0] != xs.lens()[1])
        c.fail("weights ", to_string(ws), " need one row per input channel of X ", to_string(xs),
               " ([C, M/group, kernel...])");
    if (ws.lens()[0] % group != 0)
        c.fail("the ", ws.lens()[0], " input channels do not divide into ", group, " groups");
    const auto channels_out = mul_size(ws.lens()[1], group);
    if (!channels_out)
        c.fail(ws.lens()[1], " output channels in each of ", group, " groups are more than ",
               max_tensor_elements_text);
    auto axes = spatial_axes(c, xs, kernel, *channels_out);

    // Where the stuffed input (D*s long, its last s-1 zeros included) must grow (a pad of the
    // convolution) or shrink (a slice) at each end.
    std::vector<std::size_t> padding(2 * nd, 0);
    op::slice crop;
    for (std::size_t i = 0; i < nd; ++i) {
        const auto& a = axes[i];
        const auto out =
            need(c, sub_i64(need(c, sub_i64(full_length(c, a), a.pad_begin)), a.pad_end));
        if (out <= 0 || std::size_t(out) > max_tensor_elements)
            c.fail("pads ", a.pad_begin, " and ", a.pad_end, " give spatial axis ", i,
                   " an output length of ", out);
        const auto front = need(c, sub_i64(a.reach, a.pad_begin));
        auto back = need(c, sub_i64(a.reach, a.pad_end));
        back = need(c, add_i64(back, a.output_padding - (a.stride - 1)));
        const auto stuffed = a.in * a.stride;
        // The output then lies wholly in the padding: all bias. Refused rather than modelled.
        if (front <= -stuffed || back <= -stuffed ||
            std::min<std::int64_t>(front, 0) + std::min<std::int64_t>(back, 0) <= -stuffed)
            c.unsupported("pads ", a.pad_begin, " and ", a.pad_end, " that crop all of X along",
                          " spatial axis ", i);
        const std::int64_t cut_front = std::max<std::int64_t>(0, -front);
        const std::int64_t cut_back = std::max<std::int64_t>(0, -back);
        if (cut_front > 0 || cut_back > 0) {
            crop.axes.push_back(std::int64_t(2 + i));
            crop.starts.push_back(cut_front);
            crop.ends.push_back(stuffed - cut_back);
        }
        // Bounded: what is left of the input plus both pads is out + reach.
        padding[i] = std::size_t(std::max<std::int64_t>(0, front));
        padding[nd + i] = std::size_t(std::max<std::int64_t>(0, back));
    }

    auto z = stuff_zeros(c, x, axes);
    if (!crop.axes.empty()) z = c.add(crop, {z});
    std::vector<std::size_t> dilations;
    for (const auto& a : axes)
        dilations.push_back(std::size_t(a.dilation));
    const op::convolution conv{padding, std::vector<std::size_t>(nd, 1), dilations, group};
    auto y = c.add(conv, {z, convolution_weights(c, w, group)});
    return {add_channel_bias(c, y)};
}

} // namespace

void add_conv_transpose_ops(op_table& t) {
    t["ConvTranspose"] = {2, 3, build_conv_transpose};
}

} // namespace conflux::onnx
