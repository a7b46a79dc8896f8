// The tensor-core GEMM generator on a GPU: for each problem below and every valid candidate
// config (plus a few forced variants), generate, compile (NVRTC, in parallel), load, run on
// random data with the output (and split-K workspace) poisoned with 0xff bytes, and compare
// with a CPU reference accumulating in double: relative RMS within the dtype's tolerance, no
// NaN, integers exact, and no byte of the output buffer outside the output's elements touched.
// Then times f16 and bf16 4096^3 and 8192^3 with the best-ranked configs. Without a GPU it prints
// "no CUDA device" and exits 0 (CTest reports it skipped). Exit status 1 when any config fails.
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/util/parallel_for.hpp"
#include "cuda/codegen/gemm/depthwise_kernel.hpp"
#include "cuda/codegen/gemm/gemm_kernel.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_info.hpp"
#include "cuda/runtime/loaded_kernels.hpp"
#include "cuda/runtime/tensor_maps.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <random>

namespace conflux::cuda {
namespace {

// ---- host data --------------------------------------------------------------------------

// A buffer of `space` elements of type t (plus `guard` poisoned elements after them), with
// the value of every slot kept in double for the reference.
struct host_tensor {
    shape s;
    std::size_t offset = 0; // where the view starts in the buffer, in elements
    std::vector<double> values;
    std::vector<unsigned char> bytes;
};

void put(dtype t, unsigned char* base, std::size_t i, double v) {
    visit_storage(t, [&](auto tag) {
        using S = typename decltype(tag)::type;
        visit_compute(t, [&](auto ctag) {
            using C = typename decltype(ctag)::type;
            const S stored = convert_value<S>(static_cast<C>(v));
            std::memcpy(base + i * sizeof(S), &stored, sizeof(S));
        });
    });
}

double get(dtype t, const unsigned char* base, std::size_t i) {
    return visit_storage(t, [&](auto tag) {
        using S = typename decltype(tag)::type;
        S v;
        std::memcpy(&v, base + i * sizeof(S), sizeof(S));
        return visit_compute(t, [&](auto ctag) {
            using C = typename decltype(ctag)::type;
            return static_cast<double>(convert_value<C>(v));
        });
    });
}

host_tensor random_tensor(const shape& s, std::mt19937& rng, std::size_t offset = 0) {
    host_tensor h{s, offset, {}, {}};
    const std::size_t n = s.element_space() + offset;
    h.values.resize(n);
    h.bytes.resize(n * size_of(s.type()));
    std::uniform_real_distribution<double> real(-1, 1);
    std::uniform_int_distribution<int> small(0, 3);
    for (std::size_t i = 0; i < n; ++i) {
        const double v = s.type() == dtype::boolean ? small(rng) & 1
                         : is_integral(s.type())    ? small(rng)
                                                    : real(rng);
        put(s.type(), h.bytes.data(), i, v);
        h.values[i] = get(s.type(), h.bytes.data(), i); // as stored (rounded)
    }
    return h;
}

double at(const host_tensor& h, const dims& index) {
    return h.values[h.offset + h.s.index(index)];
}

// ---- reference ---------------------------------------------------------------------------

// Integer results as the kernel stores them: wrapped to the storage width.
double stored_value(dtype t, double v) {
    if (!is_integral(t)) return v;
    std::vector<unsigned char> b(8);
    put(t, b.data(), 0, v);
    return get(t, b.data(), 0);
}

std::vector<double> reference_dot(const host_tensor& a, const host_tensor& b, const shape& out) {
    const std::size_t rank = out.rank();
    std::vector<double> r(out.elements());
    const std::size_t k_len = a.s.lens().back();
    auto operand_index = [&](const shape& s, const dims& o, std::size_t row, std::size_t col) {
        dims idx(s.rank());
        const std::size_t own = s.rank() - 2;
        for (std::size_t i = 0; i < own; ++i)
            idx[i] = s.lens()[i] == 1 ? 0 : o[rank - 2 - own + i];
        idx[own] = row;
        idx[own + 1] = col;
        return idx;
    };
    for (std::size_t e = 0; e < r.size(); ++e) {
        const dims o = out.multi_index(e);
        double acc = 0;
        for (std::size_t k = 0; k < k_len; ++k)
            acc += at(a, operand_index(a.s, o, o[rank - 2], k)) *
                   at(b, operand_index(b.s, o, k, o[rank - 1]));
        r[e] = stored_value(out.type(), acc);
    }
    return r;
}

shape permuted(const shape& s, const std::vector<std::size_t>& perm) {
    dims lens, strides;
    for (auto i : perm) {
        lens.push_back(s.lens()[i]);
        strides.push_back(s.strides()[i]);
    }
    return {s.type(), lens, strides};
}

// Channels-last views (NCHW operands are permuted first): x [N, spatial..., C],
// w [K, kernel..., C/group], out [N, out spatial..., K]; the result is in the row-major order
// of the output as given.
std::vector<double> reference_conv(const op::convolution& c, host_tensor x, host_tensor w,
                                   const shape& given_out) {
    const std::size_t rank = x.s.rank(), nd = rank - 2;
    shape out = given_out;
    std::vector<std::size_t> perm{0}; // channels-last axis i is given axis perm[i]
    for (std::size_t i = 2; i < rank; ++i)
        perm.push_back(i);
    perm.push_back(1);
    if (!c.channels_last) {
        x.s = permuted(x.s, perm);
        w.s = permuted(w.s, perm);
        out = permuted(out, perm);
    }
    const std::size_t cg = w.s.lens()[rank - 1], kg = w.s.lens()[0] / c.group;
    auto param = [](const std::vector<std::size_t>& v, std::size_t i, std::size_t d) {
        return v.empty() ? d : v[i];
    };
    std::vector<double> r(out.elements());
    for (std::size_t e = 0; e < r.size(); ++e) {
        const dims given = given_out.multi_index(e);
        dims o = given; // in channels-last axis order
        if (!c.channels_last)
            for (std::size_t i = 0; i < rank; ++i)
                o[i] = given[perm[i]];
        const std::size_t filter = o[rank - 1], g = filter / kg;
        double acc = 0;
        std::size_t taps = 1;
        for (std::size_t d = 0; d < nd; ++d)
            taps *= w.s.lens()[1 + d];
        for (std::size_t tap = 0; tap < taps; ++tap) {
            dims xi(rank), wi(rank);
            xi[0] = o[0];
            wi[0] = filter;
            bool inside = true;
            std::size_t rest = tap;
            for (std::size_t d = nd; d-- > 0;) {
                const std::size_t kd = rest % w.s.lens()[1 + d];
                rest /= w.s.lens()[1 + d];
                const long long pos = static_cast<long long>(o[1 + d] * param(c.stride, d, 1) +
                                                             kd * param(c.dilation, d, 1)) -
                                      static_cast<long long>(param(c.padding, d, 0));
                inside = inside && pos >= 0 && pos < static_cast<long long>(x.s.lens()[1 + d]);
                xi[1 + d] = std::size_t(std::max(0LL, pos));
                wi[1 + d] = kd;
            }
            if (!inside) continue;
            for (std::size_t ch = 0; ch < cg; ++ch) {
                xi[rank - 1] = g * cg + ch;
                wi[rank - 1] = ch;
                acc += at(x, xi) * at(w, wi);
            }
        }
        r[e] = stored_value(out.type(), acc);
    }
    return r;
}

// The reference above against the Conflux reference target's op evaluation (f32 accumulation
// for f16/bf16/f32, so compared with a tolerance): catches a wrong reference before it blames
// the kernels. Returns the relative RMS difference.
double reference_self_check(const operation& op, const host_tensor& a, const host_tensor& b,
                            const shape& out, const std::vector<double>& want) {
    auto as_argument = [](const host_tensor& h) {
        std::shared_ptr<std::byte> data(
            reinterpret_cast<std::byte*>(const_cast<unsigned char*>(h.bytes.data())) +
                h.offset * size_of(h.s.type()),
            [](std::byte*) {});
        return argument(h.s, data);
    };
    const argument got =
        op.eval(shape{out.type(), out.lens()}, {as_argument(a), as_argument(b)}, {}, {});
    const auto values = to_vector<double>(got);
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        err += (values[i] - want[i]) * (values[i] - want[i]);
        norm += want[i] * want[i];
    }
    return norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
}

// ---- cases -------------------------------------------------------------------------------

struct test_case {
    std::string name;
    operation op;
    shape a, b, out;
    std::array<std::size_t, 2> offsets{0, 0};
    std::vector<std::string> extra_configs; // forced variants besides the candidates
};

op::convolution conv_op(std::size_t nd, std::size_t stride, std::size_t pad, std::size_t group,
                        std::size_t dilation = 1, bool channels_last = true) {
    op::convolution c;
    c.channels_last = channels_last;
    c.group = group;
    c.stride.assign(nd, stride);
    c.dilation.assign(nd, dilation);
    c.padding.assign(2 * nd, pad);
    return c;
}

test_case dot_case(const std::string& name, const shape& a, const shape& b,
                   std::optional<shape> out = std::nullopt) {
    const operation op = op::dot{};
    return {name, op, a, b, out ? *out : op.compute_shape({a, b}), {0, 0}, {}};
}

test_case conv_case(const std::string& name, const op::convolution& c, const shape& x,
                    const shape& w) {
    const operation op = c;
    return {name, op, x, w, op.compute_shape({x, w}), {0, 0}, {}};
}

std::vector<test_case> cases() {
    using d = dtype;
    std::vector<test_case> r;
    r.push_back(dot_case("dot f16 256^3", shape{d::f16, {256, 256}}, shape{d::f16, {256, 256}}));
    r.back().extra_configs = {"128x128x32_w2x2_s3_k1_v1", "128x128x32_w2x2_s3_k1_v2",
                              "64x64x64_w2x2_s4_k1_v4",   "64x64x32_w2x2_s2_k1_simt",
                              "16x24x16_w1x1_s2_k1",      "32x16x32_w2x1_s3_k2"};
    r.push_back(dot_case("dot f16 B^T 200x136x72", shape{d::f16, {200, 72}},
                         shape{d::f16, {72, 136}, {1, 72}}));
    r.back().extra_configs = {"64x64x32_w2x2_s3_k1_v2", "64x64x32_w2x2_s3_k1_v1"};
    r.push_back(dot_case("dot bf16 33x65x40", shape{d::bf16, {33, 40}}, shape{d::bf16, {40, 65}}));
    r.push_back(
        dot_case("dot f32 tf32 128x96x64", shape{d::f32, {128, 64}}, shape{d::f32, {64, 96}}));
    r.push_back(dot_case("dot f32 A col-major, B^T 96x80x64", shape{d::f32, {96, 64}, {1, 96}},
                         shape{d::f32, {64, 80}, {1, 64}}));
    r.back().extra_configs = {"64x64x16_w2x2_s3_k1_v1"};
    r.push_back(dot_case("dot f16 A col-major 64x72x48", shape{d::f16, {64, 48}, {1, 64}},
                         shape{d::f16, {48, 72}}));
    r.push_back(dot_case("dot f16 batched broadcast [4,1,64,48]x[3,48,40]",
                         shape{d::f16, {4, 1, 64, 48}}, shape{d::f16, {3, 48, 40}}));
    r.push_back(dot_case("dot f16 K=7 50x30", shape{d::f16, {50, 7}}, shape{d::f16, {7, 30}}));
    r.push_back(dot_case("dot f16 transposed output 96x64x32", shape{d::f16, {96, 32}},
                         shape{d::f16, {32, 64}}, shape{d::f16, {96, 64}, {1, 96}}));
    {
        auto c = dot_case("dot f16 A offset by 1 element 64x64x64", shape{d::f16, {64, 64}},
                          shape{d::f16, {64, 64}});
        c.offsets = {1, 0};
        r.push_back(c);
    }
    r.push_back(dot_case("dot f16 skinny 64x128x4096", shape{d::f16, {64, 4096}},
                         shape{d::f16, {4096, 128}}));
    r.push_back(dot_case("dot f64 40x50x60", shape{d::f64, {40, 60}}, shape{d::f64, {60, 50}}));
    r.push_back(dot_case("dot i32 17x9x5", shape{d::i32, {17, 5}}, shape{d::i32, {5, 9}}));
    r.push_back(
        dot_case("dot i8 B^T 40x48x64", shape{d::i8, {40, 64}}, shape{d::i8, {64, 48}, {1, 64}}));
    r.push_back(dot_case("dot i64 batched [2,9,33]x[2,33,10]", shape{d::i64, {2, 9, 33}},
                         shape{d::i64, {2, 33, 10}}));
    r.push_back(dot_case("dot bool 8x8x8", shape{d::boolean, {8, 8}}, shape{d::boolean, {8, 8}}));
    r.push_back(dot_case("dot f32 exact K=0", shape{d::f32, {8, 0}}, shape{d::f32, {0, 8}}));
    r.push_back(conv_case("conv f16 3x3 pad 1 [2,14,14,64]x[64,3,3,64]", conv_op(2, 1, 1, 1),
                          shape{d::f16, {2, 14, 14, 64}}, shape{d::f16, {64, 3, 3, 64}}));
    r.push_back(conv_case("conv f16 1x1 [2,14,14,64]x[128,1,1,64]", conv_op(2, 1, 0, 1),
                          shape{d::f16, {2, 14, 14, 64}}, shape{d::f16, {128, 1, 1, 64}}));
    // 1x1 with odd pixel counts and channels (TMA copies it as a matrix of pixels), and with
    // stride 2 (it does not).
    r.push_back(conv_case("conv bf16 1x1 [3,7,9,96]x[80,1,1,96]", conv_op(2, 1, 0, 1),
                          shape{d::bf16, {3, 7, 9, 96}}, shape{d::bf16, {80, 1, 1, 96}}));
    r.push_back(conv_case("conv f16 1x1 stride 2 [2,15,15,64]x[128,1,1,64]", conv_op(2, 2, 0, 1),
                          shape{d::f16, {2, 15, 15, 64}}, shape{d::f16, {128, 1, 1, 64}}));
    r.push_back(conv_case("conv bf16 7x7 stride 2 pad 3 [1,32,32,3]x[16,7,7,3]",
                          conv_op(2, 2, 3, 1), shape{d::bf16, {1, 32, 32, 3}},
                          shape{d::bf16, {16, 7, 7, 3}}));
    // A stem padded to 4 channels by pad_conv_channels: 8-byte pixels, the im2col gather's
    // copies 8 bytes (cp.async) each, zero-filled past the image's border.
    r.push_back(conv_case("conv f16 7x7 stride 2 pad 3 [2,30,30,4]x[16,7,7,4]", conv_op(2, 2, 3, 1),
                          shape{d::f16, {2, 30, 30, 4}}, shape{d::f16, {16, 7, 7, 4}}));
    r.push_back(conv_case("conv f16 3x3 groups 4 [1,8,8,32]x[32,3,3,8]", conv_op(2, 1, 1, 4),
                          shape{d::f16, {1, 8, 8, 32}}, shape{d::f16, {32, 3, 3, 8}}));
    r.push_back(conv_case("conv f32 depthwise [1,8,8,16]x[16,3,3,1]", conv_op(2, 1, 1, 16),
                          shape{d::f32, {1, 8, 8, 16}}, shape{d::f32, {16, 3, 3, 1}}));
    r.push_back(conv_case("conv f16 1-D [2,30,16]x[24,3,16]", conv_op(1, 1, 1, 1),
                          shape{d::f16, {2, 30, 16}}, shape{d::f16, {24, 3, 16}}));
    r.push_back(conv_case("conv f16 3-D [1,4,6,6,8]x[8,3,3,3,8]", conv_op(3, 1, 1, 1),
                          shape{d::f16, {1, 4, 6, 6, 8}}, shape{d::f16, {8, 3, 3, 3, 8}}));
    r.push_back(conv_case("conv f16 NCHW dilation 2 [1,16,10,10]x[32,16,3,3]",
                          conv_op(2, 1, 2, 1, 2, false), shape{d::f16, {1, 16, 10, 10}},
                          shape{d::f16, {32, 16, 3, 3}}));
    // Weights stored [R, S, C, K] (so n is their contiguous axis) and an input stored NCHW
    // (no axis of stride 1 among the channels): the mn-major weight tile and element copies.
    r.push_back(conv_case("conv f16 RSCK weights, NCHW-strided input", conv_op(2, 1, 1, 1),
                          shape{d::f16, {2, 6, 7, 8}, {336, 7, 1, 42}},
                          shape{d::f16, {16, 3, 3, 8}, {1, 384, 128, 16}}));
    // Rows padded to 16 bytes but ending inside a vector (pad_gemm_weights on GPT-2's 50,257
    // output columns): the last vector of each row copies only the elements before the end.
    r.push_back(dot_case("dot f16 B rows of 37 padded to 40, 130x37x72", shape{d::f16, {130, 72}},
                         shape{d::f16, {72, 37}, {40, 1}}));
    r.push_back(dot_case("dot bf16 B rows of 50 padded to 56, 64x50x128", shape{d::bf16, {64, 128}},
                         shape{d::bf16, {128, 50}, {56, 1}}));
    r.push_back(dot_case("dot f32 tf32 B rows of 13 padded to 16, 40x13x24",
                         shape{d::f32, {40, 24}}, shape{d::f32, {24, 13}, {16, 1}}));
    r.push_back(dot_case("dot f16 A every other element 40x48x24", shape{d::f16, {40, 24}, {48, 2}},
                         shape{d::f16, {24, 48}}));
    r.push_back(conv_case("conv f64 3x3 stride 2 [1,9,9,4]x[6,3,3,4]", conv_op(2, 2, 1, 1),
                          shape{d::f64, {1, 9, 9, 4}}, shape{d::f64, {6, 3, 3, 4}}));
    // The depthwise kernel family (every depthwise candidate, and the GEMM ones beside them):
    // kernel sizes, strides, dilations, asymmetric padding, multipliers, ranks, layouts,
    // alignments and channel counts that allow each vector width.
    r.push_back(conv_case("depthwise f16 7x7 pad 3 [2,14,14,96]x[96,7,7,1]", conv_op(2, 1, 3, 96),
                          shape{d::f16, {2, 14, 14, 96}}, shape{d::f16, {96, 7, 7, 1}}));
    r.push_back(conv_case("depthwise f16 3x3 stride 2 [2,15,15,64]", conv_op(2, 2, 1, 64),
                          shape{d::f16, {2, 15, 15, 64}}, shape{d::f16, {64, 3, 3, 1}}));
    r.push_back(conv_case("depthwise bf16 5x5 stride 2 pad 2 [1,17,17,48]", conv_op(2, 2, 2, 48),
                          shape{d::bf16, {1, 17, 17, 48}}, shape{d::bf16, {48, 5, 5, 1}}));
    r.push_back(conv_case("depthwise f32 3x3 dilation 2 [2,9,9,20]", conv_op(2, 1, 2, 20, 2),
                          shape{d::f32, {2, 9, 9, 20}}, shape{d::f32, {20, 3, 3, 1}}));
    r.push_back(conv_case("depthwise f16 multiplier 2 [1,8,8,8]x[16,3,3,1]", conv_op(2, 1, 1, 8),
                          shape{d::f16, {1, 8, 8, 8}}, shape{d::f16, {16, 3, 3, 1}}));
    r.push_back(conv_case("depthwise f16 1-D [2,40,24]x[24,5,1]", conv_op(1, 1, 2, 24),
                          shape{d::f16, {2, 40, 24}}, shape{d::f16, {24, 5, 1}}));
    r.push_back(conv_case("depthwise f16 3-D [1,4,6,6,16]x[16,3,3,3,1]", conv_op(3, 1, 1, 16),
                          shape{d::f16, {1, 4, 6, 6, 16}}, shape{d::f16, {16, 3, 3, 3, 1}}));
    r.push_back(conv_case("depthwise f16 NCHW [1,16,9,9]x[16,1,3,3]",
                          conv_op(2, 1, 1, 16, 1, false), shape{d::f16, {1, 16, 9, 9}},
                          shape{d::f16, {16, 1, 3, 3}}));
    r.push_back(conv_case("depthwise f16 13 channels [1,7,7,13]", conv_op(2, 1, 1, 13),
                          shape{d::f16, {1, 7, 7, 13}}, shape{d::f16, {13, 3, 3, 1}}));
    {
        auto c =
            conv_case("depthwise f16 input offset by 2 elements [1,8,8,32]", conv_op(2, 1, 1, 32),
                      shape{d::f16, {1, 8, 8, 32}}, shape{d::f16, {32, 3, 3, 1}});
        c.offsets = {2, 0};
        r.push_back(c);
    }
    // Several tiles of a tiled config across and down (odd extents), a last channel block
    // only partly filled, strides and dilations inside the shared-memory window.
    r.push_back(conv_case("depthwise f16 5x5 stride 2 pad 2 [1,37,41,40]", conv_op(2, 2, 2, 40),
                          shape{d::f16, {1, 37, 41, 40}}, shape{d::f16, {40, 5, 5, 1}}));
    r.push_back(conv_case("depthwise bf16 3x3 dilation 2 [2,23,29,24]", conv_op(2, 1, 2, 24, 2),
                          shape{d::bf16, {2, 23, 29, 24}}, shape{d::bf16, {24, 3, 3, 1}}));
    r.push_back(conv_case("depthwise f32 7x7 pad 3 [1,30,61,20]", conv_op(2, 1, 3, 20),
                          shape{d::f32, {1, 30, 61, 20}}, shape{d::f32, {20, 7, 7, 1}}));
    // The tensor-core configs (dw_mma): several row and column tiles with partial ones, a last
    // channel block partly filled, rows strided, the widest kernel row one product holds.
    r.push_back(conv_case("depthwise f16 7x7 pad 3 [2,37,70,40]", conv_op(2, 1, 3, 40),
                          shape{d::f16, {2, 37, 70, 40}}, shape{d::f16, {40, 7, 7, 1}}));
    {
        op::convolution rows = conv_op(2, 1, 2, 48);
        rows.stride = {2, 1};
        r.push_back(conv_case("depthwise bf16 5x5 rows stride 2 [1,33,45,48]", rows,
                              shape{d::bf16, {1, 33, 45, 48}}, shape{d::bf16, {48, 5, 5, 1}}));
        op::convolution row9 = conv_op(2, 1, 0, 16);
        row9.padding = {0, 4, 0, 4};
        r.push_back(conv_case("depthwise f16 1x9 [1,6,50,16]", row9, shape{d::f16, {1, 6, 50, 16}},
                              shape{d::f16, {16, 1, 9, 1}}));
    }
    // Enough tiles that the pipelined configs' blocks (what the SMs hold) walk several each.
    r.push_back(conv_case("depthwise f16 7x7 pad 3 [8,64,64,128]", conv_op(2, 1, 3, 128),
                          shape{d::f16, {8, 64, 64, 128}}, shape{d::f16, {128, 7, 7, 1}}));
    {
        op::convolution asym = conv_op(2, 1, 0, 16);
        asym.padding = {0, 2, 1, 1}; // top 0, left 2, bottom 1, right 1
        r.push_back(conv_case("depthwise f16 asymmetric padding [1,9,11,16]", asym,
                              shape{d::f16, {1, 9, 11, 16}}, shape{d::f16, {16, 3, 3, 1}}));
    }
    return r;
}

double tolerance(dtype t, const perf_config& c) {
    switch (t) {
    case dtype::f16:
    case dtype::bf16:
        return 1e-2;
    case dtype::f32:
        return c.rounds_f32_to_tf32() ? 3e-3 : 1e-5;
    case dtype::f64:
        return 1e-12;
    default:
        return 0; // integers: exact
    }
}

// How far the double-accumulating reference may be from the reference target's.
double reference_tolerance(dtype t) {
    switch (t) {
    case dtype::f16:
    case dtype::bf16:
        return 1e-2;
    case dtype::f32:
        return 1e-5;
    case dtype::f64:
        return 1e-12;
    default:
        return 0;
    }
}

// Without a GPU: the test's references against the reference target, for every case.
int self_check_references() {
    std::mt19937 rng(7);
    int failed = 0;
    for (const auto& tc : cases()) {
        const host_tensor a = random_tensor(tc.a, rng, tc.offsets[0]);
        const host_tensor b = random_tensor(tc.b, rng, tc.offsets[1]);
        const auto want = tc.op.get_if<op::dot>() != nullptr
                              ? reference_dot(a, b, tc.out)
                              : reference_conv(*tc.op.get_if<op::convolution>(), a, b, tc.out);
        const double d = reference_self_check(tc.op, a, b, tc.out, want);
        const bool ok = d <= reference_tolerance(tc.a.type());
        failed += ok ? 0 : 1;
        std::printf("%s %-55s reference vs reference target: %.2e\n", ok ? "ok  " : "FAIL",
                    tc.name.c_str(), d);
    }
    return failed == 0 ? 0 : 1;
}

// ---- running -----------------------------------------------------------------------------

struct device_tensor {
    device_buffer buffer;
    void* view = nullptr;
};

device_tensor upload(const host_tensor& h) {
    device_tensor d{device_buffer(std::max<std::size_t>(1, h.bytes.size())), nullptr};
    cuda_check(cudaMemcpy(d.buffer.data(), h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice),
               "upload");
    d.view = static_cast<unsigned char*>(d.buffer.data()) + h.offset * size_of(h.s.type());
    return d;
}

struct variant {
    perf_config config;
    kernel_source main, finish;
    compiled_kernel main_bin, finish_bin;
    std::string error;
};

// Runs the kernels of v once (with a poisoned output and workspace); returns the output
// buffer's bytes.
std::vector<unsigned char> run_once(const variant& v, const gemm_problem& p, const test_case& tc,
                                    const device_tensor& a, const device_tensor& b,
                                    std::size_t out_bytes, const stream& st) {
    device_buffer out(out_bytes);
    cuda_check(cudaMemset(out.data(), 0xff, out_bytes), "poison output");
    const std::size_t ws_bytes = split_k_workspace_bytes(p, v.config);
    device_buffer ws(std::max<std::size_t>(ws_bytes, 1));
    cuda_check(cudaMemset(ws.data(), 0xff, ws.size()), "poison workspace");
    loaded_kernel main(v.main_bin, v.main.launch.shared_bytes, tc.name);
    void* a_ptr = a.view;
    void* b_ptr = b.view;
    void* out_ptr = out.data();
    void* ws_ptr = ws.data();
    if (v.config.split_k > 1) {
        void* args[] = {&a_ptr, &b_ptr, &ws_ptr};
        launch(main, v.main.launch, args, st.get());
        loaded_kernel finish(v.finish_bin, 0, tc.name + " finish");
        void* fargs[] = {&ws_ptr, &out_ptr};
        launch(finish, v.finish.launch, fargs, st.get());
        st.synchronize(tc.name);
    } else {
        // A _tma kernel's tensor maps follow its pointers.
        auto maps = encode_tensor_maps(v.main, {a_ptr, b_ptr, out_ptr});
        std::vector<void*> args{&a_ptr, &b_ptr, &out_ptr};
        for (auto& m : maps)
            args.push_back(&m);
        launch(main, v.main.launch, args.data(), st.get());
        st.synchronize(tc.name);
    }
    std::vector<unsigned char> host(out_bytes);
    cuda_check(cudaMemcpy(host.data(), out.data(), out_bytes, cudaMemcpyDeviceToHost), "download");
    return host;
}

struct comparison {
    bool passed = false;
    std::string detail;
};

comparison compare(const std::vector<unsigned char>& got, const shape& out,
                   const std::vector<double>& want, double tol) {
    const dtype t = out.type();
    const std::size_t eb = size_of(t);
    std::vector<bool> is_element(got.size() / eb, false);
    double err = 0, norm = 0;
    std::size_t non_finite = 0, mismatches = 0;
    for (std::size_t e = 0; e < want.size(); ++e) {
        const std::size_t i = out.index_of_element(e);
        is_element[i] = true;
        const double g = get(t, got.data(), i);
        if (!std::isfinite(g)) ++non_finite;
        if (g != want[e]) ++mismatches;
        err += (g - want[e]) * (g - want[e]);
        norm += want[e] * want[e];
    }
    std::size_t touched = 0;
    for (std::size_t i = 0; i < is_element.size(); ++i)
        if (!is_element[i])
            for (std::size_t j = 0; j < eb; ++j)
                touched += got[i * eb + j] != 0xff;
    const double rel = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
    comparison c;
    c.passed = non_finite == 0 && touched == 0 && (tol == 0 ? mismatches == 0 : rel <= tol);
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "rel rms %.2e (tol %.0e), %zu non-finite, %zu differ, %zu stray bytes", rel, tol,
                  non_finite, mismatches, touched);
    c.detail = buf;
    return c;
}

