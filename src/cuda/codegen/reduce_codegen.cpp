// Kernels for reduce_*, softmax, log_softmax, argmax and argmin. Each output element (or softmax
// row) reduces a "row" of input elements; text::row_mapping decides whether a block or a single
// thread handles a row. Semantics follow src/ops/reduce.cpp: f16/bf16/f32 accumulate in float,
// f64 in double, integers in wrapping long long (log_sum_exp of integers in double).
#include "cuda/codegen/generator.hpp"

#include "conflux/ops/reduce.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace conflux::cuda {

namespace {

// The identity of max (lowest) or min over an empty set for an integer storage type, as the
// reference target uses: the storage type's extreme, not long long's.
long long integer_extreme(dtype t, bool lowest) {
    return visit_storage(t, [&](auto tag) -> long long {
        using S = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<S>)
            return lowest ? static_cast<long long>(std::numeric_limits<S>::lowest())
                          : static_cast<long long>(std::numeric_limits<S>::max());
        else
            throw_internal_error("integer_extreme of ", to_string(t));
    });
}

// What one reduce kind does to the loaded value `v` and the combined value `acc`.
struct reduce_recipe {
    std::string accumulator; // device type the reduction runs in
    std::string identity;
    std::string map;    // expression of `v`
    std::string op;     // combining function object
    std::string finish; // expression of `acc`, stored to the output
};

reduce_recipe recipe_for(op::reduce_kind kind, dtype t, std::size_t count) {
    const bool integral = compute_type(t) == "long long";
    reduce_recipe r;
    r.accumulator = compute_type(t);
    r.identity = compute_literal(t, 0);
    r.map = "v";
    r.op = "cx_op_add()";
    r.finish = "acc";
    // sqrt/log of an integer sum go through double and truncate, as the reference does.
    auto through_double = [&](const std::string& fn) {
        return integral ? "cx_cast<long long>(" + fn + "(static_cast<double>(acc)))" : fn + "(acc)";
    };
    switch (kind) {
    case op::reduce_kind::sum:
        break;
    case op::reduce_kind::mean:
        // The mean of an empty set is 0/0 = NaN for floats and stays 0 for integers, as in the
        // reference.
        if (count != 0)
            r.finish =
                "acc / static_cast<" + r.accumulator + ">(" + text::integer_literal(count) + ")";
        else if (!integral)
            r.finish = compute_literal(t, std::numeric_limits<double>::quiet_NaN());
        break;
    case op::reduce_kind::max:
    case op::reduce_kind::min: {
        const bool is_max = kind == op::reduce_kind::max;
        r.op = is_max ? "cx_op_max()" : "cx_op_min()";
        if (integral)
            r.identity = text::integer_literal(integer_extreme(t, is_max));
        else
            r.identity = compute_literal(t, is_max ? -std::numeric_limits<double>::infinity()
                                                   : std::numeric_limits<double>::infinity());
        break;
    }
    case op::reduce_kind::prod:
        r.identity = compute_literal(t, 1);
        r.op = "cx_op_mul()";
        break;
    case op::reduce_kind::l1:
        r.map = "cx_reduce_abs(v)";
        break;
    case op::reduce_kind::sum_square:
        r.map = "cx_reduce_mul(v, v)";
        break;
    case op::reduce_kind::l2:
        r.map = "cx_reduce_mul(v, v)";
        r.finish = through_double("cx_reduce_sqrt");
        break;
    case op::reduce_kind::log_sum:
        r.finish = through_double("cx_reduce_log");
        break;
    case op::reduce_kind::log_sum_exp:
        throw_internal_error("log_sum_exp has its own kernel body");
    }
    return r;
}

// The parts of a row kernel that reduce_*, softmax and arg-reduce share: which input axes form
// a row, and the loop over a row's elements.
struct row_layout {
    shape input;
    std::vector<std::size_t> row_axes;   // reduced axes, in order
    std::vector<std::size_t> outer_axes; // the others, in order
    std::vector<std::string> names;      // per input axis: its coordinate's variable

