#include "cuda/codegen/gemm/gemm_problem.hpp"

#include "conflux/ir/operation.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/util/errors.hpp"

#include <algorithm>
#include <numeric>

namespace conflux::cuda {

namespace {

std::size_t value_or(const std::vector<std::size_t>& values, std::size_t i, std::size_t fallback) {
    return values.empty() ? fallback : values.at(i);
}

std::size_t alignment_of_offset(std::size_t offset_elems, dtype t) {
    const std::size_t bytes = offset_elems * size_of(t);
    return bytes == 0 ? 256 : std::gcd(bytes, std::size_t(256));
}

// Strides of the axes of `lens` that matter (len > 1), skipping axis `skip`.
void add_strides(std::vector<long long>& out, const dims& lens, const dims& strides,
                 std::size_t skip = std::size_t(-1)) {
    for (std::size_t i = 0; i < lens.size(); ++i)
        if (i != skip && lens[i] > 1) out.push_back(static_cast<long long>(strides[i]));
}

std::string list(const dims& d) {
    std::string s;
    for (std::size_t i = 0; i < d.size(); ++i)
        s += (i ? "," : "") + std::to_string(d[i]);
    return s;
}

std::string list(const std::vector<long long>& d) {
    std::string s;
    for (std::size_t i = 0; i < d.size(); ++i)
        s += (i ? "," : "") + std::to_string(d[i]);
    return s;
}

void compute_vector_limit(gemm_operand& o, const char* name) {
    const std::size_t eb = size_of(o.type);
    const unsigned widest = unsigned(std::max<std::size_t>(1, 16 / eb));
    o.max_vector = 1;
    o.partial_last_vector = false;
    o.vector_limit_reason.clear();
    if (!o.has_contiguous_axis) {
        o.vector_limit_reason = std::string(name) + " has no axis of stride 1";
        return;
    }
    for (unsigned v = widest; v > 1; v /= 2) {
        std::string why;
        // Only along the rows: a k-major vector past K would need its depth's bounds per element.
        const bool partial = o.contiguous_extent % v != 0;
        if (partial && o.major != operand_major::mn)
            why = std::string(name) + "'s contiguous extent " +
                  std::to_string(o.contiguous_extent) + " is not a multiple of " +
                  std::to_string(v);
        for (long long s : o.other_strides)
            if (why.empty() && s % static_cast<long long>(v) != 0)
                why = std::string(name) + "'s stride " + std::to_string(s) +
                      " is not a multiple of " + std::to_string(v);
        if (why.empty() && o.base_align_bytes % (v * eb) != 0)
            why = std::string(name) + " starts " + std::to_string(o.base_align_bytes) +
                  "-byte aligned, " + std::to_string(v) + " elements need " +
                  std::to_string(v * eb);
        if (why.empty()) {
            o.max_vector = v;
            o.partial_last_vector = partial;
            return;
        }
        if (o.vector_limit_reason.empty()) o.vector_limit_reason = why;
    }
}

// A plain (non-convolution-input) operand's contiguous axis: k when its last depth axis has
// stride 1, else its rows when they do, else none (k-major, element loads).
void choose_major(gemm_operand& o, std::size_t rows, std::vector<long long> batch_and_row) {
    const std::size_t last = o.k_lens.size() - 1;
    const bool k_contiguous = o.k_lens[last] > 1 && o.k_strides[last] == 1;
    const bool rows_contiguous = rows > 1 && o.row_stride == 1;
    std::vector<long long> others;
    for (std::size_t i = 0; i < o.batch_strides.size(); ++i)
        if (o.batch_strides[i] != 0) others.push_back(static_cast<long long>(o.batch_strides[i]));
    others.insert(others.end(), batch_and_row.begin(), batch_and_row.end());
    if (k_contiguous || !rows_contiguous) {
        o.major = operand_major::k;
        o.has_contiguous_axis = k_contiguous;
        o.contiguous_extent = o.k_lens[last];
        if (rows > 1) others.push_back(o.row_stride);
        for (std::size_t i = 0; i < last; ++i)
            if (o.k_lens[i] > 1) others.push_back(o.k_strides[i]);
    } else {
        o.major = operand_major::mn;
        o.has_contiguous_axis = true;
        o.contiguous_extent = rows;
        for (std::size_t i = 0; i <= last; ++i)
            if (o.k_lens[i] > 1) others.push_back(o.k_strides[i]);
    }
    o.other_strides = others;
}

std::optional<gemm_problem> make_dot(const shape& a, const shape& b, const shape& out,
                                     const std::array<std::size_t, 2>& offsets) {
    gemm_problem p;
    p.family = gemm_family::dot;
    p.type = a.type();
    const std::size_t out_batch_rank = out.rank() - 2;
    p.m = a.lens()[a.rank() - 2];
    p.k = a.lens()[a.rank() - 1];
    p.n = b.lens()[b.rank() - 1];
    p.batch_lens.assign(out.lens().begin(), out.lens().end() - 2);

    // An operand's batch axes right-aligned to the output's; missing or len-1 axes broadcast.
    auto batch_strides = [&](const shape& s) {
        dims r(out_batch_rank, 0);
        const std::size_t own = s.rank() - 2;
        for (std::size_t i = 0; i < own; ++i) {
            const std::size_t axis = out_batch_rank - own + i;
            if (s.lens()[i] != 1 && p.batch_lens[axis] != 1) r[axis] = s.strides()[i];
        }
        return r;
    };
    auto fill = [&](gemm_operand& o, const shape& s, std::size_t row_axis, std::size_t k_axis,
                    std::size_t rows, std::size_t offset, const char* name) {
        o.type = s.type();
        o.batch_strides = batch_strides(s);
        o.row_stride = static_cast<long long>(s.strides()[row_axis]);
        o.k_lens = {p.k};
        o.k_strides = {static_cast<long long>(s.strides()[k_axis])};
        o.base_align_bytes = alignment_of_offset(offset, s.type());
        choose_major(o, rows, {});
        compute_vector_limit(o, name);
    };
    fill(p.a, a, a.rank() - 2, a.rank() - 1, p.m, offsets[0], "A");
    fill(p.b, b, b.rank() - 1, b.rank() - 2, p.n, offsets[1], "B");
    return p;
}

// The same memory with its axes reordered.
shape permuted(const shape& s, const std::vector<std::size_t>& perm) {
    dims lens, strides;
    for (auto i : perm) {
        lens.push_back(s.lens()[i]);
        strides.push_back(s.strides()[i]);
    }
    return {s.type(), lens, strides};
}

std::optional<gemm_problem> make_convolution(const op::convolution& op, const shape& x_in,
                                             const shape& w_in, const shape& y_in,
                                             const std::array<std::size_t, 2>& offsets) {
    const std::size_t rank = x_in.rank();
    const std::size_t nd = rank - 2;
    shape x = x_in, w = w_in, y = y_in;
    if (!op.channels_last) {
        std::vector<std::size_t> perm{0};
        for (std::size_t i = 2; i < rank; ++i)
            perm.push_back(i);
        perm.push_back(1);
        x = permuted(x_in, perm);
        w = permuted(w_in, perm);
        y = permuted(y_in, perm);
    }
    conv_geometry g;
    g.channels_last = op.channels_last;
    g.groups = op.group;
    g.images = x.lens()[0];
    g.group_channels = w.lens()[rank - 1];
    g.group_filters = w.lens()[0] / op.group;
    g.image_stride = static_cast<long long>(x.strides()[0]);
    g.channel_stride = static_cast<long long>(x.strides()[rank - 1]);
    for (std::size_t d = 0; d < nd; ++d) {
        g.input_spatial.push_back(x.lens()[1 + d]);
        g.output_spatial.push_back(y.lens()[1 + d]);
        g.kernel.push_back(w.lens()[1 + d]);
        g.stride.push_back(value_or(op.stride, d, 1));
        g.pad_begin.push_back(value_or(op.padding, d, 0));
        g.dilation.push_back(value_or(op.dilation, d, 1));
        g.input_spatial_strides.push_back(static_cast<long long>(x.strides()[1 + d]));
    }

    gemm_problem p;
    p.family = gemm_family::convolution;
    p.type = x.type();
    p.m = g.images;
    for (auto o : g.output_spatial)
        p.m *= o;
    p.n = g.group_filters;
    p.k = g.group_channels;
    for (auto r : g.kernel)
        p.k *= r;
    p.batch_lens = {g.groups};

    // Input: depth k = (taps..., c) steps by dilation * spatial stride per tap, channel stride
    // per channel; each group starts group_channels channels further.
    gemm_operand& a = p.a;
    a.type = x.type();
    a.batch_strides = {g.groups > 1 ? g.group_channels * x.strides()[rank - 1] : 0};
    a.k_lens = g.kernel;
    a.k_lens.push_back(g.group_channels);
    for (std::size_t d = 0; d < nd; ++d)
        a.k_strides.push_back(static_cast<long long>(g.dilation[d]) * g.input_spatial_strides[d]);
    a.k_strides.push_back(g.channel_stride);
    a.major = operand_major::k;
    a.has_contiguous_axis = g.group_channels > 1 && g.channel_stride == 1;
    a.contiguous_extent = g.group_channels;
    add_strides(a.other_strides, x.lens(), x.strides(), rank - 1);
    a.base_align_bytes = alignment_of_offset(offsets[0], x.type());
    compute_vector_limit(a, "the input");

    // Weights [K, kernel..., C/group]: rows are filters, depth (taps..., c).
    gemm_operand& b = p.b;
    b.type = w.type();
    b.batch_strides = {g.groups > 1 ? g.group_filters * w.strides()[0] : 0};
    b.row_stride = static_cast<long long>(w.strides()[0]);
    b.k_lens = a.k_lens;
    for (std::size_t d = 0; d < nd + 1; ++d)
        b.k_strides.push_back(static_cast<long long>(w.strides()[1 + d]));
    b.base_align_bytes = alignment_of_offset(offsets[1], w.type());
    choose_major(b, p.n, {});
    compute_vector_limit(b, "the weights");

    p.conv = g;
    return p;
}

} // namespace

std::size_t gemm_problem::batch() const {
    std::size_t r = 1;
    for (auto l : batch_lens)
        r *= l;
    return r;
}

std::optional<gemm_problem> make_gemm_problem(const operation& anchor,
                                              const std::vector<shape>& inputs, const shape& output,
                                              const std::array<std::size_t, 2>& offset_elems) {
    if (inputs.size() != 2) return std::nullopt;
    if (anchor.get_if<op::dot>() != nullptr)
        return make_dot(inputs[0], inputs[1], output, offset_elems);
    if (const auto* conv = anchor.get_if<op::convolution>())
        return make_convolution(*conv, inputs[0], inputs[1], output, offset_elems);
    return std::nullopt;
}

void update_vector_limits(gemm_problem& p) {
    const bool conv = p.family == gemm_family::convolution;
    compute_vector_limit(p.a, conv ? "the input" : "A");
    compute_vector_limit(p.b, conv ? "the weights" : "B");
}

std::string to_string(operand_major m) {
    return m == operand_major::k ? "k-major" : "mn-major";
}

std::string to_string(const gemm_problem& p) {
    std::string s =
        p.family == gemm_family::dot ? "dot" : "conv" + std::to_string(p.conv->nd()) + "d";
    s += " " + std::string(to_string(p.type));
    if (!p.batch_lens.empty()) s += " z[" + list(p.batch_lens) + "]";
    s += " m" + std::to_string(p.m) + " n" + std::to_string(p.n) + " k" + std::to_string(p.k);
    if (p.conv) {
        const auto& g = *p.conv;
        s += " img" + std::to_string(g.images) + " in[" + list(g.input_spatial) + "] out[" +
             list(g.output_spatial) + "] kernel[" + list(g.kernel) + "] stride[" + list(g.stride) +
             "] pad[" + list(g.pad_begin) + "] dil[" + list(g.dilation) + "] c" +
             std::to_string(g.group_channels) + " istr[" + std::to_string(g.image_stride) + ";" +
             list(g.input_spatial_strides) + ";" + std::to_string(g.channel_stride) + "]";
    }
    auto operand = [](const char* name, const gemm_operand& o) {
        return std::string(" ") + name + "{" + to_string(o.major) + " " +
               std::to_string(o.base_align_bytes) + "B v" + std::to_string(o.max_vector) +
               (o.partial_last_vector ? "p" : "") + " zs[" + list(o.batch_strides) + "] rs" +
               std::to_string(o.row_stride) + " ks[" + list(o.k_strides) + "]}";
    };
    return s + operand("A", p.a) + operand("B", p.b);
}

} // namespace conflux::cuda