// depthwise_e: the epilogue for depthwise configs (made for depthwise_epilogue_problem(p)).
void compile_all(std::vector<variant>& vs, const gemm_problem& p, const gemm_epilogue& gemm_e,
                 const std::string& arch, const gemm_epilogue* depthwise_e = nullptr) {
    parallel_for(vs.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            variant& v = vs[i];
            const gemm_epilogue& e = v.config.is_depthwise() ? *depthwise_e : gemm_e;
            try {
                v.main = generate_gemm_kernel(p, v.config, e, "cx_gemm");
                v.main_bin = nvrtc_compile(v.main, arch);
                if (v.config.split_k > 1) {
                    v.finish = generate_split_k_finish_kernel(p, v.config, e, "cx_gemm_finish");
                    v.finish_bin = nvrtc_compile(v.finish, arch);
                }
            } catch (const std::exception& ex) {
                v.error = ex.what();
            }
        }
    });
}

struct totals {
    std::size_t configs = 0, compiled = 0, passed = 0, failed = 0;
};

// The _tma form of every _ws and _pp config in vs, and of a few more tiles and ring depths
// (both forms, 32- to 128-byte swizzles), where the problem's operands allow TMA.
void add_tma_forms(std::vector<variant>& vs, const gemm_problem& p,
                   const gemm_device_limits& limits) {
    std::vector<perf_config> forms;
    for (const auto& v : vs)
        if (v.config.warp_specialised && !v.config.tma) forms.push_back(v.config);
    for (const char* text : {"128x128x64_w8x1_s4_k1_wgmma_pp", "64x256x64_w8x1_s4_k1_wgmma_pp",
                             "128x256x64_w8x1_s4_k1_wgmma_ws", "128x256x64_w8x1_s3_k1_wgmma_ws",
                             "128x128x32_w8x1_s6_k1_wgmma_ws", "64x128x64_w4x1_s4_k1_wgmma_ws",
                             "128x64x16_w8x1_s4_k1_wgmma_pp"})
        forms.push_back(*parse_perf_config(text));
    for (perf_config c : forms) {
        c.tma = true;
        if (valid(c, p, nullptr, limits) &&
            std::none_of(vs.begin(), vs.end(), [&](const variant& v) { return v.config == c; }))
            vs.push_back({c, {}, {}, {}, {}, {}});
    }
}

