// The index generator's data-movement ops (trilu among them) and batch normalisation:
// value_builder members that read their inputs at positions derived from the output position.
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/normalization.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/index_values.hpp"

#include <algorithm>

namespace conflux::cuda::index {

namespace {

// Host forms of cx_reflect_index / cx_edge_index, for positions known at generation time.
std::int64_t reflect_index(std::int64_t i, std::int64_t n) {
    if (n == 1) return 0;
    const std::int64_t period = 2 * (n - 1);
    const std::int64_t m = ((i % period) + period) % period;
    return m < n ? m : period - m;
}
std::int64_t edge_index(std::int64_t i, std::int64_t n) {
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

} // namespace

std::string value_builder::concat_value(instruction_ref ins, const index_expr& at) {
    const auto axis = static_cast<std::size_t>(ins->get_operator().get_if<op::concat>()->axis);
    const auto axes = w_.axes(at);
    // The inputs that hold any element, with where each starts along the axis.
    std::vector<std::pair<instruction_ref, std::int64_t>> parts;
    std::int64_t start = 0;
    for (instruction_ref in : ins->inputs()) {
        const auto len = static_cast<std::int64_t>(in->get_shape().lens()[axis]);
        if (len > 0 && in->get_shape().elements() > 0) parts.emplace_back(in, start);
        start += len;
    }
    CONFLUX_ASSERT(!parts.empty(), "concat with no elements reached the index generator");
    auto read = [&](std::size_t p) {
        auto shifted = axes;
        shifted[axis] = w_.add(axes[axis], -parts[p].second);
        const instruction_ref in = parts[p].first;
        return value(in, index_expr::from_axes(in->get_shape().lens(), shifted));
    };
    auto end_of = [&](std::size_t p) {
        return parts[p].second +
               static_cast<std::int64_t>(parts[p].first->get_shape().lens()[axis]);
    };
    if (auto c = constant_of(axes[axis])) {
        std::size_t p = 0;
        while (p + 1 < parts.size() && *c >= end_of(p))
            ++p;
        return read(p);
    }
    if (parts.size() == 1) return read(0);
    const std::string var = w_.fresh("v");
    w_.line(storage_type(ins->get_shape().type()) + " " + var + ";");
    for (std::size_t p = 0; p < parts.size(); ++p) {
        const bool last = p + 1 == parts.size();
        const std::string head =
            last ? "else" : "if (" + axes[axis] + " < " + text::decimal_literal(end_of(p)) + ")";
        if (p == 0)
            w_.open(head);
        else
            w_.else_open(last ? head : "else " + head);
        w_.line(var + " = " + read(p) + ";");
    }
    w_.close();
    return var;
}

std::string value_builder::pad_value(instruction_ref ins, const index_expr& at) {
    const auto& p = *ins->get_operator().get_if<op::pad>();
    const instruction_ref input = ins->inputs().front();
    const dims& in_lens = input->get_shape().lens();
    const std::size_t rank = in_lens.size();
    if (rank == 0) return value(input, at);
    const auto axes = w_.axes(at);
    std::vector<std::string> source(rank);
    std::vector<std::string> inside; // constant mode: the conditions for reading the input
    bool never_inside = false;
    for (std::size_t d = 0; d < rank; ++d) {
        const std::int64_t before = p.pads[d], after = p.pads[d + rank];
        const auto n = static_cast<std::int64_t>(in_lens[d]);
        if (before == 0 && after == 0) {
            source[d] = axes[d];
            continue;
        }
        const std::string shifted = w_.add(axes[d], -before);
        const auto known = constant_of(shifted);
        if (p.mode == op::pad_mode::constant) {
            source[d] = shifted;
            if (known)
                never_inside = never_inside || *known < 0 || *known >= n;
            else
                inside.push_back(shifted + " >= 0 && " + shifted + " < " +
                                 text::decimal_literal(n));
        } else if (p.mode == op::pad_mode::edge || n == 1) {
            source[d] = known ? text::decimal_literal(edge_index(*known, n))
                              : w_.bind("cx_edge_index<" + w_.index_type() + ">(" + shifted + ", " +
                                        text::decimal_literal(n) + ")");
        } else {
            source[d] = known ? text::decimal_literal(reflect_index(*known, n))
                              : w_.bind("cx_reflect_index<" + w_.index_type() + ">(" + shifted +
                                        ", " + text::decimal_literal(n) + ")");
        }
    }
    const dtype t = ins->get_shape().type();
    const std::string fill = storage_constant_of(t, p.value);
    if (never_inside) return declare(t, fill);
    const index_expr from = index_expr::from_axes(in_lens, source);
    if (inside.empty()) return value(input, from);
    const std::string var = w_.fresh("v");
    w_.line(storage_type(t) + " " + var + " = " + fill + ";");
    std::string cond;
    for (const auto& c : inside)
        cond += (cond.empty() ? "" : " && ") + c;
    w_.open("if (" + cond + ")");
    w_.line(var + " = " + value(input, from) + ";");
    w_.close();
    return var;
}

std::string value_builder::gather_index(const std::string& raw, std::size_t n) {
    return w_.bind("static_cast<" + w_.index_type() + ">(cx_gather_index(static_cast<long long>(" +
                   raw + "), " + text::long_long_literal(n) + "))");
}

std::string value_builder::gather_value(instruction_ref ins, const index_expr& at) {
    const auto axis = static_cast<std::size_t>(ins->get_operator().get_if<op::gather>()->axis);
    const instruction_ref data = ins->inputs()[0];
    const instruction_ref indices = ins->inputs()[1];
    const dims& data_lens = data->get_shape().lens();
    const std::size_t q = indices->get_shape().rank();
    // An empty axis with a non-empty result has only out-of-range indices (a user error in the
    // reference); there is nothing to read, so the result is zero.
    if (data_lens[axis] == 0)
        return declare(ins->get_shape().type(), storage_constant(ins->get_shape().type(), 0));
    const auto axes = w_.axes(at);
    const std::vector<std::string> index_axes(axes.begin() + std::ptrdiff_t(axis),
                                              axes.begin() + std::ptrdiff_t(axis + q));
    const std::string raw =
        value(indices, index_expr::from_axes(indices->get_shape().lens(), index_axes));
    std::vector<std::string> source(axes.begin(), axes.begin() + std::ptrdiff_t(axis));
    source.push_back(gather_index(raw, data_lens[axis]));
    source.insert(source.end(), axes.begin() + std::ptrdiff_t(axis + q), axes.end());
    return value(data, index_expr::from_axes(data_lens, source));
}

std::string value_builder::gather_elements_value(instruction_ref ins, const index_expr& at) {
    const auto axis =
        static_cast<std::size_t>(ins->get_operator().get_if<op::gather_elements>()->axis);
    const instruction_ref data = ins->inputs()[0];
    const instruction_ref indices = ins->inputs()[1];
    const dims& data_lens = data->get_shape().lens();
    if (data_lens[axis] == 0)
        return declare(ins->get_shape().type(), storage_constant(ins->get_shape().type(), 0));
    const std::string raw = value(indices, at); // the indices have the output's lens
    auto source = w_.axes(at);
    source[axis] = gather_index(raw, data_lens[axis]);
    return value(data, index_expr::from_axes(data_lens, source));
}

std::string value_builder::gather_nd_value(instruction_ref ins, const index_expr& at) {
    const auto b =
        static_cast<std::size_t>(ins->get_operator().get_if<op::gather_nd>()->batch_dims);
    const instruction_ref data = ins->inputs()[0];
    const instruction_ref indices = ins->inputs()[1];
    const dims& data_lens = data->get_shape().lens();
    const dims& index_lens = indices->get_shape().lens();
    const std::size_t rows_rank = index_lens.size() - 1; // the output's axes that pick a row
    const std::size_t k = index_lens.back();
    for (std::size_t j = 0; j < k; ++j)
        if (data_lens[b + j] == 0) // only out-of-range indices, as in gather_value
            return declare(ins->get_shape().type(), storage_constant(ins->get_shape().type(), 0));
    const auto axes = w_.axes(at);
    std::vector<std::string> row(axes.begin(), axes.begin() + std::ptrdiff_t(rows_rank));
    row.emplace_back();
    std::vector<std::string> source(axes.begin(), axes.begin() + std::ptrdiff_t(b));
    for (std::size_t j = 0; j < k; ++j) {
        row.back() = text::decimal_literal(static_cast<std::int64_t>(j));
        const std::string raw = value(indices, index_expr::from_axes(index_lens, row));
        source.push_back(gather_index(raw, data_lens[b + j]));
    }
    source.insert(source.end(), axes.begin() + std::ptrdiff_t(rows_rank), axes.end());
    return value(data, index_expr::from_axes(data_lens, source));
}

std::string value_builder::batch_norm_value(instruction_ref ins, const index_expr& at) {
    const auto& bn = *ins->get_operator().get_if<op::batch_norm>();
    const auto& inputs = ins->inputs();
    const dtype t = ins->get_shape().type();
    const std::string ct = compute_type(t); // float or double: x is floating
    const auto channel = index_expr::from_axes(inputs[1]->get_shape().lens(), {w_.axes(at)[1]});
    // Every operand in x's compute type, as the reference's to_vector<T> reads them.
    auto operand = [&](const std::string& v) {
        return "static_cast<" + ct + ">(cx_widen(" + v + "))";
    };
    const std::string x = operand(value(inputs[0], at));
    const std::string scale = operand(value(inputs[1], channel));
    const std::string bias = operand(value(inputs[2], channel));
    const std::string mean = operand(value(inputs[3], channel));
    const std::string var = operand(value(inputs[4], channel));
    const std::string factor = w_.fresh("f");
    w_.line("const " + ct + " " + factor + " = cx_div(" + scale + ", cx_sqrt(cx_add(" + var + ", " +
            compute_literal(t, static_cast<double>(bn.epsilon)) + ")));");
    return declare(t, "cx_narrow<" + storage_type(t) + ">(cx_add(cx_mul(cx_sub(" + x + ", " + mean +
                          "), " + factor + "), " + bias + "))");
}

std::string value_builder::trilu_value(instruction_ref ins, const index_expr& at) {
    const auto& t = *ins->get_operator().get_if<op::trilu>();
    const instruction_ref input = ins->inputs().front();
    const dims& lens = ins->get_shape().lens();
    const std::size_t rank = lens.size();
    const auto axes = w_.axes(at);
    const std::string& row = axes[rank - 2];
    const std::string& col = axes[rank - 1];
    // col - row lies in [-(rows - 1), cols - 1]; a k beyond that keeps all or nothing, so it is
    // clamped to [-rows, cols], which keeps every literal small.
    const auto rows = static_cast<std::int64_t>(lens[rank - 2]);
    const auto cols = static_cast<std::int64_t>(lens[rank - 1]);
    const std::int64_t k = std::clamp(t.k, -rows, cols);
    const dtype type = ins->get_shape().type();
    const auto known_row = constant_of(row);
    const auto known_col = constant_of(col);
    if (known_row && known_col)
        return t.keeps(std::size_t(*known_row), std::size_t(*known_col))
                   ? value(input, at)
                   : declare(type, storage_constant(type, 0));
    const std::string var = w_.fresh("v");
    w_.line(storage_type(type) + " " + var + " = " + storage_constant(type, 0) + ";");
    w_.open("if ((" + col + ") - (" + row + ")" + (t.upper ? " >= " : " <= ") +
            text::decimal_literal(k) + ")");
    w_.line(var + " = " + value(input, at) + ";");
    w_.close();
    return var;
}

} // namespace conflux::cuda::index
