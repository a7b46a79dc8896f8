// Direct convolution and dot: one thread per output element looping over the reduction in the
// reference's order (src/ops/convolution.cpp, dot.cpp), accumulating in the compute type (float
// for f16/bf16/f32, double for f64, long long for integers). Simple and correct; the tuned
// tensor-core generator replaces them where it applies.
#include "cuda/codegen/generator.hpp"

#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"

namespace conflux::cuda {

namespace {

std::size_t value_or(const std::vector<std::size_t>& values, std::size_t i, std::size_t fallback) {
    return values.empty() ? fallback : values.at(i);
}

kernel_source one_thread_per_output(const kernel_request& r, const std::string& body,
                                    std::size_t elements) {
    return text::make_kernel(r, body, text::linear_launch(elements, text::elementwise_block));
}

// Where the batch, channel and spatial axes of a convolution operand are: [N, C, spatial...]
// or, channels last, [N, spatial..., C]. The same for weights ([K, C/group, kernel...]) and the
// output ([N, K, out spatial...]).
struct conv_axes {
    std::size_t channel;
    std::size_t first_spatial;
};

kernel_source generate_convolution(const kernel_request& r) {
    const auto* op = r.op->get_if<op::convolution>();
    CONFLUX_ASSERT(op != nullptr, "generate_convolution for ", r.op->name());
    CONFLUX_ASSERT(r.inputs.size() == 2 && r.outputs.size() == 1, r.op->name(),
                   ": input, weights and one output expected");
    const shape& x = r.inputs[0];
    const shape& w = r.inputs[1];
    const shape& y = r.outputs[0];
    CONFLUX_ASSERT(y.lens() == op->compute_shape({x, w}).lens(), r.op->name(), ": output ",
                   to_string(y), " does not match ", to_string(x), " * ", to_string(w));
    if (y.elements() == 0) return text::empty_kernel(r);

    const std::size_t rank = x.rank();
    const std::size_t nd = rank - 2;
    const conv_axes axes = op->channels_last ? conv_axes{rank - 1, 1} : conv_axes{1, 2};
    const std::size_t group_channels = w.lens()[axes.channel];
    const std::size_t group_filters = w.lens()[0] / op->group;
    auto spatial = [&](const dims& d) {
        return dims(d.begin() + std::ptrdiff_t(axes.first_spatial),
                    d.begin() + std::ptrdiff_t(axes.first_spatial + nd));
    };
    const auto out_names = text::names("o", rank);
    const auto tap_names = text::names("t", nd);
    const auto pos_names = text::names("p", nd);
    const std::string c = compute_type(x.type());
    const std::string in = "    ";

    std::string body = text::thread_per_element(y.elements(), in);
    body += text::decompose("i", y.lens(), out_names, in);
    const std::string& filter = out_names[axes.channel];
    body += in + "const cx_index c_first = " +
            (op->group == 1 ? std::string("0")
                            : filter + " / " + text::integer_literal(group_filters) + " * " +
                                  text::integer_literal(group_channels)) +
            ";\n";
    body += in +
            "const cx_index x_image = " + text::offset({"o0"}, {x.lens()[0]}, {x.strides()[0]}) +
            ";\n";
    body += in +
            "const cx_index w_filter = " + text::offset({filter}, {w.lens()[0]}, {w.strides()[0]}) +
            ";\n";
    for (std::size_t s = 0; s < nd; ++s)
        body += in + "const cx_index start" + std::to_string(s) + " = " +
                text::scaled(out_names[axes.first_spatial + s], value_or(op->stride, s, 1)) +
                " - " + text::integer_literal(value_or(op->padding, s, 0)) + ";\n";
    body += in + c + " acc = " + compute_literal(x.type(), 0) + ";\n";
    body += in + "for (cx_index c = 0; c < " + text::integer_literal(group_channels) + "; ++c) {\n";
    std::string indent = in + "    ";
    body += indent + "const cx_index x_channel = x_image + " +
            text::offset({"(c_first + c)"}, {x.lens()[axes.channel]}, {x.strides()[axes.channel]}) +
            ";\n";
    body += indent + "const cx_index w_channel = w_filter + " +
            text::offset({"c"}, {group_channels}, {w.strides()[axes.channel]}) + ";\n";
    // Taps in the reference's order; those that fall into the padding are skipped.
    for (std::size_t s = 0; s < nd; ++s) {
        const std::string& t = tap_names[s];
        const std::string& p = pos_names[s];
        body += indent + "for (cx_index " + t + " = 0; " + t + " < " +
                text::integer_literal(spatial(w.lens())[s]) + "; ++" + t + ") {\n";
        indent += "    ";
        body += indent + "const cx_index " + p + " = start" + std::to_string(s) + " + " +
                text::scaled(t, value_or(op->dilation, s, 1)) + ";\n";
        body += indent + "if (" + p + " < 0 || " + p +
                " >= " + text::integer_literal(spatial(x.lens())[s]) + ") continue;\n";
    }
    body += indent + "acc = acc + cx_load(in1 + w_channel + " +
            text::offset(tap_names, spatial(w.lens()), spatial(w.strides())) +
            ") * cx_load(in0 + x_channel + " +
            text::offset(pos_names, spatial(x.lens()), spatial(x.strides())) + ");\n";
    for (std::size_t s = nd + 1; s-- > 0;) {
        indent.resize(indent.size() - 4);
        body += indent + "}\n";
    }
    body += in + "cx_store(out0 + " + text::offset(out_names, y.lens(), y.strides()) + ", acc);\n";
    return one_thread_per_output(r, body, y.elements());
}

kernel_source generate_dot(const kernel_request& r) {
    CONFLUX_ASSERT(r.op->get_if<op::dot>() != nullptr, "generate_dot for ", r.op->name());
    CONFLUX_ASSERT(r.inputs.size() == 2 && r.outputs.size() == 1, r.op->name(),
                   ": two operands and one output expected");
    const shape& a = r.inputs[0];
    const shape& b = r.inputs[1];
    const shape& y = r.outputs[0];
    CONFLUX_ASSERT(y.lens() == r.op->compute_shape({a, b}).lens(), r.op->name(), ": output ",
                   to_string(y), " does not match ", to_string(a), " x ", to_string(b));
    if (y.elements() == 0) return text::empty_kernel(r);

    const std::size_t batch_rank = y.rank() - 2;
    const std::size_t k = a.lens()[a.rank() - 1];
    const auto out_names = text::names("o", y.rank());
    const std::string& row = out_names[batch_rank];
    const std::string& column = out_names[batch_rank + 1];
    // An operand's batch axes are right-aligned to the output's; its len-1 axes broadcast.
    auto matrix_offset = [&](const shape& s, std::size_t fixed_axis, const std::string& fixed) {
        const std::size_t own = s.rank() - 2;
        std::vector<std::string> index(out_names.begin() + std::ptrdiff_t(batch_rank - own),
                                       out_names.begin() + std::ptrdiff_t(batch_rank));
        dims lens(s.lens().begin(), s.lens().begin() + std::ptrdiff_t(own));
        dims strides(s.strides().begin(), s.strides().begin() + std::ptrdiff_t(own));
        index.push_back(fixed);
        lens.push_back(s.lens()[fixed_axis]);
        strides.push_back(s.strides()[fixed_axis]);
        return text::offset(index, lens, strides);
    };
    const std::string c = compute_type(a.type());
    const std::string in = "    ";

    std::string body = text::thread_per_element(y.elements(), in);
    body += text::decompose("i", y.lens(), out_names, in);
    body += in + "const cx_index a_row = " + matrix_offset(a, a.rank() - 2, row) + ";\n";
    body += in + "const cx_index b_column = " + matrix_offset(b, b.rank() - 1, column) + ";\n";
    body += in + c + " acc = " + compute_literal(a.type(), 0) + ";\n";
    if (k > 0) {
        body += in + "for (cx_index kk = 0; kk < " + text::integer_literal(k) + "; ++kk)\n";
        body += in + "    acc = acc + cx_load(in0 + a_row + " +
                text::offset({"kk"}, {k}, {a.strides()[a.rank() - 1]}) +
                ") * cx_load(in1 + b_column + " +
                text::offset({"kk"}, {k}, {b.strides()[b.rank() - 2]}) + ");\n";
    }
    body += in + "cx_store(out0 + " + text::offset(out_names, y.lens(), y.strides()) + ", acc);\n";
    return one_thread_per_output(r, body, y.elements());
}

} // namespace

void add_direct_gemm_generators() {
    add_generator("convolution", generate_convolution);
    add_generator("dot", generate_dot);
}

} // namespace conflux::cuda
