// DFT (opsets 17 and 20; what `torch.fft.fft*` exports to, as in Hugging Face's FNet): the
// discrete Fourier transform along one axis, as one matrix product. The transformed axis and the
// trailing real/imaginary axis are moved last and merged, so each signal is a row of n * c
// values (c = 1 for real input, 2 for complex), and a literal [n * c, m * 2] matrix of cosines
// and sines gives the m output frequencies' real and imaginary parts. A product is what the
// CUDA target runs fastest, and the signal lengths models transform (a sequence, a hidden
// size) are short enough for the matrix; longer ones are refused as unsupported.
#include "onnx/node_context.hpp"

#include "conflux/ops/dot.hpp"
#include "conflux/ops/views.hpp"

#include <cmath>
#include <numbers>

namespace conflux::onnx {

namespace {

using outputs = std::vector<instruction_ref>;

// The matrix stays below this many values (64 MiB in f32).
constexpr std::size_t max_matrix_values = std::size_t{1} << 24;

// Row (j, part) of the matrix times column (k, part'): input sample j's real or imaginary part
// into frequency k's. Forward: X_k = sum_j x_j e^{-2 pi i jk / L}; inverse: e^{+...} / L. Only
// the first min(n, length) samples count: the rest are cut off, and missing ones are zeros.
std::vector<double> dft_matrix(std::size_t n, std::size_t parts, std::size_t m, std::size_t length,
                               bool inverse) {
    std::vector<double> w(n * parts * m * 2, 0.0);
    const double sign = inverse ? 1.0 : -1.0;
    const double scale = inverse ? 1.0 / double(length) : 1.0;
    for (std::size_t j = 0; j < std::min(n, length); ++j) {
        for (std::size_t k = 0; k < m; ++k) {
            // jk mod L keeps the angle small, so large products lose no precision.
            const double angle = 2.0 * std::numbers::pi * double((j * k) % length) / double(length);
            const double cs = std::cos(angle) * scale, sn = sign * std::sin(angle) * scale;
            const std::size_t col = k * 2;
            // (a + ib)(cos + i sn) = (a cos - b sn) + i(a sn + b cos)
            w[(j * parts) * m * 2 + col] = cs;
            w[(j * parts) * m * 2 + col + 1] = sn;
            if (parts == 2) {
                w[(j * parts + 1) * m * 2 + col] = -sn;
                w[(j * parts + 1) * m * 2 + col + 1] = cs;
            }
        }
    }
    return w;
}

outputs build_dft(node_context& c) {
    auto x = c.input(0);
    const shape& xs = x->get_shape();
    const std::size_t rank = xs.rank();
    if (rank < 2 || (xs.lens()[rank - 1] != 1 && xs.lens()[rank - 1] != 2))
        c.fail("the input must end in an axis of 1 (real) or 2 (complex) values, got ",
               to_string(xs));
    if (!is_floating(xs.type())) c.fail("the input must be floating point, got ", to_string(xs));
    // Opset 20 moved the axis from an attribute (default 1) to input 2 (default -2).
    std::int64_t axis = c.attr_int("axis", 1);
    if (c.opset() >= 20) axis = c.has_input(2) ? c.constant_int(2, "axis") : -2;
    const auto a = std::size_t(c.normalize_axis(axis, rank));
    if (a == rank - 1)
        c.fail("axis ", axis, " must name a signal axis of ", to_string(xs),
               ", not the last (real/imaginary) one");
    const std::size_t n = xs.lens()[a], parts = xs.lens()[rank - 1];
    const bool inverse = c.attr_int("inverse", 0) != 0;
    const bool onesided = c.attr_int("onesided", 0) != 0;
    if (onesided && (parts == 2 || inverse))
        c.unsupported("a one-sided ", inverse ? "inverse transform" : "transform of complex input");
    std::size_t length = n;
    if (c.has_input(1)) {
        const auto given = c.constant_int(1, "dft_length");
        if (given < 1) c.fail("dft_length must be positive, got ", given);
        if (given > (1 << 20)) c.unsupported("dft_length ", given, " (above 2^20)");
        length = std::size_t(given);
    }
    const std::size_t m = onesided ? length / 2 + 1 : length;
    if (n == 0) c.fail("the signal axis ", a, " of ", to_string(xs), " is empty");
    if (double(n) * double(parts) * double(m) * 2.0 > double(max_matrix_values))
        c.unsupported("a transform of ", n, " samples into ", m, " frequencies (the ", n * parts,
                      " x ", m * 2, " matrix is over 2^24 values)");

    // [.., n, .., parts] -> [.., .., n, parts] -> [.., .., n * parts]
    std::vector<std::int64_t> to_last;
    for (std::size_t i = 0; i + 1 < rank; ++i)
        if (i != a) to_last.push_back(std::int64_t(i));
    to_last.push_back(std::int64_t(a));
    to_last.push_back(std::int64_t(rank - 1));
    const bool in_place = a == rank - 2;
    auto moved = in_place ? x : c.add(op::transpose{to_last}, {x});
    dims rows = moved->get_shape().lens();
    rows.pop_back();
    rows.back() = n * parts;
    auto signal = c.add(op::reshape{rows}, {moved});
    auto w = c.add_literal(
        from_vector(xs.type(), {n * parts, m * 2}, dft_matrix(n, parts, m, length, inverse)));
    auto y = c.add(op::dot{}, {signal, w});
    dims out = moved->get_shape().lens();
    out[rank - 2] = m;
    out[rank - 1] = 2;
    y = c.add(op::reshape{out}, {y});
    if (in_place) return {y};
    // Back to the input's order: the transformed axis returns to position a.
    std::vector<std::int64_t> back(rank);
    for (std::size_t i = 0; i < rank; ++i)
        back[std::size_t(to_last[i])] = std::int64_t(i);
    return {c.add(op::transpose{back}, {y})};
}

} // namespace

void add_dft_ops(op_table& t) {
    t["DFT"] = {1, 3, build_dft};
}

} // namespace conflux::onnx
