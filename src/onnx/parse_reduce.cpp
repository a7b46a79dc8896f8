// Reduce*, Softmax / LogSoftmax, ArgMax / ArgMin, and the other ops along one axis: CumSum,
// TopK and Hardmax.
#include "onnx/node_context.hpp"

#include "conflux/ir/builtin_ops.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/scan.hpp"
#include "conflux/ops/top_k.hpp"
#include "conflux/ops/views.hpp"

#include <algorithm>
#include <numeric>

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;

// axes_input_opset: the opset from which axes is input 1 instead of an attribute (13 for
// ReduceSum, 18 for the others).
outputs build_reduce(node_context& c, op::reduce_kind kind, std::int64_t axes_input_opset) {
    auto x = c.input(0);
    const auto rank = x->get_shape().rank();
    std::vector<std::int64_t> axes;
    if (c.opset() < axes_input_opset) {
        if (c.input_count() > 1)
            c.fail("takes axes as an attribute before opset ", axes_input_opset);
        axes = c.attr_ints("axes", {});
    } else if (c.has_input(1)) {
        axes = c.constant_ints(1, "axes");
    }
    const bool noop = c.opset() >= axes_input_opset && c.attr_int("noop_with_empty_axes", 0) != 0;
    if (axes.empty() && noop) return {x};
    axes = c.normalize_axes(axes, rank);
    std::sort(axes.begin(), axes.end());
    op::reduce r;
    r.kind = kind;
    r.axes = axes;
    r.keepdims = c.attr_int("keepdims", 1) != 0;
    return {c.add(r, {x})};
}

outputs build_softmax(node_context& c, bool log) {
    auto x = c.input(0);
    const auto& lens = x->get_shape().lens();
    const auto rank = lens.size();
    if (c.opset() >= 13) {
        auto axis = c.normalize_axis(c.attr_int("axis", -1), rank);
        return {c.add(op::softmax{axis, log}, {x})};
    }
    // Before opset 13 the input is seen as 2-D [prod(lens[:axis]), prod(lens[axis:])] and the
    // softmax runs over the whole second dimension.
    auto r = std::int64_t(rank);
    auto axis = c.attr_int("axis", 1);
    if (axis < -r || axis > r) c.fail("axis ", axis, " is out of range for rank ", rank);
    if (axis < 0) axis += r;
    auto mul = [](auto b, auto e) {
        return std::accumulate(b, e, std::size_t{1}, std::multiplies<>{});
    };
    dims flat{mul(lens.begin(), lens.begin() + axis), mul(lens.begin() + axis, lens.end())};
    auto y = c.add(op::reshape{flat}, {x});
    y = c.add(op::softmax{1, log}, {y});
    return {c.add(op::reshape{lens}, {y})};
}

outputs build_arg_reduce(node_context& c, bool max) {
    auto x = c.input(0);
    op::arg_reduce r;
    r.max = max;
    r.axis = c.normalize_axis(c.attr_int("axis", 0), x->get_shape().rank());
    r.keepdims = c.attr_int("keepdims", 1) != 0;
    r.select_last_index = c.attr_int("select_last_index", 0) != 0;
    return {c.add(r, {x})};
}