void run_case(const test_case& tc, const device_info& dev, const gemm_device_limits& limits,
              totals& sum, std::mt19937& rng, bool tma_only = false) {
    const auto p = make_gemm_problem(tc.op, {tc.a, tc.b}, tc.out, tc.offsets);
    if (!p) {
        std::printf("FAIL %s: no gemm problem\n", tc.name.c_str());
        ++sum.failed;
        return;
    }
    std::vector<variant> vs;
    for (const auto& c : candidate_configs(*p, limits))
        vs.push_back({c, {}, {}, {}, {}, {}});
    for (const auto& text : tc.extra_configs) {
        const auto c = parse_perf_config(text);
        std::string why;
        if (c && valid(*c, *p, &why, limits) &&
            std::find_if(vs.begin(), vs.end(), [&](const variant& v) { return v.config == *c; }) ==
                vs.end())
            vs.push_back({*c, {}, {}, {}, {}, {}});
        else if (!c || !why.empty())
            std::printf("  (skipping %s: %s)\n", text.c_str(), why.c_str());
    }
    // The ping-pong form (_pp) is not a tuning candidate until timed: every case it can run
    // checks it here, with each warpgroup's tile whole (64 or 128 rows) and ring depths.
    for (const char* text : {"128x128x64_w8x1_s4_k1_wgmma_pp", "64x128x64_w8x1_s6_k1_wgmma_pp",
                             "64x256x64_w8x1_s4_k1_wgmma_pp", "128x64x64_w8x1_s3_k1_wgmma_pp"}) {
        const auto c = parse_perf_config(text);
        if (c && valid(*c, *p, nullptr, limits)) vs.push_back({*c, {}, {}, {}, {}, {}});
    }
    add_tma_forms(vs, *p, limits);
    if (tma_only) std::erase_if(vs, [](const variant& v) { return !v.config.tma; });
    if (tma_only && vs.empty()) return;
    const auto epilogue = default_epilogue(*p, tc.out);
    // An output whose fastest axis is m needs the staged store; a _ws config whose pipeline
    // leaves no room for it cannot write this output, and the compiler splits instead (can_fuse
    // says so): the split's own kernels are the other cases' business.
    if (epilogue.walk_required)
        std::erase_if(vs, [&](const variant& v) {
            const bool fits =
                v.config.is_depthwise() ||
                kernel_shared_bytes(*p, v.config, epilogue.walk) <= limits.shared_per_block;
            if (!fits)
                std::printf("  (skipping %s: the staged store of this output does not fit beside "
                            "its pipeline; the compiler splits)\n",
                            to_string(v.config).c_str());
            return !fits;
        });
    std::optional<gemm_epilogue> depthwise_epilogue;
    if (is_depthwise(*p))
        depthwise_epilogue = default_epilogue(depthwise_epilogue_problem(*p), tc.out);
    const auto t0 = std::chrono::steady_clock::now();
    compile_all(vs, *p, epilogue, dev.arch, depthwise_epilogue ? &*depthwise_epilogue : nullptr);
    const double compile_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    const host_tensor a = random_tensor(tc.a, rng, tc.offsets[0]);
    const host_tensor b = random_tensor(tc.b, rng, tc.offsets[1]);
    const auto want = tc.op.get_if<op::dot>() != nullptr
                          ? reference_dot(a, b, tc.out)
                          : reference_conv(*tc.op.get_if<op::convolution>(), a, b, tc.out);
    const double self = reference_self_check(tc.op, a, b, tc.out, want);
    if (self > reference_tolerance(p->type)) {
        std::printf("FAIL %s: the test's reference differs from the reference target by %.2e\n",
                    tc.name.c_str(), self);
        ++sum.failed;
    }
    const device_tensor da = upload(a), db = upload(b);
    // The output buffer plus a poisoned guard of 64 elements after it.
    const std::size_t out_bytes = (tc.out.element_space() + 64) * size_of(tc.out.type());
    stream st;
    std::size_t passed = 0, failed = 0;
    for (const auto& v : vs) {
        ++sum.configs;
        if (!v.error.empty()) {
            std::printf("FAIL %s %s: %s\n", tc.name.c_str(), to_string(v.config).c_str(),
                        v.error.substr(0, 2000).c_str());
            ++failed;
            continue;
        }
        ++sum.compiled;
        try {
            const auto got = run_once(v, *p, tc, da, db, out_bytes, st);
            const auto c = compare(got, tc.out, want, tolerance(p->type, v.config));
            if (c.passed) {
                ++passed;
            } else {
                ++failed;
                std::printf("FAIL %s %s: %s\n", tc.name.c_str(), to_string(v.config).c_str(),
                            c.detail.c_str());
            }
        } catch (const std::exception& ex) {
            ++failed;
            std::printf("FAIL %s %s: %s\n", tc.name.c_str(), to_string(v.config).c_str(),
                        ex.what());
        }
    }
    sum.passed += passed;
    sum.failed += failed;
    std::printf("%-55s %3zu configs, %3zu passed, %3zu failed (compile %.1f s)\n", tc.name.c_str(),
                vs.size(), passed, failed, compile_s);
}

