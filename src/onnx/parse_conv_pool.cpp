// Conv -> op::convolution (+ bias add); MaxPool / AveragePool / Global*Pool -> op::pooling.
// Both share the spatial attribute handling: strides, dilations and auto_pad.
#include "onnx/node_context.hpp"

#include "conflux/ops/convolution.hpp"
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/views.hpp"

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;

std::vector<std::size_t> positive_ints(node_context& c, std::string_view name, std::size_t nd) {
    auto values = c.attr_ints(name, std::vector<std::int64_t>(nd, 1));
    if (values.size() != nd)
        c.fail("attribute '", name, "' needs ", nd, " values, got ", values.size());
    std::vector<std::size_t> out;
    for (auto v : values) {
        if (v <= 0) c.fail("attribute '", name, "' must be positive, got ", v);
        out.push_back(std::size_t(v));
    }
    return out;
}

// Begins then ends, from `pads` or from auto_pad. SAME_* pads so that out = ceil(in / stride);
// SAME_UPPER puts the odd extra pixel at the end, SAME_LOWER at the beginning.
std::vector<std::size_t> spatial_padding(node_context& c, const dims& in, const dims& kernel,
                                         const std::vector<std::size_t>& stride,
                                         const std::vector<std::size_t>& dilation) {
    const std::size_t nd = in.size();
    auto auto_pad = c.attr_string("auto_pad", "NOTSET");
    std::vector<std::size_t> pads(2 * nd, 0);
    if (auto_pad == "NOTSET") {
        auto given = c.attr_ints("pads", std::vector<std::int64_t>(2 * nd, 0));
        if (given.size() != 2 * nd)
            c.fail("attribute 'pads' needs ", 2 * nd, " values, got ", given.size());
        for (std::size_t i = 0; i < given.size(); ++i) {
            if (given[i] < 0) c.unsupported("negative pads are not supported");
            pads[i] = std::size_t(given[i]);
        }
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        for (std::size_t i = 0; i < nd; ++i) {
            if (kernel[i] == 0) c.fail("the kernel has an empty axis");
            std::size_t out = (in[i] + stride[i] - 1) / stride[i];
            std::size_t needed =
                (out == 0 ? 0 : (out - 1) * stride[i]) + (kernel[i] - 1) * dilation[i] + 1;
            std::size_t total = needed > in[i] ? needed - in[i] : 0;
            std::size_t small = total / 2;
            std::size_t big = total - small;
            bool upper = auto_pad == "SAME_UPPER";
            pads[i] = upper ? small : big;
            pads[nd + i] = upper ? big : small;
        }
    } else if (auto_pad != "VALID") {
        c.unsupported("auto_pad '", auto_pad, "'");
    }
    return pads;
}

std::size_t spatial_rank(node_context& c, const shape& x) {
    if (x.rank() < 3)
        c.fail("input X must have rank 3 or more ([N, C, spatial...]), got ", to_string(x));
    return x.rank() - 2;
}

dims spatial_lens(const shape& x) {
    return {x.lens().begin() + 2, x.lens().end()};
}

outputs build_conv(node_context& c) {
    auto x = c.input(0);
    auto w = c.input(1);
    const auto& xs = x->get_shape();
    const auto& ws = w->get_shape();
    auto nd = spatial_rank(c, xs);
    if (ws.rank() != xs.rank())
        c.fail("weights ", to_string(ws), " must have the rank of X ", to_string(xs));
    dims kernel(ws.lens().begin() + 2, ws.lens().end());
    if (auto ks = c.attr_ints("kernel_shape")) {
        dims given(ks->begin(), ks->end());
        if (given != kernel)
            c.fail("kernel_shape [", to_string(given), "] does not match the weights ",
                   to_string(ws));
    }
    auto strides = positive_ints(c, "strides", nd);
    auto dilations = positive_ints(c, "dilations", nd);
    auto group = c.attr_int("group", 1);
    if (group <= 0) c.fail("attribute 'group' must be positive, got ", group);
    auto pads = spatial_padding(c, spatial_lens(xs), kernel, strides, dilations);

    auto y = c.add(op::convolution{pads, strides, dilations, std::size_t(group)}, {x, w});
    if (c.has_input(2)) {
        auto b = c.input(2);
        const auto& bs = b->get_shape();
        if (bs.rank() != 1 || bs.lens()[0] != y->get_shape().lens()[1])
            c.fail("bias ", to_string(bs), " must be 1-D with one value per output channel (",
                   y->get_shape().lens()[1], ")");
        // [K] -> [1, K, 1, ...] so that it broadcasts along the channel axis.
        std::vector<std::int64_t> axes{0};
        for (std::size_t i = 0; i < nd; ++i)
            axes.push_back(std::int64_t(i + 2));
        auto b_nd = c.add(op::unsqueeze{axes}, {b});
        y = c.elementwise(op::elementwise_kind::add, {y, b_nd});
    }
    return {y};
}

outputs build_pool(node_context& c, op::pooling_mode mode) {
    auto x = c.input(0);
    const auto& xs = x->get_shape();
    auto nd = spatial_rank(c, xs);
    if (mode == op::pooling_mode::max && c.output_requested(1))
        c.unsupported("the Indices output is not supported");
    auto ks = c.attr_ints("kernel_shape");
    if (!ks) c.fail("attribute 'kernel_shape' is required");
    if (ks->size() != nd) c.fail("kernel_shape needs ", nd, " values, got ", ks->size());
    std::vector<std::size_t> kernel;
    for (auto k : *ks) {
        if (k <= 0) c.fail("kernel_shape must be positive, got ", k);
        kernel.push_back(std::size_t(k));
    }
    op::pooling p;
    p.mode = mode;
    p.lengths = kernel;
    p.stride = positive_ints(c, "strides", nd);
    p.dilation = positive_ints(c, "dilations", nd);
    p.padding = spatial_padding(c, spatial_lens(xs), kernel, p.stride, p.dilation);
    p.ceil_mode = c.attr_int("ceil_mode", 0) != 0;
    if (mode == op::pooling_mode::average)
        p.count_include_pad = c.attr_int("count_include_pad", 0) != 0;
    return {c.add(p, {x})};
}

outputs build_global_pool(node_context& c, op::pooling_mode mode) {
    auto x = c.input(0);
    const auto& xs = x->get_shape();
    auto nd = spatial_rank(c, xs);
    op::pooling p;
    p.mode = mode;
    p.lengths = spatial_lens(xs);
    p.stride.assign(nd, 1);
    p.dilation.assign(nd, 1);
    p.padding.assign(2 * nd, 0);
    return {c.add(p, {x})};
}

} // namespace

void add_conv_pool_ops(op_table& t) {
    using M = op::pooling_mode;
    t["Conv"] = {2, 3, build_conv};
    t["MaxPool"] = {1, 1, [](node_context& c) { return build_pool(c, M::max); }};
    t["AveragePool"] = {1, 1, [](node_context& c) { return build_pool(c, M::average); }};
    t["GlobalMaxPool"] = {1, 1, [](node_context& c) { return build_global_pool(c, M::max); }};
    t["GlobalAveragePool"] = {1, 1,
                              [](node_context& c) { return build_global_pool(c, M::average); }};
}

} // namespace conflux::onnx