// Hardmax: 1 where the first maximum along the axis is, 0 elsewhere: ArgMax (first index) compared
// with a literal 0 .. len - 1 along the axis. Before opset 13 the input is seen as the 2-D
// [prod(lens[:axis]), prod(lens[axis:])] and the row of each is what is reduced.
outputs build_hardmax(node_context& c) {
    using K = op::elementwise_kind;
    auto x = c.input(0);
    const dims lens = x->get_shape().lens();
    const bool coerced = c.opset() < 13;
    auto axis = c.normalize_axis(c.attr_int("axis", coerced ? 1 : -1), lens.size());
    auto seen = x;
    if (coerced) {
        std::size_t outer = 1, inner = 1;
        for (std::size_t d = 0; d < lens.size(); ++d)
            (std::int64_t(d) < axis ? outer : inner) *= lens[d];
        seen = c.add(op::reshape{{outer, inner}}, {x});
        axis = 1;
    }
    const dims& seen_lens = seen->get_shape().lens();
    // The positions along the axis are a literal built here.
    if (seen_lens[std::size_t(axis)] > (std::size_t{1} << 24))
        c.unsupported("Hardmax over ", seen_lens[std::size_t(axis)],
                      " positions (more than 2^24) is not supported");
    op::arg_reduce r;
    r.max = true;
    r.axis = axis;
    r.keepdims = true;
    auto first = c.add(r, {seen});
    auto hit =
        c.elementwise(K::equal, {first, c.positions_along(std::size_t(axis), seen_lens.size(),
                                                          seen_lens[std::size_t(axis)])});
    const dtype type = x->get_shape().type();
    auto y = c.elementwise(K::where, {hit, c.scalar(type, 1), c.scalar(type, 0)});
    return {coerced ? c.add(op::reshape{lens}, {y}) : y};
}

outputs build_cumsum(node_context& c) {
    auto x = c.input(0);
    op::cumsum s;
    s.axis = c.normalize_axis(c.constant_int(1, "axis"), x->get_shape().rank());
    s.exclusive = c.attr_int("exclusive", 0) != 0;
    s.reverse = c.attr_int("reverse", 0) != 0;
    return {c.add(s, {x})};
}

outputs build_top_k(node_context& c) {
    auto x = c.input(0);
    const auto& lens = x->get_shape().lens();
    op::top_k t;
    t.axis = c.normalize_axis(c.attr_int("axis", -1), lens.size());
    // Before opset 10, k is an attribute.
    const std::int64_t k = c.opset() < 10 ? c.attr_int("k", 1) : c.constant_int(1, "K");
    const auto n = lens[std::size_t(t.axis)];
    if (k < 0 || std::uint64_t(k) > n)
        c.fail("K ", k, " is outside [0, ", n, "], the length of axis ", t.axis);
    t.k = std::size_t(k);
    t.largest = c.attr_int("largest", 1) != 0;
    // sorted = 0 leaves the order unspecified; the ranked order is one such order.
    auto both = c.add(t, {x});
    return {c.add(op::get_tuple_elem{0}, {both}), c.add(op::get_tuple_elem{1}, {both})};
}

} // namespace

void add_reduce_ops(op_table& t) {
    using R = op::reduce_kind;
    const std::pair<const char*, R> reductions[] = {
        {"ReduceSum", R::sum},
        {"ReduceMean", R::mean},
        {"ReduceMax", R::max},
        {"ReduceMin", R::min},
        {"ReduceProd", R::prod},
        {"ReduceL1", R::l1},
        {"ReduceL2", R::l2},
        {"ReduceLogSum", R::log_sum},
        {"ReduceLogSumExp", R::log_sum_exp},
        {"ReduceSumSquare", R::sum_square},
    };
    for (auto [name, kind] : reductions) {
        std::int64_t axes_input_opset = kind == R::sum ? 13 : 18;
        // An init-capture: clang 14 (the fuzzing build) cannot capture a structured binding.
        t[name] = {1, 2, [kind = kind, axes_input_opset](node_context& c) {
                       return build_reduce(c, kind, axes_input_opset);
                   }};
    }
    t["Softmax"] = {1, 1, [](node_context& c) { return build_softmax(c, false); }};
    t["LogSoftmax"] = {1, 1, [](node_context& c) { return build_softmax(c, true); }};
    t["ArgMax"] = {1, 1, [](node_context& c) { return build_arg_reduce(c, true); }};
    t["ArgMin"] = {1, 1, [](node_context& c) { return build_arg_reduce(c, false); }};
    t["CumSum"] = {2, 2, build_cumsum};
    t["Hardmax"] = {1, 1, build_hardmax};
    t["TopK"] = {1, 2, build_top_k};
}

} // namespace conflux::onnx
