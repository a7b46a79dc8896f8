#include "conflux/ops/scan.hpp"

#include "ops/attribute_reader.hpp"

#include "op_helpers.hpp"
#include "wrapping_arithmetic.hpp"

namespace conflux::op {

cumsum cumsum::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {
        .axis = r.integer("axis"), .exclusive = r.flag("exclusive"), .reverse = r.flag("reverse")};
}

shape cumsum::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    const shape& x = in[0];
    check_axis(name(), axis, x.rank());
    CONFLUX_USER_CHECK(x.type() != dtype::boolean, name(), ": bool has no sum");
    return x.as_standard();
}

argument cumsum::eval(const shape& out, const std::vector<argument>& in) const {
    const argument& x_arg = in.at(0);
    // Named variables, not a structured binding: clang 14 (the sanitizer build) cannot capture
    // structured bindings in the lambda below.
    const axis_split rows = split_at_axis(x_arg.get_shape().lens(), std::size_t(axis));
    const std::size_t outer = rows.outer, n = rows.n, inner = rows.inner;
    return visit_compute(x_arg.get_shape().type(), [&](auto tag) -> argument {
        using C = typename decltype(tag)::type;
        const auto x = to_vector<C>(x_arg); // row-major, whatever x's strides
        std::vector<C> y(x.size());
        for (std::size_t o = 0; o < outer; ++o) {
            for (std::size_t i = 0; i < inner; ++i) {
                C acc = C(0);
                for (std::size_t t = 0; t < n; ++t) {
                    const std::size_t j = reverse ? n - 1 - t : t;
                    const std::size_t e = (o * n + j) * inner + i;
                    if (exclusive) {
                        y[e] = acc;
                        acc = wrap_add(acc, x[e]);
                    } else {
                        acc = wrap_add(acc, x[e]);
                        y[e] = acc;
                    }
                }
            }
        }
        return from_vector<C>(out.type(), out.lens(), y);
    });
}

} // namespace conflux::op
