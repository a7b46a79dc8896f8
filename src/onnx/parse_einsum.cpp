// Einsum -> views, reduce sums and op::dot, so that every target runs it with the kernels it has
// and the gemm fusion sees ordinary anchors. The steps, on operands whose every axis carries a
// label (einsum_equation.hpp):
//   1. a size-1 ellipsis axis is broadcast to the size the other operands give it;
//   2. a label repeated within one operand takes the diagonal: the two axes moved last,
//      flattened to n*n and sliced with step n+1 (a view);
//   3. a label that one operand alone has and the output does not is summed there;
//   4. operands contract pairwise, left to right, as one batched matrix product each: labels in
//      both that are still needed (by the output or a later operand) are batch axes, those not
//      needed are the contraction, the rest are the rows (left) and columns (right);
//   5. the result is transposed to the output's order.
#include "onnx/node_context.hpp"

#include "conflux/ops/dot.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "onnx/einsum_equation.hpp"
#include "ops/op_helpers.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;
using label_set = std::set<int>;

struct operand {
    instruction_ref x;
    std::vector<int> labels; // one per axis of x
};

std::size_t position(const std::vector<int>& labels, int label) {
    return std::size_t(std::find(labels.begin(), labels.end(), label) - labels.begin());
}

bool contains(const std::vector<int>& labels, int label) {
    return position(labels, label) < labels.size();
}

void reorder(node_context& c, operand& a, const std::vector<int>& labels) {
    if (labels == a.labels) return;
    std::vector<std::int64_t> perm;
    for (int label : labels)
        perm.push_back(std::int64_t(position(a.labels, label)));
    a.x = c.add(op::transpose{perm}, {a.x});
    a.labels = labels;
}

instruction_ref reshape(node_context& c, instruction_ref x, const dims& lens) {
    if (x->get_shape().lens() == lens) return x;
    return c.add(op::reshape{lens}, {x});
}

// The size of every label; an ellipsis axis of size 1 broadcasts against any other size.
std::map<int, std::size_t> label_sizes(node_context& c, const std::vector<operand>& ops) {
    std::map<int, std::size_t> sizes;
    std::map<int, std::size_t> from; // the input that gave the size
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const auto& lens = ops[i].x->get_shape().lens();
        for (std::size_t axis = 0; axis < lens.size(); ++axis) {
            const int label = ops[i].labels[axis];
            const bool ellipsis = label >= einsum_ellipsis_label;
            auto [it, fresh] = sizes.emplace(label, lens[axis]);
            if (fresh || (ellipsis && it->second == 1)) {
                it->second = lens[axis];
                from[label] = i;
                continue;
            }
            if (it->second == lens[axis] || (ellipsis && lens[axis] == 1)) continue;
            if (ellipsis)
                c.fail("the '...' axes of input ", from[label], " and input ", i,
                       " do not broadcast (", it->second, " vs ", lens[axis], ")");
            c.fail("label '", einsum_label_name(label), "' has size ", it->second, " in input ",
                   from[label], " and ", lens[axis], " in input ", i);
        }
    }
    return sizes;
}

void take_diagonals(node_context& c, operand& a) {
    for (;;) {
        std::size_t first = 0, second = 0;
        for (std::size_t j = 0; j < a.labels.size() && second == 0; ++j)
            for (std::size_t k = j + 1; k < a.labels.size(); ++k)
                if (a.labels[j] == a.labels[k]) {
                    first = j;
                    second = k;
                    break;
                }
        if (second == 0) return;
        const int label = a.labels[first];
        std::vector<std::int64_t> perm;
        std::vector<int> kept;
        for (std::size_t j = 0; j < a.labels.size(); ++j)
            if (j != first && j != second) {
                perm.push_back(std::int64_t(j));
                kept.push_back(a.labels[j]);
            }
        perm.push_back(std::int64_t(first));
        perm.push_back(std::int64_t(second));
        auto x = c.add(op::transpose{perm}, {a.x});
        dims lens(x->get_shape().lens().begin(), x->get_shape().lens().end() - 2);
        const std::size_t n = x->get_shape().lens().back();
        lens.push_back(n * n);
        x = reshape(c, x, lens);
        const auto last = std::int64_t(lens.size() - 1);
        a.x = c.add(op::slice{{last}, {0}, {std::int64_t(n * n)}, {std::int64_t(n + 1)}}, {x});
        kept.push_back(label);
        a.labels = kept;
    }
}

