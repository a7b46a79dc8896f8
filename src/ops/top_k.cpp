#include "conflux/ops/top_k.hpp"

#include "ops/attribute_reader.hpp"

#include <algorithm>
#include <numeric>

#include "op_helpers.hpp"

namespace conflux::op {

namespace {

// The rank order: a before b when a's value is larger (smaller unless largest), NaN counting as
// larger than every number, and equal values (NaNs among themselves) by the smaller index. It is
// a strict total order, so the selection does not depend on the sort algorithm; the CUDA kernel
// (cx_top_k_before) uses the same one.
template <class C> bool ranks_before(C a, std::size_t ia, C b, std::size_t ib, bool largest) {
    const bool a_nan = a != a;
    const bool b_nan = b != b;
    if (a_nan != b_nan) return largest ? a_nan : b_nan;
    if (a_nan || a == b) return ia < ib;
    return largest ? a > b : a < b;
}

} // namespace

top_k top_k::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.axis = r.integer("axis"), .k = r.size("k"), .largest = r.flag("largest")};
}

shape top_k::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    const shape& x = in[0];
    check_axis(name(), axis, x.rank());
    const auto ax = std::size_t(axis);
    CONFLUX_USER_CHECK(k <= x.lens()[ax], name(), ": k ", k, " exceeds the length ", x.lens()[ax],
                       " of axis ", axis);
    CONFLUX_USER_CHECK(x.type() != dtype::boolean, name(), ": bool input is not supported");
    dims lens = x.lens();
    lens[ax] = k;
    return shape{std::vector<shape>{shape{x.type(), lens}, shape{dtype::i64, lens}}};
}

argument top_k::eval(const shape& out, const std::vector<argument>& in) const {
    const argument& x_arg = in.at(0);
    // Named variables, not a structured binding: clang 14 (the sanitizer build) cannot capture
    // structured bindings in the lambda below.
    const axis_split rows = split_at_axis(x_arg.get_shape().lens(), std::size_t(axis));
    const std::size_t outer = rows.outer, n = rows.n, inner = rows.inner;
    const shape& values_shape = out.sub_shapes().at(0);
    const shape& indices_shape = out.sub_shapes().at(1);
    std::vector<std::int64_t> indices(indices_shape.elements());
    argument values = visit_compute(x_arg.get_shape().type(), [&](auto tag) -> argument {
        using C = typename decltype(tag)::type;
        const auto x = to_vector<C>(x_arg); // row-major, whatever x's strides
        std::vector<C> picked(values_shape.elements());
        std::vector<std::size_t> order(n);
        for (std::size_t o = 0; o < outer; ++o) {
            for (std::size_t i = 0; i < inner; ++i) {
                auto at = [&](std::size_t j) { return x[(o * n + j) * inner + i]; };
                std::iota(order.begin(), order.end(), std::size_t{0});
                std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(),
                                  [&](std::size_t a, std::size_t b) {
                                      return ranks_before(at(a), a, at(b), b, largest);
                                  });
                for (std::size_t r = 0; r < k; ++r) {
                    const std::size_t e = (o * k + r) * inner + i;
                    picked[e] = at(order[r]);
                    indices[e] = std::int64_t(order[r]);
                }
            }
        }
        return from_vector<C>(values_shape.type(), values_shape.lens(), picked);
    });
    return argument{std::vector<argument>{
        values, from_vector<std::int64_t>(dtype::i64, indices_shape.lens(), indices)}};
}

} // namespace conflux::op
