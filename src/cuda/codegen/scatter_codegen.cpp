// scatter_nd, scatter_elements: one thread per column of the output, a column being the
// elements that differ only in the axes the indices choose (the first k axes for scatter_nd,
// `axis` for scatter_elements). Updates for one column can land only in that column, so its
// thread copies the column from the data and then applies the updates aimed at it one after the
// other in the updates' order: parallel over columns, sequential over update rows. A place named
// twice keeps the last update and add/mul/max/min combine in the reference's order, with no
// atomics and no second kernel. Indices read from memory go through cx_gather_index, which
// reports an out-of-range one to the host as gather's do.
#include "cuda/codegen/generator.hpp"

#include "conflux/ops/scatter.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "ops/op_helpers.hpp"

namespace conflux::cuda {

namespace {

const std::vector<std::string> scatter_headers = {"types.cuh", "math.cuh"};

// Statements combining the update `u` (a storage value of dtype t) into the element at the
// pointer `p`, as the reference's combine does: floating types in their compute type, rounded
// back; integers (and bool) in their own type, add and mul wrapping through unsigned.
std::string combine(op::scatter_reduction r, dtype t, const std::string& p, const std::string& u,
                    const std::string& indent) {
    using op::scatter_reduction;
    if (r == scatter_reduction::none) return indent + "*" + p + " = " + u + ";\n";
    if (is_floating(t)) {
        const std::string c = compute_type(t);
        std::string s = indent + "const " + c + " a = cx_load(" + p + ");\n" + indent + "const " +
                        c + " b = cx_load(&" + u + ");\n";
        switch (r) {
        case scatter_reduction::add:
            return s + indent + "cx_store(" + p + ", a + b);\n";
        case scatter_reduction::mul:
            return s + indent + "cx_store(" + p + ", a * b);\n";
        case scatter_reduction::max: // a NaN wins, whichever side it is on
            return s + indent + "if (b > a || b != b) *" + p + " = " + u + ";\n";
        default:
            return s + indent + "if (b < a || b != b) *" + p + " = " + u + ";\n";
        }
    }
    const std::string st = storage_type(t);
    auto wrapping = [&](const char* op) {
        return indent + "*" + p + " = static_cast<" + st + ">(static_cast<unsigned long long>(*" +
               p + ") " + op + " static_cast<unsigned long long>(" + u + "));\n";
    };
    switch (r) {
    case scatter_reduction::add:
        return wrapping("+");
    case scatter_reduction::mul:
        return wrapping("*");
    case scatter_reduction::max:
        return indent + "if (*" + p + " < " + u + ") *" + p + " = " + u + ";\n";
    default:
        return indent + "if (" + u + " < *" + p + ") *" + p + " = " + u + ";\n";
    }
}

// `const cx_index name = <index read at in1[offset]>` for an axis of length n.
std::string read_index(const std::string& name, const std::string& offset, std::size_t n,
                       const std::string& indent) {
    return indent + "const cx_index " + name +
           " = static_cast<cx_index>(cx_gather_index(static_cast<long long>(in1[" + offset +
           "]), " + text::long_long_literal(n) + "));\n";
}

using op::product;

// The request's Op, checked: the lowering builds requests from valid instructions, so a
// mismatch is an internal error.
template <class Op> const Op& scatter_op(const kernel_request& r, const char* generator) {
    const auto* op = r.op->get_if<Op>();
    CONFLUX_ASSERT(op != nullptr, generator, " for ", r.op->name());
    CONFLUX_ASSERT(r.inputs.size() == 3 && r.outputs.size() == 1, r.op->name(),
                   ": data, indices, updates and one output expected");
    CONFLUX_ASSERT(r.outputs[0].lens() == op->compute_shape(r.inputs).lens() &&
                       r.outputs[0].type() == r.inputs[0].type(),
                   generator, ": output ", to_string(r.outputs[0]), " does not match data ",
                   to_string(r.inputs[0]));
    return *op;
}

// Data [prefix..., slice...] with prefix the first k axes; indices [rows..., k]; updates
// [rows..., slice...]. Thread = a slice position.
kernel_source generate_scatter_nd(const kernel_request& r) {
    const auto& scatter = scatter_op<op::scatter_nd>(r, "generate_scatter_nd");
    const shape& data = r.inputs[0];
    const shape& indices = r.inputs[1];
    const shape& updates = r.inputs[2];
    const shape& y = r.outputs[0];
    if (y.elements() == 0) return text::empty_kernel(r);

    const std::size_t rank = data.rank();
    const std::size_t k = indices.lens().back();
    const auto at = [](const dims& d, std::size_t begin, std::size_t end) {
        return dims(d.begin() + std::ptrdiff_t(begin), d.begin() + std::ptrdiff_t(end));
    };
    const dims prefix_lens = at(data.lens(), 0, k);
    const dims slice_lens = at(data.lens(), k, rank);
    const dims row_lens = at(indices.lens(), 0, indices.rank() - 1);
    const std::vector<std::string> prefix = text::names("a", k);
    const std::vector<std::string> slice = text::names("s", rank - k);
    const std::vector<std::string> row = text::names("n", row_lens.size());
    const std::vector<std::string> chosen = text::names("c", k);
    auto joined = [](std::vector<std::string> a, const std::vector<std::string>& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    };
    const std::size_t columns = product(slice_lens);
    const std::size_t rows = product(row_lens);
    const std::string in = "    ", in2 = "        ";

    std::string body = text::thread_per_element(columns, in);
    body += text::decompose("i", slice_lens, slice, in);
    body += in + "for (cx_index p = 0; p < " + text::integer_literal(product(prefix_lens)) +
            "; ++p) {\n";
    body += text::decompose("p", prefix_lens, prefix, in2);
    const auto element = joined(prefix, slice);
    body += in2 + "out0[" + text::offset(element, y.lens(), y.strides()) + "] = in0[" +
            text::offset(element, data.lens(), data.strides()) + "];\n";
    body += in + "}\n";
    if (rows != 0) {
        body += in + "for (cx_index q = 0; q < " + text::integer_literal(rows) + "; ++q) {\n";
        body += text::decompose("q", row_lens, row, in2);
        for (std::size_t j = 0; j < k; ++j) {
            auto component = row;
            component.push_back(text::decimal_literal(std::int64_t(j)));
            body +=
                read_index(chosen[j], text::offset(component, indices.lens(), indices.strides()),
                           data.lens()[j], in2);
        }
        body += in2 + storage_type(y.type()) + "* const at = out0 + " +
                text::offset(joined(chosen, slice), y.lens(), y.strides()) + ";\n";
        body += in2 + "const " + storage_type(y.type()) + " u = in2[" +
                text::offset(joined(row, slice), updates.lens(), updates.strides()) + "];\n";
        body += combine(scatter.reduction, y.type(), "at", "u", in2);
        body += in + "}\n";
    }
    return text::make_kernel(r, body, text::linear_launch(columns, text::elementwise_block),
                             scatter_headers);
}

// Data, indices and updates of one rank; thread = a position over every data axis but `axis`.
kernel_source generate_scatter_elements(const kernel_request& r) {
    const auto& scatter = scatter_op<op::scatter_elements>(r, "generate_scatter_elements");
    const shape& data = r.inputs[0];
    const shape& indices = r.inputs[1];
    const shape& updates = r.inputs[2];
    const shape& y = r.outputs[0];
    if (y.elements() == 0) return text::empty_kernel(r);

    const auto axis = std::size_t(scatter.axis);
    const std::size_t rank = data.rank();
    dims column_lens;
    std::vector<std::string> column;
    std::vector<std::string> position = text::names("c", rank); // column names, `axis` replaced
    for (std::size_t d = 0; d < rank; ++d)
        if (d != axis) {
            column_lens.push_back(data.lens()[d]);
            column.push_back(position[d]);
        }
    const std::size_t columns = product(column_lens);
    const std::string in = "    ", in2 = "        ";
    auto with_axis = [&](const std::string& v) {
        auto p = position;
        p[axis] = v;
        return p;
    };

    std::string body = text::thread_per_element(columns, in);
    body += text::decompose("i", column_lens, column, in);
    body +=
        in + "for (cx_index j = 0; j < " + text::integer_literal(data.lens()[axis]) + "; ++j) {\n";
    body += in2 + "out0[" + text::offset(with_axis("j"), y.lens(), y.strides()) + "] = in0[" +
            text::offset(with_axis("j"), data.lens(), data.strides()) + "];\n";
    body += in + "}\n";
    if (indices.elements() != 0) {
        // Columns outside the indices' lens get no update.
        std::string inside;
        for (std::size_t d = 0; d < rank; ++d)
            if (d != axis && indices.lens()[d] < data.lens()[d])
                inside += (inside.empty() ? "" : " && ") + position[d] + " < " +
                          text::integer_literal(indices.lens()[d]);
        if (!inside.empty()) body += in + "if (!(" + inside + ")) return;\n";
        body += in + "for (cx_index n = 0; n < " + text::integer_literal(indices.lens()[axis]) +
                "; ++n) {\n";
        const auto source = with_axis("n");
        body += read_index("t", text::offset(source, indices.lens(), indices.strides()),
                           data.lens()[axis], in2);
        body += in2 + storage_type(y.type()) + "* const at = out0 + " +
                text::offset(with_axis("t"), y.lens(), y.strides()) + ";\n";
        body += in2 + "const " + storage_type(y.type()) + " u = in2[" +
                text::offset(source, updates.lens(), updates.strides()) + "];\n";
        body += combine(scatter.reduction, y.type(), "at", "u", in2);
        body += in + "}\n";
    }
    return text::make_kernel(r, body, text::linear_launch(columns, text::elementwise_block),
                             scatter_headers);
}

} // namespace

void add_scatter_generators() {
    add_generator("scatter_nd", generate_scatter_nd);
    add_generator("scatter_elements", generate_scatter_elements);
}

} // namespace conflux::cuda
