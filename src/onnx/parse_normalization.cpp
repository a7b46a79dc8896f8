// BatchNormalization (inference form, and training form through ordinary ops) and
// LayerNormalization; InstanceNormalization is a layer norm over the spatial axes followed by the
// per-channel affine transform, GroupNormalization one over each group's channels and positions.
// LRN (AlexNet-era models) is ordinary ops: a sum of shifted slices of the padded squares;
// MeanVarianceNormalization too.
#include "onnx/node_context.hpp"

#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"

#include <array>

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;
using K = op::elementwise_kind;

// training_mode=1: normalised by the batch's own statistics (mean and biased variance over every
// axis but the channels), which is how weight-standardised convolutions (NFNet, BiT's StdConv)
// are exported: F.batch_norm(weight, None, None, training=True). On constant weights the whole
// computation folds away at compile time. The running statistics come out updated by momentum,
// as ONNX's reference computes them.
outputs build_batch_norm_training(node_context& c, instruction_ref x) {
    const auto& xs = x->get_shape();
    const std::size_t rank = xs.rank(), channels = xs.lens()[1];
    const float epsilon = c.attr_float("epsilon", 1e-5f);
    const double momentum = c.attr_float("momentum", 0.9f);
    for (std::size_t i = 1; i < 5; ++i)
        if (c.input_shape(i).lens() != dims{channels})
            c.fail(std::array{"", "scale", "B", "input_mean", "input_var"}[i], " must have lens [",
                   channels, "], got ", to_string(c.input_shape(i)));
    op::reduce mean;
    mean.kind = op::reduce_kind::mean;
    mean.axes.push_back(0);
    for (std::size_t a = 2; a < rank; ++a)
        mean.axes.push_back(std::int64_t(a));
    auto batch_mean = c.add(mean, {x});
    auto centred = c.elementwise(K::sub, {x, c.broadcast_to(batch_mean, xs.lens())});
    auto batch_var = c.add(mean, {c.elementwise(K::mul, {centred, centred})});
    auto spread = c.elementwise(
        K::sqrt,
        {c.elementwise(K::add, {batch_var, c.broadcast_to(c.scalar(xs.type(), epsilon),
                                                          batch_var->get_shape().lens())})});
    auto normed = c.elementwise(K::div, {centred, c.broadcast_to(spread, xs.lens())});
    std::vector<std::int64_t> spatial;
    for (std::size_t a = 2; a < rank; ++a)
        spatial.push_back(std::int64_t(a - 1));
    auto per_channel = [&](instruction_ref v) {
        auto shaped = spatial.empty() ? v : c.add(op::unsqueeze{spatial}, {v});
        return c.broadcast_to(shaped, xs.lens());
    };
    auto y = c.elementwise(K::add, {c.elementwise(K::mul, {normed, per_channel(c.input(1))}),
                                    per_channel(c.input(2))});
    outputs out{y};
    if (c.output_requested(1) || c.output_requested(2)) {
        std::vector<std::int64_t> reduced{0};
        for (std::size_t a = 2; a < rank; ++a)
            reduced.push_back(std::int64_t(a));
        auto running = [&](instruction_ref input, instruction_ref batch) {
            const dims& lens = input->get_shape().lens();
            const dtype t = input->get_shape().type();
            auto current = c.add(op::squeeze{reduced}, {batch});
            return c.elementwise(
                K::add,
                {c.elementwise(K::mul, {input, c.broadcast_to(c.scalar(t, momentum), lens)}),
                 c.elementwise(K::mul,
                               {current, c.broadcast_to(c.scalar(t, 1 - momentum), lens)})});
        };
        out.push_back(running(c.input(3), batch_mean));
        out.push_back(running(c.input(4), batch_var));
    }
    return out;
}

outputs build_batch_norm(node_context& c) {
    if (c.opset() < 9 && c.attr_int("spatial", 1) == 0) c.unsupported("spatial=0 is not supported");
    auto x = c.input(0);
    if (x->get_shape().rank() < 2)
        c.fail("input X must have rank 2 or more, got ", to_string(x->get_shape()));
    if (c.attr_int("training_mode", 0) != 0) return build_batch_norm_training(c, x);
    auto y = c.add(op::batch_norm{c.attr_float("epsilon", 1e-5f)},
                   {x, c.input(1), c.input(2), c.input(3), c.input(4)});
    // In inference the running statistics pass through unchanged; the saved batch statistics
    // exist only in training.
    outputs out{y, c.input(3), c.input(4)};
    for (std::size_t i = 3; i < c.output_count(); ++i)
        if (c.output_requested(i)) c.unsupported("output ", i, " exists only in training mode");
    return out;
}