    dims lens_of(const std::vector<std::size_t>& axes) const {
        dims l;
        for (auto a : axes)
            l.push_back(input.lens()[a]);
        return l;
    }
    std::size_t count(const std::vector<std::size_t>& axes) const {
        std::size_t n = 1;
        for (auto a : axes)
            n *= input.lens()[a];
        return n;
    }
    std::size_t row_length() const { return count(row_axes); }
    std::size_t rows() const { return count(outer_axes); }

    // Offset in `s` (of the input's rank) of the coordinates of `axes`.
    std::string offset_of(const std::vector<std::size_t>& axes, const shape& s) const {
        dims strides;
        std::vector<std::string> index;
        for (auto a : axes) {
            strides.push_back(s.strides()[a]);
            index.push_back(names[a]);
        }
        return text::offset(index, lens_of(axes), strides);
    }
    std::string input_offset(const std::vector<std::size_t>& axes) const {
        return offset_of(axes, input);
    }

    // Declares the outer coordinates of `row` and `x_row`, the input offset of the row's start.
    std::string row_start(const std::string& indent) const {
        std::vector<std::string> outer_names;
        for (auto a : outer_axes)
            outer_names.push_back(names[a]);
        return text::decompose("row", lens_of(outer_axes), outer_names, indent) + indent +
               "const cx_index x_row = " + input_offset(outer_axes) + ";\n";
    }

    // A loop over this thread's elements of the row; in `body`, `v` is the element (converted to
    // `value_type`) and `j` its position in the row.
    // unroll > 1: asks for that many iterations unrolled, so that a thread has as many loads in
    // flight (a thread-per-row reduction has no other parallelism within its row).
    std::string element_loop(const std::string& value_type, const std::string& body,
                             const std::string& indent, unsigned unroll = 1) const {
        if (row_length() == 0) return "";
        std::vector<std::string> row_names;
        for (auto a : row_axes)
            row_names.push_back(names[a]);
        const std::string inner = indent + "    ";
        const std::string pragma =
            unroll > 1 ? indent + "#pragma unroll " + std::to_string(unroll) + "\n" : "";
        return pragma + indent + "for (cx_index j = first; j < " +
               text::integer_literal(row_length()) + "; j += step) {\n" +
               text::decompose("j", lens_of(row_axes), row_names, inner) + inner + "const " +
               value_type + " v = static_cast<" + value_type + ">(cx_load(in0 + x_row + " +
               input_offset(row_axes) + "));\n" + body + indent + "}\n";
    }
};

row_layout make_layout(const shape& input, const std::vector<bool>& reduced) {
    row_layout l;
    l.input = input;
    l.names = text::names("a", input.rank());
    for (std::size_t i = 0; i < input.rank(); ++i)
        (reduced[i] ? l.row_axes : l.outer_axes).push_back(i);
    // Rows are numbered in the input's memory order (the outer axis of smallest stride
    // fastest), so that the threads of a thread-per-row kernel, one row each, read neighbouring
    // elements: squeeze-and-excitation's spatial mean of channels-last data numbered its rows
    // (image, channel, row) and a warp's loads were the image row's stride apart (~400 GB/s on
    // the H200).
    std::stable_sort(l.outer_axes.begin(), l.outer_axes.end(), [&](std::size_t a, std::size_t b) {
        return input.strides()[a] > input.strides()[b];
    });
    return l;
}

text::row_mapping mapping_for(const row_layout& l) {
    return text::choose_row_mapping(l.rows(), l.row_length(),
                                    text::fastest_axis_in(l.input, l.row_axes));
}

// The output's offset for the outer coordinates: `output_index` names each output axis's
// coordinate variable ("0" for a kept reduced axis).
std::string output_offset(const shape& out, const std::vector<std::string>& output_index) {
    return text::offset(output_index, out.lens(), out.strides());
}

