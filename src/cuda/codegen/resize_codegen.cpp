// resize: one thread per output element. The taps of every resized axis come from the op's
// axis_taps, the same tables the reference evaluates, written into the kernel as constant
// arrays: per axis and output position, the input offsets (index times the input's stride, so
// any input strides are honoured) and weights. The taps are walked in the reference's order
// (axes outermost first, the weight a running product in axis order), so sums round alike.
// Axes that are not resized read the output position itself and need no table.
#include "cuda/codegen/generator.hpp"

#include "conflux/ops/resize.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/index_values.hpp"

#include <algorithm>

namespace conflux::cuda {

namespace {

// Table entries one kernel may hold in its source: an 8K image's worth of bicubic taps on two
// axes, with NVRTC's work still small.
constexpr std::size_t max_table_entries = std::size_t{1} << 18;

std::string table(const std::string& type, const std::string& name,
                  const std::vector<std::string>& values) {
    std::string s =
        "__device__ const " + type + " " + name + "[" + std::to_string(values.size()) + "] = {";
    for (std::size_t k = 0; k < values.size(); ++k)
        s += (k % 8 == 0 ? "\n    " : " ") + values[k] + ",";
    return s + "\n};\n";
}

kernel_source generate_resize(const kernel_request& r) {
    const auto& op = text::single_operand_op<op::resize>(r, "generate_resize");
    const shape& x = r.inputs[0];
    const shape& y = r.outputs[0];
    if (y.elements() == 0) return text::empty_kernel(r);
    const std::size_t rank = x.rank();
    const dtype t = y.type();
    const bool nearest = op.mode == op::resize_mode::nearest;
    const std::string c = compute_type(t);
    const std::string index = text::index_type(r);
    const auto out_names = text::names("o", rank);

    std::vector<op::resize_axis_taps> taps(rank);
    std::vector<std::size_t> resized;
    std::vector<std::string> identity_index;
    dims identity_lens;
    dims identity_strides;
    std::size_t entries = 0;
    for (std::size_t d = 0; d < rank; ++d) {
        taps[d] = op.axis_taps(d, x.lens()[d]);
        if (taps[d].identity) {
            identity_index.push_back(out_names[d]);
            identity_lens.push_back(x.lens()[d]);
            identity_strides.push_back(x.strides()[d]);
        } else {
            resized.push_back(d);
            entries += taps[d].index.size();
        }
    }
    CONFLUX_USER_CHECK(entries <= max_table_entries, "resize: the cuda target holds at most ",
                       max_table_entries, " interpolation taps per kernel; this one needs ",
                       entries);

    std::string globals;
    std::vector<std::string> outside_tests;
    for (std::size_t d : resized) {
        const auto& a = taps[d];
        const std::string suffix = std::to_string(d);
        std::vector<std::string> offsets;
        for (auto i : a.index)
            offsets.push_back(text::integer_literal(std::size_t(i) * x.strides()[d]));
        globals += table("cx_index", r.entry + "_offset" + suffix, offsets);
        if (!nearest) {
            std::vector<std::string> weights;
            for (double w : a.weight)
                weights.push_back(compute_literal(t, w));
            globals += table(c, r.entry + "_weight" + suffix, weights);
        }
        if (std::find(a.outside.begin(), a.outside.end(), true) != a.outside.end()) {
            std::vector<std::string> flags;
            for (bool o : a.outside)
                flags.push_back(o ? "1" : "0");
            globals += table("unsigned char", r.entry + "_outside" + suffix, flags);
            outside_tests.push_back(r.entry + "_outside" + suffix + "[" + out_names[d] + "]");
        }
    }

    const std::string in = "    ";
    std::string body = text::thread_per_element(y.elements(), in);
    body += text::decompose("i", y.lens(), out_names, in);
    const std::string store = "out0[" + text::offset(out_names, y.lens(), y.strides()) + "]";
    if (!outside_tests.empty()) {
        std::string cond;
        for (const auto& o : outside_tests)
            cond += (cond.empty() ? "" : " || ") + o;
        body += in + "if (" + cond + ") {\n" + in + "    " + store + " = " +
                index::storage_constant_of(t, op.extrapolation_value) + ";\n" + in +
                "    return;\n" + in + "}\n";
    }
    body += in + "const cx_index base = " +
            text::offset(identity_index, identity_lens, identity_strides) + ";\n";
    if (nearest) {
        // One tap per axis: a copy of the storage value, exact for every dtype.
        std::string at = "base";
        for (std::size_t d : resized)
            at += " + " + r.entry + "_offset" + std::to_string(d) + "[" + out_names[d] + "]";
        body += in + store + " = in0[" + at + "];\n";
    } else {
        body += in + c + " acc = " + compute_literal(t, 0) + ";\n";
        std::string indent = in;
        std::string offset = "base";
        std::string weight = compute_literal(t, 1);
        for (std::size_t d : resized) {
            const std::string s = std::to_string(d);
            const std::string n = text::integer_literal(taps[d].taps);
            body +=
                indent + "for (cx_index t" + s + " = 0; t" + s + " < " + n + "; ++t" + s + ") {\n";
            indent += "    ";
            body += indent + "const cx_index k" + s + " = " + out_names[d] + " * " + n + " + t" +
                    s + ";\n";
            body += indent + "const cx_index at" + s + " = " + offset + " + " + r.entry +
                    "_offset" + s + "[k" + s + "];\n";
            body += indent + "const " + c + " w" + s + " = " + weight + " * " + r.entry +
                    "_weight" + s + "[k" + s + "];\n";
            offset = "at" + s;
            weight = "w" + s;
        }
        body += indent + "acc = acc + " + weight + " * cx_load(in0 + " + offset + ");\n";
        for (std::size_t k = 0; k < resized.size(); ++k) {
            indent.resize(indent.size() - 4);
            body += indent + "}\n";
        }
        body += in + "cx_store(&" + store + ", acc);\n";
    }

    kernel_source k;
    k.entry = r.entry;
    k.code = text::include_prelude({"types.cuh"}) + text::suppress_unused_warnings + "typedef " +
             index + " cx_index;\n\n" + globals + "\n" +
             text::kernel_signature(r.entry, text::buffer_parameters(r.inputs, r.outputs)) +
             " {\n" + body + "}\n";
    k.launch = text::linear_launch(y.elements(), text::elementwise_block);
    return k;
}

} // namespace

void add_resize_generators() {
    add_generator("resize", generate_resize);
}

} // namespace conflux::cuda
