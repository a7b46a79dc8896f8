// QuantizeLinear and DequantizeLinear, as the QDQ models that onnxruntime's quantisation tools
// write hold them, imported as ordinary ops computed in f32: int8 weights with their
// DequantizeLinear fold into float weights at compile time, and a QuantizeLinear ->
// DequantizeLinear pair on activations stays the fake quantisation it describes (divided by the
// scale, rounded half to even, offset, clamped to the integer type), so the results are the
// quantised model's values, computed at float speed. Blocked quantisation (opset 21's
// block_size) and the 4-, 16-bit and float8 types are refused with the reason.
#include "onnx/node_context.hpp"

#include "conflux/ops/views.hpp"

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;
using K = op::elementwise_kind;

// A scale or zero point as an f32 operand that broadcasts against x: one value for the whole
// tensor, or one per position along the `axis` attribute (which only then must name an axis).
instruction_ref along_axis(node_context& c, instruction_ref v, const shape& xs,
                           std::string_view what) {
    const shape& vs = v->get_shape();
    auto f = c.convert(v, dtype::f32);
    if (vs.elements() == 1 && vs.rank() <= 1) return c.add(op::reshape{{}}, {f});
    const auto axis = c.normalize_axis(c.attr_int("axis", 1), xs.rank());
    const auto a = std::size_t(axis);
    if (vs.rank() != 1 || vs.lens()[0] != xs.lens()[a])
        c.fail(what, " must hold one value, or one per position of axis ", axis, " (", xs.lens()[a],
               "), got ", to_string(vs));
    dims lens(xs.rank(), 1);
    lens[a] = vs.lens()[0];
    return c.add(op::reshape{lens}, {f});
}

void refuse_blocks(node_context& c) {
    if (c.attr_int("block_size", 0) != 0)
        c.unsupported("blocked quantisation (block_size ", c.attr_int("block_size", 0),
                      ") is not supported");
}

outputs build_dequantize(node_context& c) {
    refuse_blocks(c);
    auto x = c.input(0);
    const shape& xs = x->get_shape();
    auto scale = along_axis(c, c.input(1), xs, "x_scale");
    auto values = c.convert(x, dtype::f32);
    if (c.has_input(2)) {
        if (c.input_shape(2).type() != xs.type())
            c.fail("x_zero_point is ", to_string(c.input_shape(2).type()), " but x is ",
                   to_string(xs.type()));
        values = c.elementwise(K::sub, {values, along_axis(c, c.input(2), xs, "x_zero_point")});
    }
    auto y = c.elementwise(K::mul, {values, scale});
    return {c.convert(y, c.input_shape(1).type())};
}

outputs build_quantize(node_context& c) {
    refuse_blocks(c);
    auto x = c.input(0);
    const shape& xs = x->get_shape();
    // The integer type: the zero point's, else opset 21's output_dtype, else uint8.
    dtype type = dtype::u8;
    if (c.has_input(2)) {
        type = c.input_shape(2).type();
    } else if (auto given = c.attr_int("output_dtype"); given && *given != 0) {
        const auto t = to_dtype(int(*given));
        if (!t) c.unsupported("output_dtype ", onnx_type_name(int(*given)));
        type = *t;
    }
    if (type != dtype::i8 && type != dtype::u8)
        c.unsupported("quantising to ", to_string(type), " (int8 and uint8 are supported)");
    const double lo = type == dtype::i8 ? -128 : 0, hi = type == dtype::i8 ? 127 : 255;
    auto scaled =
        c.elementwise(K::div, {c.convert(x, dtype::f32), along_axis(c, c.input(1), xs, "y_scale")});
    auto q = c.elementwise(K::round, {scaled});
    if (c.has_input(2))
        q = c.elementwise(K::add, {q, along_axis(c, c.input(2), xs, "y_zero_point")});
    q = c.elementwise(K::clip, {q, c.scalar(dtype::f32, lo), c.scalar(dtype::f32, hi)});
    return {c.convert(q, type)};
}

} // namespace

void add_quantize_ops(op_table& t) {
    t["DequantizeLinear"] = {2, 3, build_dequantize};
    t["QuantizeLinear"] = {2, 3, build_quantize};
}

} // namespace conflux::onnx