// reduce with empty axes and noop_with_empty_axes: a copy into the output's layout.
kernel_source copy_kernel(const kernel_request& r) {
    const shape& x = r.inputs[0];
    const shape& y = r.outputs[0];
    const auto names = text::names("a", x.rank());
    std::string body = text::thread_per_element(x.elements(), "    ");
    body += text::decompose("i", x.lens(), names, "    ");
    body += "    cx_store(out0 + " + text::offset(names, y.lens(), y.strides()) +
            ", cx_load(in0 + " + text::offset(names, x.lens(), x.strides()) + "));\n";
    return text::make_kernel(r, body, text::linear_launch(x.elements(), text::elementwise_block));
}

kernel_source generate_reduce(const kernel_request& r) {
    const auto* op = &text::single_operand_op<op::reduce>(r, "generate_reduce");
    const shape& x = r.inputs[0];
    const shape& y = r.outputs[0];
    if (y.elements() == 0) return text::empty_kernel(r);
    if (op->axes.empty() && op->noop_with_empty_axes) return copy_kernel(r);

    std::vector<bool> reduced(x.rank(), op->axes.empty());
    for (auto a : op->axes)
        reduced[std::size_t(a)] = true;
    const row_layout layout = make_layout(x, reduced);
    const text::row_mapping mapping = mapping_for(layout);

    std::vector<std::string> output_index;
    for (std::size_t a = 0; a < x.rank(); ++a) {
        if (!reduced[a])
            output_index.push_back(layout.names[a]);
        else if (op->keepdims)
            output_index.push_back("0");
    }

    const std::string in = "    ";
    const std::string in2 = "        ";
    std::string body = mapping.prologue(in) + layout.row_start(in);
    body += in + "const cx_index y_offset = " + output_offset(y, output_index) + ";\n";
    if (op->kind == op::reduce_kind::log_sum_exp) {
        // Shifted by the max so that exp cannot overflow; an infinite max is no usable shift
        // (the unshifted form gives the right -inf/+inf), a NaN max passes the NaN on.
        const dtype t = compute_type(x.type()) == "long long" ? dtype::f64 : x.type();
        const std::string a = compute_type(t);
        body += in + a + " mx = " + compute_literal(t, -std::numeric_limits<double>::infinity()) +
                ";\n";
        body += layout.element_loop(a, in2 + "mx = cx_op_max()(mx, v);\n", in);
        body += in + "mx = " + mapping.combine("mx", "cx_op_max()") + ";\n";
        body += in + "const " + a +
                " shift = (mx != mx || isfinite(mx)) ? mx : " + compute_literal(t, 0) + ";\n";
        body += in + a + " acc = " + compute_literal(t, 0) + ";\n";
        body += layout.element_loop(a, in2 + "acc = acc + cx_reduce_exp(v - shift);\n", in);
        body += in + "acc = " + mapping.combine("acc", "cx_op_add()") + ";\n";
        body += in + "if (first == 0) cx_store(out0 + y_offset, cx_reduce_log(acc) + shift);\n";
    } else {
        const reduce_recipe rec = recipe_for(op->kind, x.type(), layout.row_length());
        body += in + rec.accumulator + " acc = " + rec.identity + ";\n";
        body += layout.element_loop(rec.accumulator,
                                    in2 + "acc = " + rec.op + "(acc, " + rec.map + ");\n", in,
                                    mapping.thread_per_row ? 8 : 1);
        body += in + "acc = " + mapping.combine("acc", rec.op) + ";\n";
        body += in + "if (first == 0) cx_store(out0 + y_offset, " + rec.finish + ");\n";
    }
    return text::make_kernel(r, body, mapping.launch());
}

