// Ops whose result is known at import time: Constant, and the shape arithmetic that models
// exported with dynamic shapes carry (Shape, Size, ConstantOfShape, Range, EyeLike). Shapes are
// static in Conflux, so these always become literals and the ops never reach the program.
#include "onnx/node_context.hpp"

#include "conflux/util/checked_size.hpp"

#include <cmath>
#include <cstring>

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;
// GCC and Clang's 128-bit integer; __extension__ keeps -Wpedantic quiet about it.
__extension__ typedef __int128 int128;

// Results built here have no size limit of their own; stop absurd requests before allocating.
constexpr std::size_t max_generated_elements = std::size_t{1} << 31;

outputs build_shape(node_context& c) {
    const auto& lens = c.input_shape(0).lens();
    auto rank = std::int64_t(lens.size());
    auto clamp = [&](std::int64_t v) {
        if (v < 0) v += rank;
        return std::clamp<std::int64_t>(v, 0, rank);
    };
    auto start = clamp(c.attr_int("start", 0));
    auto end = clamp(c.attr_int("end", rank));
    std::vector<std::int64_t> values;
    for (auto i = start; i < end; ++i)
        values.push_back(std::int64_t(lens[std::size_t(i)]));
    return {c.add_literal(from_vector(dtype::i64, {values.size()}, values))};
}

outputs build_size(node_context& c) {
    std::vector<std::int64_t> n{std::int64_t(c.input_shape(0).elements())};
    return {c.add_literal(from_vector(dtype::i64, {}, n))};
}

outputs build_constant_of_shape(node_context& c) {
    auto spec = c.constant_ints(0, "input");
    dims lens;
    for (auto d : spec) {
        if (d < 0) c.fail("shape has negative dim ", d);
        lens.push_back(std::size_t(d));
    }
    // bounded_extent counts empty axes as 1, so [0, 2^62] is refused too: its strides would wrap.
    if (!bounded_extent(lens, max_generated_elements))
        c.fail("the result [", to_string(lens), "] is too large");
    const std::size_t total = checked_elements(lens, "the result");
    argument value = from_vector(dtype::f32, {1}, std::vector<float>{0.0f});
    if (auto given = c.attr_tensor("value")) {
        if (given->get_shape().elements() != 1)
            c.fail("attribute 'value' must hold one value, got ", to_string(given->get_shape()));
        value = *given;
    }
    const auto type = value.get_shape().type();
    argument out{shape{type, lens}};
    const auto esize = size_of(type);
    for (std::size_t i = 0; i < total; ++i)
        std::memcpy(out.data() + i * esize, value.data(), esize);
    return {c.add_literal(out)};
}

outputs build_range(node_context& c) {
    auto start = c.require_constant(0, "start");
    auto limit = c.require_constant(1, "limit");
    auto delta = c.require_constant(2, "delta");
    const auto type = start.get_shape().type();
    for (const auto* a : {&start, &limit, &delta}) {
        if (a->get_shape().elements() != 1)
            c.fail("start, limit and delta must be scalars, got ", to_string(a->get_shape()));
        if (a->get_shape().type() != type) c.fail("start, limit and delta must have one type");
    }
    argument out;
    visit_compute(type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T s = to_vector<T>(start).front();
        T l = to_vector<T>(limit).front();
        T d = to_vector<T>(delta).front();
        if (d == T(0)) c.fail("delta must not be 0");
        std::size_t count = 0;
        std::vector<T> values;
        if constexpr (std::is_integral_v<T>) {
            // Exact in 128 bits: a double rounds 2^63 - 2 and 2^63 - 1 to the same value, and
            // start + i * delta may leave int64 before it is known to stay below limit.
            const auto span = int128(l) - int128(s);
            const auto step = int128(d);
            int128 n = 0;
            if (step > 0 && span > 0) n = (span + step - 1) / step;
            if (step < 0 && span < 0) n = (-span + -step - 1) / -step;
            if (n > int128(max_generated_elements)) c.fail("the range has too many elements");
            count = std::size_t(n);
            values.resize(count);
            for (std::size_t i = 0; i < count; ++i)
                values[i] = T(int128(s) + int128(i) * step);
        } else {
            double count_d = std::ceil((double(l) - double(s)) / double(d));
            if (!(count_d <= double(max_generated_elements)))
                c.fail("the range has too many elements");
            count = std::size_t(std::max(count_d, 0.0));
            values.resize(count);
            for (std::size_t i = 0; i < count; ++i)
                values[i] = T(s + T(i) * d);
        }
        out = from_vector<T>(type, {count}, values);
    });
    return {c.add_literal(out)};
}

// An identity-like matrix of the input's (static) shape: ones where column - row == k.
outputs build_eye_like(node_context& c) {
    const shape& in = c.input_shape(0);
    if (in.lens().size() != 2) c.fail("the input must be 2-D, got ", to_string(in));
    dtype type = in.type();
    if (auto t = c.attr_int("dtype")) {
        const auto given = to_dtype(int(*t));
        if (!given) c.unsupported("dtype ", onnx_type_name(int(*t)));
        type = *given;
    }
    const std::size_t rows = in.lens()[0], cols = in.lens()[1];
    if (!bounded_extent(in.lens(), max_generated_elements))
        c.fail("the result [", to_string(in.lens()), "] is too large");
    const auto k = int128(c.attr_int("k", 0));
    argument out{shape{type, {rows, cols}}}; // zeros
    visit_storage(type, [&](auto tag) {
        using S = typename decltype(tag)::type;
        S* p = out.typed<S>();
        for (std::size_t i = 0; i < rows; ++i)
            if (const int128 j = int128(i) + k; j >= 0 && j < int128(cols))
                p[i * cols + std::size_t(j)] = convert_value<S>(1);
    });
    return {c.add_literal(out)};
}

outputs build_constant(node_context& c) {
    if (auto t = c.attr_tensor("value")) return {c.add_literal(*t)};
    if (auto f = c.attr_float("value_float"))
        return {c.add_literal(from_vector(dtype::f32, {}, std::vector<float>{*f}))};
    if (auto fs = c.attr_floats("value_floats"))
        return {c.add_literal(from_vector(dtype::f32, {fs->size()}, *fs))};
    if (auto i = c.attr_int("value_int"))
        return {c.add_literal(from_vector(dtype::i64, {}, std::vector<std::int64_t>{*i}))};
    if (auto is = c.attr_ints("value_ints"))
        return {c.add_literal(from_vector(dtype::i64, {is->size()}, *is))};
    for (const char* name : {"sparse_value", "value_string", "value_strings"})
        if (c.has_attr(name)) c.unsupported("attribute '", name, "' is not supported");
    c.fail("has no value attribute");
}

} // namespace

void add_constant_ops(op_table& t) {
    t["Shape"] = {1, 1, build_shape};
    t["Size"] = {1, 1, build_size};
    t["ConstantOfShape"] = {1, 1, build_constant_of_shape};
    t["Range"] = {3, 3, build_range};
    t["EyeLike"] = {1, 1, build_eye_like};
    t["Constant"] = {0, 0, build_constant};
}

} // namespace conflux::onnx