// y = x / (bias + alpha / size * sum of x^2 over the `size` channels around c)^beta, the window
// reaching floor((size - 1) / 2) channels down and ceil((size - 1) / 2) up. Computed in f32
// (the squares of an f16 input overflow from 256 on), then converted back.
outputs build_lrn(node_context& c) {
    auto x = c.input(0);
    const auto& xs = x->get_shape();
    if (xs.rank() < 3)
        c.fail("the input must have a batch, channel and spatial axes, got ", to_string(xs));
    const auto size = c.attr_int("size");
    if (!size) c.fail("attribute 'size' is required");
    if (*size < 1) c.fail("size ", *size, " is not positive");
    // One slice and add per channel of the window: AlexNet-era models use 5.
    if (*size > 1024) c.unsupported("windows of ", *size, " channels (more than 1024)");
    const double alpha = c.attr_float("alpha", 1e-4f), beta = c.attr_float("beta", 0.75f),
                 bias = c.attr_float("bias", 1.0f);
    const dtype type = xs.type();
    const bool narrow = type == dtype::f16 || type == dtype::bf16;
    if (!is_floating(type)) c.fail("the input must be floating point, got ", to_string(type));
    auto xf = narrow ? c.convert(x, dtype::f32) : x;
    const dtype ct = xf->get_shape().type();
    auto squares = c.elementwise(K::mul, {xf, xf});
    const std::int64_t below = (*size - 1) / 2, above = *size - 1 - below;
    const std::size_t rank = xs.rank();
    auto windowed = squares;
    if (*size > 1) {
        op::pad p;
        p.pads.assign(2 * rank, 0);
        p.pads[1] = below;
        p.pads[rank + 1] = above;
        auto padded = c.add(p, {squares});
        const auto channels = std::int64_t(xs.lens()[1]);
        windowed = c.add(op::slice{{1}, {0}, {channels}, {}}, {padded});
        for (std::int64_t k = 1; k < *size; ++k)
            windowed = c.elementwise(
                K::add, {windowed, c.add(op::slice{{1}, {k}, {k + channels}, {}}, {padded})});
    }
    auto scaled = c.elementwise(
        K::add, {c.scalar(ct, bias),
                 c.elementwise(K::mul, {c.scalar(ct, alpha / double(*size)), windowed})});
    auto y = c.elementwise(K::div, {xf, c.elementwise(K::pow, {scaled, c.scalar(ct, beta)})});
    return {narrow ? c.convert(y, type) : y};
}

// x's mean over `axes` (kept, as 1s), x minus it, and the variance (the centred squares' mean).
struct moments {
    instruction_ref mean, centred, variance;
};
moments moments_of(node_context& c, instruction_ref x, std::vector<std::int64_t> axes) {
    op::reduce mean;
    mean.kind = op::reduce_kind::mean;
    mean.axes = std::move(axes);
    auto m = c.add(mean, {x});
    auto centred = c.elementwise(K::sub, {x, c.broadcast_to(m, x->get_shape().lens())});
    return {m, centred, c.add(mean, {c.elementwise(K::mul, {centred, centred})})};
}

// MeanVarianceNormalization: (x - mean) / (sqrt(variance) + 1e-9) over `axes` (default batch
// and spatial axes), the variance taken of the centred values.
outputs build_mean_variance_norm(node_context& c) {
    auto x = c.input(0);
    const auto& xs = x->get_shape();
    const auto m = moments_of(c, x, c.normalize_axes(c.attr_ints("axes", {0, 2, 3}), xs.rank()));
    auto deviation =
        c.elementwise(K::add, {c.elementwise(K::sqrt, {m.variance}), c.scalar(xs.type(), 1e-9)});
    return {c.elementwise(K::div, {m.centred, c.broadcast_to(deviation, xs.lens())})};
}

// LayerNormalization's Mean and InvStdDev (what training exports keep): the statistics over
// the normalised axes, kept as 1s, computed and given in stash_type (f32 by default).
outputs layer_norm_statistics(node_context& c, instruction_ref x, std::size_t axis, float epsilon) {
    const auto stash = c.attr_int("stash_type", 1);
    const auto type = to_dtype(int(stash));
    if (!type || !is_floating(*type))
        c.fail("stash_type ", stash, " (", onnx_type_name(int(stash)),
               ") is not a floating-point type");
    std::vector<std::int64_t> axes;
    for (std::size_t a = axis; a < x->get_shape().rank(); ++a)
        axes.push_back(std::int64_t(a));
    const auto m = moments_of(c, c.convert(x, *type), axes);
    auto deviation = c.elementwise(
        K::sqrt, {c.elementwise(K::add, {m.variance, c.scalar(*type, double(epsilon))})});
    return {m.mean, c.elementwise(K::reciprocal, {deviation})};
}

outputs build_layer_norm(node_context& c) {
    auto x = c.input(0);
    auto axis = c.normalize_axis(c.attr_int("axis", -1), x->get_shape().rank());
    // ONNX gives X, Scale and B one type (the op itself also takes f32 parameters for 16-bit X).
    for (std::size_t i = 1; i < 3; ++i)
        if (c.has_input(i) && c.input_shape(i).type() != x->get_shape().type())
            c.fail(i == 1 ? "Scale" : "B", " is ", to_string(c.input_shape(i).type()), " but X is ",
                   to_string(x->get_shape().type()));
    std::vector<instruction_ref> inputs{x, c.input(1)};
    if (c.has_input(2)) inputs.push_back(c.input(2));
    const float epsilon = c.attr_float("epsilon", 1e-5f);
    outputs y = {c.add(op::layer_norm{axis, epsilon}, inputs)};
    if (c.output_requested(1) || c.output_requested(2)) {
        auto statistics = layer_norm_statistics(c, x, std::size_t(axis), epsilon);
        y.insert(y.end(), statistics.begin(), statistics.end());
    }
    return y;
}