kernel_source generate_softmax(const kernel_request& r) {
    const auto* op = &text::single_operand_op<op::softmax>(r, "generate_softmax");
    const shape& x = r.inputs[0];
    const shape& y = r.outputs[0];
    if (y.elements() == 0) return text::empty_kernel(r);
    const auto axis = std::size_t(op->axis);
    std::vector<bool> reduced(x.rank(), false);
    reduced.at(axis) = true;
    const row_layout layout = make_layout(x, reduced);
    const text::row_mapping mapping = mapping_for(layout);
    const std::string c = compute_type(x.type());
    const std::string in = "    ";
    const std::string in2 = "        ";

    std::string body = mapping.prologue(in) + layout.row_start(in);
    body += in + "const cx_index y_row = " + layout.offset_of(layout.outer_axes, y) + ";\n";
    body += in + c +
            " mx = " + compute_literal(x.type(), -std::numeric_limits<double>::infinity()) + ";\n";
    body += layout.element_loop(c, in2 + "mx = cx_op_max()(mx, v);\n", in);
    body += in + "mx = " + mapping.combine("mx", "cx_op_max()") + ";\n";
    body += in + c + " sum = " + compute_literal(x.type(), 0) + ";\n";
    body += layout.element_loop(c, in2 + "sum = sum + cx_reduce_exp(v - mx);\n", in);
    body += in + "sum = " + mapping.combine("sum", "cx_op_add()") + ";\n";
    const std::string y_at =
        "out0 + y_row + " + text::offset({"j"}, {x.lens()[axis]}, {y.strides()[axis]});
    if (op->log) {
        body += in + "const " + c + " log_sum = cx_reduce_log(sum);\n";
        body += layout.element_loop(c, in2 + "cx_store(" + y_at + ", (v - mx) - log_sum);\n", in);
    } else {
        body += layout.element_loop(
            c, in2 + "cx_store(" + y_at + ", cx_reduce_exp(v - mx) / sum);\n", in);
    }
    return text::make_kernel(r, body, mapping.launch());
}

kernel_source generate_arg_reduce(const kernel_request& r) {
    const auto* op = &text::single_operand_op<op::arg_reduce>(r, "generate_arg_reduce");
    const shape& x = r.inputs[0];
    const shape& y = r.outputs[0];
    CONFLUX_ASSERT(y.type() == dtype::i64, r.op->name(), ": output ", to_string(y), " is not i64");
    if (y.elements() == 0) return text::empty_kernel(r);
    const auto axis = std::size_t(op->axis);
    std::vector<bool> reduced(x.rank(), false);
    reduced.at(axis) = true;
    const row_layout layout = make_layout(x, reduced);
    const text::row_mapping mapping = mapping_for(layout);

    std::vector<std::string> output_index;
    for (std::size_t a = 0; a < x.rank(); ++a) {
        if (a != axis)
            output_index.push_back(layout.names[a]);
        else if (op->keepdims)
            output_index.push_back("0");
    }
    const std::string c = compute_type(x.type());
    const std::string pick = std::string("cx_op_arg<") + (op->max ? "true" : "false") + ", " +
                             (op->select_last_index ? "true" : "false") + ">()";
    const std::string in = "    ";
    std::string body = mapping.prologue(in) + layout.row_start(in);
    body += in + "const cx_index y_offset = " + output_offset(y, output_index) + ";\n";
    body += in + "cx_arg<" + c + "> best = {" + compute_literal(x.type(), 0) + ", -1LL};\n";
    body += layout.element_loop(
        c, in + "    best = " + pick + "(best, cx_arg<" + c + ">{v, static_cast<long long>(j)});\n",
        in);
    body += in + "best = " + mapping.combine("best", pick) + ";\n";
    body += in + "if (first == 0) out0[y_offset] = best.index;\n";
    return text::make_kernel(r, body, mapping.launch());
}

} // namespace

void add_reduce_generators() {
    using op::reduce_kind;
    for (auto kind : {reduce_kind::sum, reduce_kind::mean, reduce_kind::max, reduce_kind::min,
                      reduce_kind::prod, reduce_kind::l1, reduce_kind::l2, reduce_kind::log_sum,
                      reduce_kind::log_sum_exp, reduce_kind::sum_square})
        add_generator(op::reduce{.kind = kind}.name(), generate_reduce);
    add_generator("softmax", generate_softmax);
    add_generator("log_softmax", generate_softmax);
    add_generator("argmax", generate_arg_reduce);
    add_generator("argmin", generate_arg_reduce);
}

} // namespace conflux::cuda
