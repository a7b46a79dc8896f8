#include "onnx/conv_attributes.hpp"

#include "conflux/ops/views.hpp"

namespace conflux::onnx {

std::size_t spatial_rank(node_context& c, const shape& x) {
    if (x.rank() < 3)
        c.fail("input X must have rank 3 or more ([N, C, spatial...]), got ", to_string(x));
    return x.rank() - 2;
}

dims spatial_lens(const shape& x) {
    return {x.lens().begin() + 2, x.lens().end()};
}

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

std::size_t group_count(node_context& c) {
    auto group = c.attr_int("group", 1);
    if (group <= 0) c.fail("attribute 'group' must be positive, got ", group);
    return std::size_t(group);
}

std::vector<std::int64_t> explicit_pads(node_context& c, std::size_t nd) {
    auto given = c.attr_ints("pads", std::vector<std::int64_t>(2 * nd, 0));
    if (given.size() != 2 * nd)
        c.fail("attribute 'pads' needs ", 2 * nd, " values, got ", given.size());
    return given;
}

dims weight_kernel(node_context& c, const shape& x, const shape& w) {
    if (w.rank() != x.rank())
        c.fail("weights ", to_string(w), " must have the rank of X ", to_string(x));
    dims kernel(w.lens().begin() + 2, w.lens().end());
    if (auto ks = c.attr_ints("kernel_shape")) {
        dims given(ks->begin(), ks->end());
        if (given != kernel)
            c.fail("kernel_shape [", to_string(given), "] does not match the weights ",
                   to_string(w));
    }
    return kernel;
}

instruction_ref add_channel_bias(node_context& c, instruction_ref y) {
    if (!c.has_input(2)) return y;
    auto b = c.input(2);
    const auto& bs = b->get_shape();
    const std::size_t channels = y->get_shape().lens()[1];
    if (bs.rank() != 1 || bs.lens()[0] != channels)
        c.fail("bias ", to_string(bs), " must be 1-D with one value per output channel (", channels,
               ")");
    // [K] -> [1, K, 1, ...] so that it broadcasts along the channel axis.
    std::vector<std::int64_t> axes{0};
    for (std::size_t i = 2; i < y->get_shape().rank(); ++i)
        axes.push_back(std::int64_t(i));
    auto b_nd = c.add(op::unsqueeze{axes}, {b});
    return c.elementwise(op::elementwise_kind::add, {y, b_nd});
}

} // namespace conflux::onnx
