// Conv -> op::convolution (+ bias add); MaxPool / AveragePool / Global*Pool -> op::pooling.
// Both share the spatial attribute handling: strides, dilations and auto_pad.
#include "onnx/conv_attributes.hpp"

#include "conflux/ops/convolution.hpp"
#include "conflux/ops/pooling.hpp"

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;

// Begins then ends, from `pads` or from auto_pad. SAME_* pads so that out = ceil(in / stride);
// SAME_UPPER puts the odd extra pixel at the end, SAME_LOWER at the beginning.
std::vector<std::size_t> spatial_padding(node_context& c, const dims& in, const dims& kernel,
                                         const std::vector<std::size_t>& stride,
                                         const std::vector<std::size_t>& dilation) {
    const std::size_t nd = in.size();
    auto auto_pad = c.attr_string("auto_pad", "NOTSET");
    std::vector<std::size_t> pads(2 * nd, 0);
    if (auto_pad == "NOTSET") {
        auto given = explicit_pads(c, nd);
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

outputs build_conv(node_context& c) {
    auto x = c.input(0);
    auto w = c.input(1);
    const auto& xs = x->get_shape();
    auto nd = spatial_rank(c, xs);
    auto kernel = weight_kernel(c, xs, w->get_shape());
    auto strides = positive_ints(c, "strides", nd);
    auto dilations = positive_ints(c, "dilations", nd);
    auto pads = spatial_padding(c, spatial_lens(xs), kernel, strides, dilations);
    auto y = c.add(op::convolution{pads, strides, dilations, group_count(c)}, {x, w});
    return {add_channel_bias(c, y)};
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