// ---- timing ------------------------------------------------------------------------------

// M x N x K products of row-major matrices (B n-major, as MatMul by a [K, N] weight).
void time_large(const device_info& dev, const gemm_device_limits& limits, std::mt19937& rng,
                std::size_t m, std::size_t n, std::size_t kd, dtype t, std::size_t how_many) {
    const std::string type(to_string(t));
    const std::string size =
        m == n && n == kd ? std::to_string(n) + "^3"
                          : std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(kd);
    const auto tc = dot_case("dot " + type + " " + size, shape{t, {m, kd}}, shape{t, {kd, n}});
    const auto p = *make_gemm_problem(tc.op, {tc.a, tc.b}, tc.out);
    auto configs = candidate_configs(p, limits);
    if (configs.size() > how_many) configs.resize(how_many);
    // The ping-pong form, not a candidate until timed, after them.
    for (const char* text : {"128x128x64_w8x1_s4_k1_wgmma_pp", "128x128x64_w8x1_s3_k1_wgmma_pp",
                             "64x256x64_w8x1_s4_k1_wgmma_pp"})
        if (const auto c = parse_perf_config(text); c && valid(*c, p, nullptr, limits))
            configs.push_back(*c);
    std::vector<variant> vs;
    for (const auto& c : configs)
        vs.push_back({c, {}, {}, {}, {}, {}});
    add_tma_forms(vs, p, limits);
    const auto epilogue = default_epilogue(p, tc.out);
    compile_all(vs, p, epilogue, dev.arch);

    const host_tensor a = random_tensor(tc.a, rng), b = random_tensor(tc.b, rng);
    const device_tensor da = upload(a), db = upload(b);
    device_buffer out(tc.out.bytes());
    stream st;
    cudaEvent_t start, stop;
    cuda_check(cudaEventCreate(&start), "event");
    cuda_check(cudaEventCreate(&stop), "event");
    const double flops = 2.0 * double(m) * double(n) * double(kd);
    std::printf("%s %s (rank: heuristic order)\n", type.c_str(), size.c_str());
    for (std::size_t rank = 0; rank < vs.size(); ++rank) {
        const auto& v = vs[rank];
        if (!v.error.empty()) {
            std::printf("  %2zu %-28s compile error\n", rank, to_string(v.config).c_str());
            continue;
        }
        try {
            loaded_kernel main(v.main_bin, v.main.launch.shared_bytes, "4096");
            std::optional<loaded_kernel> finish;
            if (v.config.split_k > 1) finish.emplace(v.finish_bin, 0, "4096 finish");
            device_buffer ws(std::max<std::size_t>(1, split_k_workspace_bytes(p, v.config)));
            void* a_ptr = da.view;
            void* b_ptr = db.view;
            void* out_ptr = out.data();
            void* ws_ptr = ws.data();
            auto maps = encode_tensor_maps(v.main, {a_ptr, b_ptr, finish ? ws_ptr : out_ptr});
            std::vector<void*> args{&a_ptr, &b_ptr, finish ? &ws_ptr : &out_ptr};
            for (auto& map : maps)
                args.push_back(&map);
            void* fargs[] = {&ws_ptr, &out_ptr};
            auto once = [&] {
                launch(main, v.main.launch, args.data(), st.get());
                if (finish) launch(*finish, v.finish.launch, fargs, st.get());
            };
            for (int i = 0; i < 3; ++i)
                once();
            std::vector<float> ms;
            for (int i = 0; i < 15; ++i) {
                cuda_check(cudaEventRecord(start, st.get()), "record");
                once();
                cuda_check(cudaEventRecord(stop, st.get()), "record");
                cuda_check(cudaEventSynchronize(stop), "sync");
                float t = 0;
                cuda_check(cudaEventElapsedTime(&t, start, stop), "elapsed");
                ms.push_back(t);
            }
            std::sort(ms.begin(), ms.end());
            const double median = ms[ms.size() / 2];
            // Spot-check 256 outputs against the double reference.
            std::vector<unsigned char> host(tc.out.bytes());
            cuda_check(cudaMemcpy(host.data(), out.data(), host.size(), cudaMemcpyDeviceToHost),
                       "download");
            double err = 0, norm = 0;
            std::uniform_int_distribution<std::size_t> pick_row(0, m - 1), pick(0, n - 1);
            for (int s = 0; s < 256; ++s) {
                const std::size_t i = pick_row(rng), j = pick(rng);
                double acc = 0;
                for (std::size_t k = 0; k < kd; ++k)
                    acc += a.values[i * kd + k] * b.values[k * n + j];
                const double g = get(t, host.data(), i * n + j);
                err += (g - acc) * (g - acc);
                norm += acc * acc;
            }
            // Registers and spills tell a slow config's story without a profiler.
            cudaFuncAttributes attr{};
            const bool have_attr =
                cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(main.handle())) ==
                cudaSuccess;
            if (!have_attr) cudaGetLastError(); // clear it: launches check the last error
            std::printf("  %2zu %-28s %8.3f ms %7.1f TFLOP/s  spot rel rms %.1e  regs %d "
                        "local %zu B\n",
                        rank, to_string(v.config).c_str(), median, flops / median / 1e9,
                        std::sqrt(err / norm), have_attr ? attr.numRegs : -1,
                        have_attr ? attr.localSizeBytes : std::size_t(0));
        } catch (const std::exception& ex) {
            std::printf("  %2zu %-28s error: %s\n", rank, to_string(v.config).c_str(), ex.what());
        }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
}

} // namespace
} // namespace conflux::cuda