// Sums the axes whose labels are not in `needed`.
void sum_unneeded(node_context& c, operand& a, const label_set& needed) {
    op::reduce r{.kind = op::reduce_kind::sum, .axes = {}, .keepdims = false};
    std::vector<int> kept;
    for (std::size_t j = 0; j < a.labels.size(); ++j) {
        if (needed.count(a.labels[j]) != 0)
            kept.push_back(a.labels[j]);
        else
            r.axes.push_back(std::int64_t(j));
    }
    if (r.axes.empty()) return;
    a.x = c.add(r, {a.x});
    a.labels = kept;
}

// l x r as one batched matrix product; `needed`: the labels the output or a later operand has.
operand contract(node_context& c, operand l, operand r, const label_set& needed) {
    std::vector<int> batch, rows, inner, columns;
    for (int label : l.labels) {
        if (!contains(r.labels, label))
            rows.push_back(label);
        else if (needed.count(label) != 0)
            batch.push_back(label);
        else
            inner.push_back(label);
    }
    for (int label : r.labels)
        if (!contains(l.labels, label)) columns.push_back(label);

    auto lens_of = [](const operand& a, const std::vector<int>& labels) {
        dims lens;
        for (int label : labels)
            lens.push_back(a.x->get_shape().lens()[position(a.labels, label)]);
        return lens;
    };
    const dims batch_lens = lens_of(l, batch);
    const dims row_lens = lens_of(l, rows);
    const dims inner_lens = lens_of(l, inner);
    const dims column_lens = lens_of(r, columns);
    auto matrix = [&](std::size_t m, std::size_t n) {
        dims lens = batch_lens;
        lens.push_back(m);
        lens.push_back(n);
        return lens;
    };
    auto concat = [](std::vector<int> a, const std::vector<int>& b, const std::vector<int>& d) {
        a.insert(a.end(), b.begin(), b.end());
        a.insert(a.end(), d.begin(), d.end());
        return a;
    };
    reorder(c, l, concat(batch, rows, inner));
    reorder(c, r, concat(batch, inner, columns));
    const auto m = op::product(row_lens), k = op::product(inner_lens);
    const auto n = op::product(column_lens);
    auto y = c.add(op::dot{}, {reshape(c, l.x, matrix(m, k)), reshape(c, r.x, matrix(k, n))});
    dims lens = batch_lens;
    lens.insert(lens.end(), row_lens.begin(), row_lens.end());
    lens.insert(lens.end(), column_lens.begin(), column_lens.end());
    return {reshape(c, y, lens), concat(batch, rows, columns)};
}

outputs build_einsum(node_context& c) {
    if (!c.has_attr("equation")) c.fail("attribute 'equation' is required");
    const auto text = c.attr_string("equation", "");
    std::vector<operand> ops;
    std::vector<std::size_t> ranks;
    for (std::size_t i = 0; i < c.input_count(); ++i) {
        ops.push_back({c.input(i), {}});
        ranks.push_back(c.input_shape(i).rank());
        if (c.input_shape(i).type() != c.input_shape(0).type())
            c.fail("input ", i, " is ", to_string(c.input_shape(i).type()), " but input 0 is ",
                   to_string(c.input_shape(0).type()));
    }
    einsum_labels labels;
    try {
        labels = label_einsum_axes(parse_einsum_equation(text, ops.size()), ranks);
    } catch (const user_error& e) {
        c.fail("equation '", one_line(text), "': ", e.what());
    }
    for (std::size_t i = 0; i < ops.size(); ++i)
        ops[i].labels = labels.inputs[i];

    const auto sizes = label_sizes(c, ops);
    for (auto& a : ops) {
        dims lens;
        for (int label : a.labels)
            lens.push_back(sizes.at(label));
        a.x = c.broadcast_to(a.x, lens);
        take_diagonals(c, a);
    }

    const label_set output(labels.output.begin(), labels.output.end());
    // needed_after[i]: the labels of the output and of the operands after i.
    std::vector<label_set> needed_after(ops.size(), output);
    for (std::size_t i = ops.size() - 1; i-- > 0;) {
        needed_after[i] = needed_after[i + 1];
        needed_after[i].insert(ops[i + 1].labels.begin(), ops[i + 1].labels.end());
    }
    for (std::size_t i = 0; i < ops.size(); ++i) {
        label_set needed = needed_after[i];
        for (std::size_t j = 0; j < i; ++j)
            needed.insert(ops[j].labels.begin(), ops[j].labels.end());
        sum_unneeded(c, ops[i], needed);
    }

    operand result = ops[0];
    for (std::size_t i = 1; i < ops.size(); ++i)
        result = contract(c, result, ops[i], needed_after[i]);
    sum_unneeded(c, result, output);
    reorder(c, result, labels.output);
    return {result.x};
}

} // namespace

void add_einsum_ops(op_table& t) {
    t["Einsum"] = {1, any_count, build_einsum};
}

} // namespace conflux::onnx
