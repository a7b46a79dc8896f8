// Col2Im (opset 18; what `F.fold` exports to, as in timm's VOLO): the blocks of a [N, C * B, L]
// input summed back into an image. Built from views, pads and adds: for each offset inside the
// block, that offset's [N, C, L_0, ..] slab is spread out by the strides (each value followed by
// stride - 1 zeros), placed at offset * dilation in the padded image, and the slabs are added;
// the image is the padded sum without its pads. image_shape and block_shape must be constants.
#include "onnx/node_context.hpp"

#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/util/checked_size.hpp"

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;
using K = op::elementwise_kind;

// x with every position along `axis` followed by stride - 1 zeros.
instruction_ref spread(node_context& c, instruction_ref x, std::size_t axis, std::size_t stride) {
    if (stride == 1) return x;
    const dims lens = x->get_shape().lens();
    auto widened = c.add(op::unsqueeze{{std::int64_t(axis + 1)}}, {x});
    op::pad p;
    p.pads.assign(2 * (lens.size() + 1), 0);
    p.pads[lens.size() + 1 + axis + 1] = std::int64_t(stride - 1);
    dims merged = lens;
    merged[axis] *= stride;
    return c.add(op::reshape{merged}, {c.add(p, {widened})});
}

// x[..., starts[k] .. ends[k] on spatial axis 2 + k, ...].
instruction_ref spatial_slice(node_context& c, instruction_ref x, std::vector<std::int64_t> starts,
                              std::vector<std::int64_t> ends) {
    std::vector<std::int64_t> axes(starts.size());
    for (std::size_t k = 0; k < axes.size(); ++k)
        axes[k] = std::int64_t(2 + k);
    return c.add(op::slice{axes, std::move(starts), std::move(ends), {}}, {x});
}

outputs build_col2im(node_context& c) {
    auto x = c.input(0);
    const dims& xl = x->get_shape().lens();
    const auto image = c.constant_ints(1, "image_shape");
    const auto block = c.constant_ints(2, "block_shape");
    const std::size_t n = image.size();
    if (n == 0 || block.size() != n)
        c.fail("image_shape and block_shape must name the same spatial axes, got ", image.size(),
               " and ", block.size(), " values");
    if (xl.size() != 3)
        c.fail("the input must be [N, C * block size, blocks], got ", to_string(xl));
    const auto dilations = c.attr_ints("dilations", std::vector<std::int64_t>(n, 1));
    const auto strides = c.attr_ints("strides", std::vector<std::int64_t>(n, 1));
    const auto pads = c.attr_ints("pads", std::vector<std::int64_t>(2 * n, 0));
    if (dilations.size() != n || strides.size() != n || pads.size() != 2 * n)
        c.fail("dilations and strides need ", n, " values and pads ", 2 * n);
    std::size_t block_size = 1, blocks = 1;
    dims padded(n), counts(n);
    for (std::size_t k = 0; k < n; ++k) {
        if (image[k] < 1 || block[k] < 1 || dilations[k] < 1 || strides[k] < 1 || pads[k] < 0 ||
            pads[n + k] < 0 || image[k] > (1 << 24) || block[k] > (1 << 12) ||
            dilations[k] > (1 << 12) || strides[k] > (1 << 12) || pads[k] > (1 << 24) ||
            pads[n + k] > (1 << 24))
            c.fail("axis ", k, ": image ", image[k], ", block ", block[k], ", dilation ",
                   dilations[k], ", stride ", strides[k], ", pads ", pads[k], " and ", pads[n + k],
                   " are not all positive (pads non-negative) and in range");
        const std::int64_t p = image[k] + pads[k] + pads[n + k];
        const std::int64_t reach = dilations[k] * (block[k] - 1) + 1;
        if (p < reach)
            c.fail("axis ", k, ": a block reaches ", reach, " positions, the padded image has ", p);
        padded[k] = std::size_t(p);
        counts[k] = std::size_t((p - reach) / strides[k] + 1);
        block_size *= std::size_t(block[k]);
        if (block_size > 4096) c.unsupported("blocks of more than 4096 positions");
        const auto more = mul_size(blocks, counts[k]);
        if (!more) c.fail("the blocks' count overflows");
        blocks = *more;
    }
    if (xl[1] % block_size != 0 || xl[2] != blocks)
        c.fail("the input [", to_string(xl), "] must be [N, C * ", block_size, ", ", blocks,
               "] for these blocks");
    const std::size_t channels = xl[1] / block_size;
    // [N, C, b_0 .. b_n-1, L_0 .. L_n-1]
    dims split = {xl[0], channels};
    for (auto b : block)
        split.push_back(std::size_t(b));
    split.insert(split.end(), counts.begin(), counts.end());
    auto columns = c.add(op::reshape{split}, {x});
    dims slab_lens = {xl[0], channels};
    slab_lens.insert(slab_lens.end(), counts.begin(), counts.end());

    instruction_ref sum = nullptr;
    std::vector<std::int64_t> offset(n, 0);
    for (std::size_t i = 0; i < block_size; ++i) {
        std::size_t rest = i;
        for (std::size_t k = n; k-- > 0;) {
            offset[k] = std::int64_t(rest % std::size_t(block[k]));
            rest /= std::size_t(block[k]);
        }
        std::vector<std::int64_t> next(n);
        for (std::size_t k = 0; k < n; ++k)
            next[k] = offset[k] + 1;
        auto slab = c.add(op::reshape{slab_lens}, {spatial_slice(c, columns, offset, next)});
        op::pad place;
        place.pads.assign(2 * (n + 2), 0);
        std::vector<std::int64_t> keep(n);
        bool cropped = false;
        for (std::size_t k = 0; k < n; ++k) {
            slab = spread(c, slab, 2 + k, std::size_t(strides[k]));
            const std::int64_t begin = offset[k] * dilations[k];
            const std::int64_t len = std::int64_t(counts[k]) * strides[k];
            // The spread's trailing zeros may reach past the padded image: only zeros are cut.
            keep[k] = std::min(len, std::int64_t(padded[k]) - begin);
            cropped = cropped || keep[k] < len;
            place.pads[2 + k] = begin;
            place.pads[n + 2 + 2 + k] = std::int64_t(padded[k]) - begin - keep[k];
        }
        if (cropped) slab = spatial_slice(c, slab, std::vector<std::int64_t>(n, 0), keep);
        auto placed = c.add(place, {slab});
        sum = sum == nullptr ? placed : c.elementwise(K::add, {sum, placed});
    }
    std::vector<std::int64_t> starts(n), ends(n);
    for (std::size_t k = 0; k < n; ++k) {
        starts[k] = pads[k];
        ends[k] = pads[k] + image[k];
    }
    return {spatial_slice(c, sum, starts, ends)};
}

} // namespace

void add_col2im_ops(op_table& t) {
    t["Col2Im"] = {3, 3, build_col2im};
}

} // namespace conflux::onnx