int main(int argc, char** argv) {
    using namespace conflux::cuda;
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // progress survives a timeout
    // "check": correctness only; "time": the 4096^3 and 8192^3 timings only; "shapes": every
    // candidate's time on the transformer zoo's GEMM shapes; "selfcheck": the test's CPU
    // references against the reference target (no GPU needed); otherwise check and time.
    // A second argument keeps only the cases whose name contains it.
    const std::string only = argc > 1 ? argv[1] : "";
    if (only == "selfcheck") return self_check_references();
    if (available_devices() == 0) {
        std::printf("no CUDA device (%s)\n", no_device_reason().c_str());
        return 0;
    }
    const device_info dev = query_device(0);
    gemm_device_limits limits;
    limits.sm_count = unsigned(dev.sm_count);
    limits.shared_per_block = dev.shared_per_block_optin;
    limits.shared_per_sm = dev.shared_per_sm;
    limits.wgmma = arch_has_wgmma(dev.arch);
    std::printf("%s (%s, %d SMs, %zu KiB shared per block)\n", dev.name.c_str(), dev.arch.c_str(),
                dev.sm_count, dev.shared_per_block_optin / 1024);
    std::mt19937 rng(7);
    totals sum;
    const std::string filter = argc > 2 ? argv[2] : "";
    // "tma": only the _tma forms of every case (correctness), then the zoo's shapes, 4096^3 and
    // 8192^3 (f16, then bf16) with the first candidates and the _tma forms timed.
    if (only != "time" && only != "shapes")
        for (const auto& tc : cases())
            if (tc.name.find(filter) != std::string::npos)
                run_case(tc, dev, limits, sum, rng, only == "tma");
    std::printf("gemm configs: %zu, compiled %zu, passed %zu, failed %zu\n", sum.configs,
                sum.compiled, sum.passed, sum.failed);
    using conflux::dtype;
    if (only == "tma") {
        for (const auto& [m, n, k] : std::vector<std::array<std::size_t, 3>>{{4096, 3072, 768},
                                                                             {4096, 768, 3072},
                                                                             {4096, 768, 768},
                                                                             {6304, 2304, 768},
                                                                             {4096, 4096, 4096},
                                                                             {8192, 8192, 8192}})
            time_large(dev, limits, rng, m, n, k, dtype::f16, 6);
        // Issue 17's bar is f16 and bf16 at 4096^3 and 8192^3.
        time_large(dev, limits, rng, 4096, 4096, 4096, dtype::bf16, 6);
        time_large(dev, limits, rng, 8192, 8192, 8192, dtype::bf16, 6);
    } else if (only == "shapes") {
        // The transformer zoo's GEMMs at batch 32 (BERT-base: 4096 rows; ViT-B/16: 6304),
        // every candidate: data for the ranking model.
        for (const auto& [m, n, k] : std::vector<std::array<std::size_t, 3>>{{4096, 3072, 768},
                                                                             {4096, 768, 3072},
                                                                             {4096, 768, 768},
                                                                             {6304, 2304, 768},
                                                                             {6304, 768, 768},
                                                                             {100352, 384, 96}})
            time_large(dev, limits, rng, m, n, k, dtype::f16, 100);
    } else if (only != "check") {
        time_large(dev, limits, rng, 4096, 4096, 4096, dtype::f16, 40);
        time_large(dev, limits, rng, 4096, 4096, 4096, dtype::bf16, 12);
        time_large(dev, limits, rng, 8192, 8192, 8192, dtype::f16, 12);
        time_large(dev, limits, rng, 8192, 8192, 8192, dtype::bf16, 12);
    }
    return sum.failed == 0 ? 0 : 1;
}
