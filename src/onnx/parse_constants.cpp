// Ops whose result is known at import time: Constant, and the shape arithmetic that models
// exported with dynamic shapes carry (Shape, Size, ConstantOfShape, Range). Shapes are static
// in Conflux, so these always become literals and the ops never reach the program.
#include "onnx/node_context.hpp"

#include <cmath>
#include <cstring>

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;

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
    std::size_t total = 1;
    for (auto d : spec) {
        if (d < 0) c.fail("shape has negative dim ", d);
        lens.push_back(std::size_t(d));
        if (d != 0 && total > max_generated_elements / std::size_t(d))
            total = max_generated_elements + 1;
        total *= std::size_t(d);
    }
    if (total > max_generated_elements) c.fail("the result [", to_string(lens), "] is too large");
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
        double count_d = std::ceil((double(l) - double(s)) / double(d));
        if (!(count_d <= double(max_generated_elements))) c.fail("the range has too many elements");
        auto count = std::size_t(std::max(count_d, 0.0));
        std::vector<T> values(count);
        for (std::size_t i = 0; i < count; ++i)
            values[i] = T(s + T(i) * d);
        out = from_vector<T>(type, {count}, values);
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
    t["Constant"] = {0, 0, build_constant};
}

} // namespace conflux::onnx
