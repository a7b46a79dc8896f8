// The anchor problem of a GEMM kernel: a batched matrix product C[z] = A[z] x B[z] with
// A: M x K and B: K x N, read from memory through strides, built from a dot or a convolution.
//
// dot: A [..., M, K] x B [..., K, N] -> [..., M, N]; z runs over the output's batch axes
//   (row-major), an operand's missing or len-1 batch axes broadcast (stride 0).
// convolution as implicit GEMM, channels last (an NCHW convolution is the same computation on
//   permuted views of its operands, so it is accepted too): input [N, spatial..., C], weights
//   [K, kernel..., C/group], output [N, out spatial..., K]; z = group;
//   M = N * out spatial..., N = K / group, K = kernel... * C / group (channel fastest).
//
// Every operand element is at  batch part(z) + row part(r) + depth part(k)  elements from the
// operand's pointer, where r is its row (m for A, n for B) and k its position along the
// reduction. For the convolution input the row part is the image's offset plus the window
// start (which may lie in the padding: negative) and a tap outside the input reads zero.
#pragma once

#include "conflux/ir/shape.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace conflux {
class operation;
}

namespace conflux::cuda {

enum class gemm_family { dot, convolution };

// Which of an operand's two GEMM axes has stride 1 in memory, and so is contiguous in its
// shared-memory tile: k (A row-major / B "transposed") or mn (A column-major / B row-major).
// An operand with neither is loaded element by element and kept k-major.
enum class operand_major { k, mn };

struct gemm_operand {
    dtype type = dtype::f32;
    dims batch_strides;       // per gemm_problem::batch_lens axis (0 where broadcast)
    long long row_stride = 0; // per row (m for A, n for B); unused for a convolution's input
    // The reduction axis decomposed, slowest first (dot: {K}; convolution: {kernel...,
    // C/group}), and the element stride of one step along each (for the convolution input a
    // tap steps dilation * the input's spatial stride).
    dims k_lens;
    std::vector<long long> k_strides;
    operand_major major = operand_major::k;
    // Alignment of the operand's first element, in bytes: the runtime's buffers are 256-byte
    // aligned, a view that starts elsewhere is less. Set from the element offset the caller
    // gives make_gemm_problem; a caller that changes it must call update_vector_limits.
    std::size_t base_align_bytes = 256;
    // The widest global load (elements, a power of two, at most 16 bytes) that the strides,
    // extents and base alignment allow along the contiguous axis; 1 without one.
    unsigned max_vector = 1;
    std::string vector_limit_reason; // why max_vector is not wider ("" at the widest)
    // Strides that every vector's start must be a multiple of (all of the operand's axes of
    // len > 1 except the contiguous one), and the contiguous axis's extent.
    std::vector<long long> other_strides;
    std::size_t contiguous_extent = 0;
    bool has_contiguous_axis = false;
    // An mn-major operand's rows may end inside a vector (GPT-2's 50,257 output columns, the
    // rows padded to 16 bytes by pad_gemm_weights): that last vector copies only the elements
    // before the end (cp.async's source size) and zero-fills the rest, so nothing past the end
    // is read. Set by compute_vector_limit with max_vector.
    bool partial_last_vector = false;
};

// Convolution only: the input operand's rows, m = ((image * O0 + o0) * O1 + o1)...
struct conv_geometry {
    std::size_t images = 0;
    dims input_spatial, output_spatial, kernel, stride, pad_begin, dilation;
    long long image_stride = 0;
    std::vector<long long> input_spatial_strides;
    long long channel_stride = 0; // of the input
    std::size_t group_channels = 0, group_filters = 0, groups = 1;
    bool channels_last = true; // as the op was given (the problem itself is always channels last)
    std::size_t nd() const { return kernel.size(); }
};

struct gemm_problem {
    gemm_family family = gemm_family::dot;
    dtype type = dtype::f32; // of A and B (equal)
    std::size_t m = 0, n = 0, k = 0;
    dims batch_lens; // dot: the output's batch axes; convolution: {groups}
    gemm_operand a, b;
    std::optional<conv_geometry> conv;

    std::size_t batch() const; // product of batch_lens (1 when none)
    bool empty() const { return m == 0 || n == 0 || batch() == 0; }
};

// The problem of a dot or convolution anchor applied to `inputs` (any strides) writing `output`
// (its lens; strides do not matter here, the epilogue stores through them). offset_elems: where
// each operand's view starts in its 256-byte-aligned buffer, in elements (0: at the start).
// nullopt for any other op.
std::optional<gemm_problem>
make_gemm_problem(const operation& anchor, const std::vector<shape>& inputs, const shape& output,
                  const std::array<std::size_t, 2>& offset_elems = {0, 0});

// Recomputes a and b's max_vector after base_align_bytes was changed.
void update_vector_limits(gemm_problem& p);

// "dot f16 z[8] m128 n64 k32 A{k-major 256B v8 ...} B{...}": every field that changes the
// generated kernel, for problem keys and messages.
std::string to_string(const gemm_problem& p);
std::string to_string(operand_major m);

} // namespace conflux::cuda
