// max_pool and average_pool over [N, C, spatial...]: one thread per output element, taps in the
// reference's order (src/ops/pooling.cpp), so sums round the same way. Taps outside the input
// are skipped; count_include_pad divides by the taps inside the explicitly padded extent.
// Threads take output elements in row-major order, so a channels-last pooling ([N, spatial...,
// C]) has neighbouring threads on neighbouring channels: its loads and stores coalesce, and
// where the channels are dense a thread takes 16 bytes of them (channel_vector).
#include "cuda/codegen/generator.hpp"

#include "conflux/ops/pooling.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"

#include <limits>

namespace conflux::cuda {

namespace {

// The attribute value for spatial axis i, or ONNX's default when the attribute is empty.
std::size_t value_or(const std::vector<std::size_t>& values, std::size_t i, std::size_t fallback) {
    return values.empty() ? fallback : values.at(i);
}

// Channels per thread of a channels-last pooling whose channels are dense in x and y: 16 bytes
// where the channel count and every other stride allow (ResNet-50's max pool at batch 256 ran
// at 1.5 TB/s with one 2-byte load per thread and tap on an H100), else 1.
std::size_t channel_vector(const kernel_request& r, const op::pooling& op) {
    const shape& x = r.inputs[0];
    const shape& y = r.outputs[0];
    if (!op.channels_last || !is_floating(x.type()) || x.type() == dtype::f64) return 1;
    const std::size_t last = x.rank() - 1;
    if (x.strides()[last] != 1 || y.strides()[last] != 1) return 1;
    std::size_t vec = 16 / size_of(x.type());
    auto strides_allow = [&](const shape& s) {
        for (std::size_t i = 0; i < last; ++i)
            if (s.lens()[i] > 1 && s.strides()[i] % vec != 0) return false;
        return true;
    };
    while (vec > 1 && (x.lens()[last] % vec != 0 || !strides_allow(x) || !strides_allow(y) ||
                       !input_aligned_to(r, 0, vec)))
        vec /= 2;
    return vec;
}

kernel_source generate_pooling(const kernel_request& r) {
    const auto* op = &text::single_operand_op<op::pooling>(r, "generate_pooling");
    const shape& x = r.inputs[0];
    const shape& y = r.outputs[0];
    if (y.elements() == 0) return text::empty_kernel(r);
    // Each thread pools `vec` neighbouring channels, each in the order of the scalar kernel, so
    // the results are the same bits.
    const std::size_t vec = channel_vector(r, *op);
    const std::string storage = storage_type(x.type());
    const std::string packed = "cx_packed<" + storage + ", " + std::to_string(vec) + ">";
    // The output as [.., C / vec] vectors: what the threads decompose.
    dims y_vectors = y.lens();
    y_vectors.back() /= vec;

    const std::size_t nd = x.rank() - 2;
    const bool is_max = op->mode == op::pooling_mode::max;
    const bool floating = compute_type(x.type()) != "long long";
    const std::string c = compute_type(x.type());
    const auto out_names = text::names("o", x.rank());
    const auto tap_names = text::names("t", nd);
    const auto pos_names = text::names("p", nd);
    // Where the channel and the spatial axes are in this op's axis order.
    const std::size_t channel_axis = op->channels_last ? x.rank() - 1 : 1;
    const std::size_t first_spatial = op->channels_last ? 1 : 2;
    const dims in_spatial(x.lens().begin() + first_spatial, x.lens().begin() + first_spatial + nd);
    const dims in_spatial_strides(x.strides().begin() + first_spatial,
                                  x.strides().begin() + first_spatial + nd);
    const std::string channel_name = out_names[channel_axis];

    const std::string in = "    ";
    std::string body = text::thread_per_element(y.elements() / vec, in);
    body += text::decompose("i", y_vectors, out_names, in);
    if (vec > 1) body += in + "const cx_index c0 = " + text::scaled(channel_name, vec) + ";\n";
    const std::string first_channel = vec > 1 ? "c0" : channel_name;
    body += in + "const cx_index x_plane = " +
            text::offset({"o0", first_channel}, {x.lens()[0], x.lens()[channel_axis]},
                         {x.strides()[0], x.strides()[channel_axis]}) +
            ";\n";
    for (std::size_t i = 0; i < nd; ++i) {
        body += in + "const cx_index start" + std::to_string(i) + " = " +
                text::scaled(out_names[first_spatial + i], value_or(op->stride, i, 1)) + " - " +
                text::integer_literal(value_or(op->padding, i, 0)) + ";\n";
    }
    if (is_max) {
        const std::string lowest =
            floating ? compute_literal(x.type(), -std::numeric_limits<double>::infinity())
                     : text::integer_literal(std::numeric_limits<long long>::lowest());
        body += in + c + " acc[" + std::to_string(vec) + "];\n" + in + "for (int j = 0; j < " +
                std::to_string(vec) + "; ++j) acc[j] = " + lowest + ";\n";
    } else {
        body += in + c + " acc[" + std::to_string(vec) + "];\n" + in + "for (int j = 0; j < " +
                std::to_string(vec) + "; ++j) acc[j] = " + compute_literal(x.type(), 0) + ";\n";
        body += in + "cx_index taps = 0;\n";
    }

    // The window's taps, nested in axis order, skipping those outside the input.
    std::string indent = in;
    for (std::size_t i = 0; i < nd; ++i) {
        const std::string& t = tap_names[i];
        const std::string& p = pos_names[i];
        body += indent + "for (cx_index " + t + " = 0; " + t + " < " +
                text::integer_literal(op->lengths.at(i)) + "; ++" + t + ") {\n";
        indent += "    ";
        body += indent + "const cx_index " + p + " = start" + std::to_string(i) + " + " +
                text::scaled(t, value_or(op->dilation, i, 1)) + ";\n";
        body += indent + "if (" + p + " < 0 || " + p +
                " >= " + text::integer_literal(in_spatial[i]) + ") continue;\n";
    }
    const std::string tap =
        "in0 + x_plane + " + text::offset(pos_names, in_spatial, in_spatial_strides);
    body += indent + "const " + packed + " w = *reinterpret_cast<const " + packed + "*>(" + tap +
            ");\n";
    body += indent + "for (int j = 0; j < " + std::to_string(vec) + "; ++j) {\n";
    body += indent + "    const " + c + " v = cx_load(&w.v[j]);\n";
    if (is_max) {
        // A NaN anywhere in the window wins, as in the reference.
        body += indent + "    if (v > acc[j]" + (floating ? " || v != v" : "") + ") acc[j] = v;\n";
    } else {
        body += indent + "    acc[j] = acc[j] + v;\n";
    }
    body += indent + "}\n";
    if (!is_max) body += indent + "++taps;\n";
    for (std::size_t i = nd; i-- > 0;) {
        indent.resize(indent.size() - 4);
        body += indent + "}\n";
    }

    if (!is_max) {
        std::string divisor = "taps";
        if (op->count_include_pad) {
            // Taps inside [-pad_begin, len + pad_end) per axis; in ceil mode a window can reach
            // past the end padding, and those taps never count.
            body += in + "cx_index padded_taps = 1;\n";
            for (std::size_t i = 0; i < nd; ++i) {
                const std::string limit =
                    text::integer_literal(in_spatial[i] + value_or(op->padding, nd + i, 0));
                body += in + "{\n" + in + "    cx_index n = 0;\n" + in +
                        "    for (cx_index t = 0; t < " + text::integer_literal(op->lengths.at(i)) +
                        "; ++t)\n" + in + "        if (start" + std::to_string(i) + " + " +
                        text::scaled("t", value_or(op->dilation, i, 1)) + " < " + limit +
                        ") ++n;\n" + in + "    padded_taps *= n;\n" + in + "}\n";
            }
            divisor = "padded_taps";
        }
        body += in + "for (int j = 0; j < " + std::to_string(vec) + "; ++j)\n" + in +
                "    acc[j] = " + divisor + " == 0 ? " + compute_literal(x.type(), 0) +
                " : acc[j] / static_cast<" + c + ">(" + divisor + ");\n";
    }
    std::vector<std::string> out_index = out_names;
    out_index[channel_axis] = first_channel;
    body += in + packed + " result;\n" + in + "for (int j = 0; j < " + std::to_string(vec) +
            "; ++j) cx_store(&result.v[j], acc[j]);\n";
    body += in + "*reinterpret_cast<" + packed + "*>(out0 + " +
            text::offset(out_index, y.lens(), y.strides()) + ") = result;\n";

    return text::make_kernel(r, body,
                             text::linear_launch(y.elements() / vec, text::elementwise_block));
}

} // namespace

void add_pooling_generators() {
    add_generator("max_pool", generate_pooling);
    add_generator("average_pool", generate_pooling);
}

} // namespace conflux::cuda
