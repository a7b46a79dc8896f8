// GridSample (opset 16 and later, 2-D; RT-DETR's deformable attention, spatial transformers,
// optical flow) built from elementwise ops and GatherElements: the grid's normalised
// coordinates are mapped to pixel positions, each neighbour's value is gathered from the
// [N, C, H * W] input by its flat index, and the neighbours are weighted (bilinear) or one is
// taken (nearest). The arithmetic is f32; positions outside the image read zeros ("zeros") or
// are clamped to the edge first ("border"). Bicubic sampling and reflection padding are refused
// with the reason.
#include "onnx/node_context.hpp"

#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/views.hpp"

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;
using K = op::elementwise_kind;

struct sampler {
    node_context& c;
    instruction_ref flat; // the input as [N, C, H * W]
    dims lens;            // [N, C, P]: P the grid's positions
    double height, width;

    instruction_ref f32(double v) const { return c.scalar(dtype::f32, v); }

    // The value at integer-valued f32 positions (x, y), [N, 1, P] each: zero outside the image.
    instruction_ref at(instruction_ref x, instruction_ref y) const {
        auto within = [&](instruction_ref v, double last) {
            return c.elementwise(K::logical_and, {c.elementwise(K::greater_equal, {v, f32(0)}),
                                                  c.elementwise(K::less_equal, {v, f32(last)})});
        };
        auto inside = c.elementwise(K::logical_and, {within(x, width - 1), within(y, height - 1)});
        auto xi = c.elementwise(K::clip, {x, f32(0), f32(width - 1)});
        auto yi = c.elementwise(K::clip, {y, f32(0), f32(height - 1)});
        auto index = c.convert(c.elementwise(K::add, {c.elementwise(K::mul, {yi, f32(width)}), xi}),
                               dtype::i64);
        auto value = c.convert(c.add(op::gather_elements{2}, {flat, c.broadcast_to(index, lens)}),
                               dtype::f32);
        return c.elementwise(K::where, {inside, value, f32(0)});
    }
};

outputs build_grid_sample(node_context& c) {
    auto x = c.input(0);
    auto grid = c.input(1);
    const dims& xl = x->get_shape().lens();
    const dims& gl = grid->get_shape().lens();
    if (xl.size() != 4)
        c.unsupported("GridSample over ", xl.size() - std::min<std::size_t>(xl.size(), 2),
                      " spatial axes (2 are supported)");
    if (gl.size() != 4 || gl[3] != 2 || gl[0] != xl[0])
        c.fail("grid must be [N, H_out, W_out, 2] with the input's N (", xl[0], "), got ",
               to_string(gl));
    if (!is_floating(x->get_shape().type()) || !is_floating(grid->get_shape().type()))
        c.fail("X and grid must be floating point");
    const std::string mode = c.attr_string("mode", c.opset() < 20 ? "bilinear" : "linear");
    const bool nearest = mode == "nearest";
    if (!nearest && mode != "bilinear" && mode != "linear")
        c.unsupported("mode '", mode, "' (bilinear and nearest are supported)");
    const std::string padding = c.attr_string("padding_mode", "zeros");
    if (padding != "zeros" && padding != "border")
        c.unsupported("padding_mode '", padding, "' (zeros and border are supported)");
    const bool align = c.attr_int("align_corners", 0) != 0;

    const std::size_t positions = gl[1] * gl[2];
    sampler s{c,
              c.add(op::reshape{{xl[0], xl[1], xl[2] * xl[3]}}, {x}),
              {xl[0], xl[1], positions},
              double(xl[2]),
              double(xl[3])};
    auto g = c.convert(grid, dtype::f32);
    // A coordinate of the grid in pixels, [N, 1, P]; NaN goes outside the image.
    auto unnormalise = [&](std::int64_t component, double len) {
        auto v = c.add(op::reshape{{gl[0], 1, positions}},
                       {c.add(op::slice{{3}, {component}, {component + 1}, {}}, {g})});
        // PyTorch's order: (v + 1) * (len - 1) / 2 aligned, ((v + 1) * len - 1) / 2 not.
        auto shifted = c.elementwise(K::add, {v, s.f32(1)});
        auto pixels = align ? c.elementwise(K::mul, {shifted, s.f32((len - 1) / 2)})
                            : c.elementwise(K::mul, {shifted, s.f32(len)});
        if (!align)
            pixels = c.elementwise(K::div, {c.elementwise(K::sub, {pixels, s.f32(1)}), s.f32(2)});
        pixels = c.elementwise(K::where, {c.elementwise(K::isnan, {pixels}), s.f32(-2), pixels});
        if (padding == "border")
            pixels = c.elementwise(K::clip, {pixels, s.f32(0), s.f32(len - 1)});
        return pixels;
    };
    auto ix = unnormalise(0, s.width);
    auto iy = unnormalise(1, s.height);
    instruction_ref out;
    if (nearest) {
        out = s.at(c.elementwise(K::round, {ix}), c.elementwise(K::round, {iy}));
    } else {
        auto x0 = c.elementwise(K::floor, {ix});
        auto y0 = c.elementwise(K::floor, {iy});
        auto x1 = c.elementwise(K::add, {x0, s.f32(1)});
        auto y1 = c.elementwise(K::add, {y0, s.f32(1)});
        auto wx1 = c.elementwise(K::sub, {ix, x0});
        auto wy1 = c.elementwise(K::sub, {iy, y0});
        auto wx0 = c.elementwise(K::sub, {s.f32(1), wx1});
        auto wy0 = c.elementwise(K::sub, {s.f32(1), wy1});
        auto term = [&](instruction_ref xc, instruction_ref yc, instruction_ref wx,
                        instruction_ref wy) {
            return c.elementwise(K::mul, {s.at(xc, yc), c.elementwise(K::mul, {wx, wy})});
        };
        out = c.elementwise(
            K::add, {c.elementwise(K::add, {term(x0, y0, wx0, wy0), term(x1, y0, wx1, wy0)}),
                     c.elementwise(K::add, {term(x0, y1, wx0, wy1), term(x1, y1, wx1, wy1)})});
    }
    out = c.add(op::reshape{{xl[0], xl[1], gl[1], gl[2]}}, {out});
    return {c.convert(out, x->get_shape().type())};
}

} // namespace

void add_grid_sample_ops(op_table& t) {
    t["GridSample"] = {2, 2, build_grid_sample};
}

} // namespace conflux::onnx