// x * scale + bias, scale and bias holding one value per index of axis 1 of x (of rank `rank`).
instruction_ref per_channel_affine(node_context& c, instruction_ref x, std::size_t rank,
                                   instruction_ref scale, instruction_ref bias) {
    std::vector<std::int64_t> axes;
    for (std::size_t a = 2; a < rank; ++a)
        axes.push_back(std::int64_t(a - 1));
    return c.elementwise(K::add, {c.elementwise(K::mul, {x, c.add(op::unsqueeze{axes}, {scale})}),
                                  c.add(op::unsqueeze{axes}, {bias})});
}

outputs build_instance_norm(node_context& c) {
    auto x = c.input(0);
    const auto& xs = x->get_shape();
    if (xs.rank() < 3) c.fail("input must have rank 3 or more, got ", to_string(xs));
    const auto channels = xs.lens()[1];
    for (std::size_t i : {1u, 2u})
        if (c.input_shape(i).lens() != dims{channels})
            c.fail("scale and B must have lens [", channels, "], got ",
                   to_string(c.input_shape(i)));
    dims inner(xs.lens().begin() + 2, xs.lens().end());
    auto ones = c.broadcast_to(c.scalar(xs.type(), 1), inner);
    auto normed = c.add(op::layer_norm{2, c.attr_float("epsilon", 1e-5f)}, {x, ones});
    return {per_channel_affine(c, normed, xs.rank(), c.input(1), c.input(2))};
}

// GroupNormalization (opsets 18 and 21): each batch entry's channels in num_groups groups, each
// group normalised over its channels and positions (a layer norm of X as [N, G, C/G * spatial]),
// then the affine transform: per group at opset 18, whose scale and bias have lens [G], per
// channel from opset 21 (lens [C]). stash_type (21) asks for f32 statistics; layer_norm keeps
// them in f32 for every input type.
outputs build_group_norm(node_context& c) {
    auto x = c.input(0);
    const auto& xs = x->get_shape();
    if (xs.rank() < 3) c.fail("input X must have rank 3 or more, got ", to_string(xs));
    const auto num_groups = c.attr_int("num_groups");
    if (!num_groups) c.fail("attribute 'num_groups' is required");
    const std::size_t batch = xs.lens()[0], channels = xs.lens()[1];
    if (*num_groups <= 0 || channels % std::size_t(*num_groups) != 0)
        c.fail("num_groups ", *num_groups, " does not divide the ", channels, " channels of X ",
               to_string(xs));
    const std::size_t groups = std::size_t(*num_groups);
    const bool per_group = c.opset() < 21;
    const std::size_t affine = per_group ? groups : channels;
    for (std::size_t i : {1u, 2u}) {
        const char* name = i == 1 ? "scale" : "bias";
        if (c.input_shape(i).lens() != dims{affine})
            c.fail(name, " must have lens [", affine, "] (", per_group ? "num_groups" : "channels",
                   " at opset ", c.opset(), "), got ", to_string(c.input_shape(i)));
        if (c.input_shape(i).type() != xs.type())
            c.fail(name, " is ", to_string(c.input_shape(i).type()), " but X is ",
                   to_string(xs.type()));
    }
    if (xs.elements() == 0) return {x};
    const std::size_t inner = xs.elements() / (batch * groups);
    auto grouped = c.add(op::reshape{{batch, groups, inner}}, {x});
    auto ones = c.broadcast_to(c.scalar(xs.type(), 1), {inner});
    auto normed = c.add(op::layer_norm{2, c.attr_float("epsilon", 1e-5f)}, {grouped, ones});
    // Per group: [G] against axis 1 of the grouped [N, G, C/G * spatial].
    if (per_group)
        return {c.add(op::reshape{xs.lens()},
                      {per_channel_affine(c, normed, 3, c.input(1), c.input(2))})};
    return {per_channel_affine(c, c.add(op::reshape{xs.lens()}, {normed}), xs.rank(), c.input(1),
                               c.input(2))};
}

} // namespace

void add_normalization_ops(op_table& t) {
    t["GroupNormalization"] = {3, 3, build_group_norm};
    t["LRN"] = {1, 1, build_lrn};
    t["MeanVarianceNormalization"] = {1, 1, build_mean_variance_norm};
    t["BatchNormalization"] = {5, 5, build_batch_norm};
    t["LayerNormalization"] = {2, 3, build_layer_norm};
    t["InstanceNormalization"] = {3, 3, build_instance_norm};
}

} // namespace conflux::onnx
