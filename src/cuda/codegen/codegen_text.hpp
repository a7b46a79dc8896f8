// String building shared by the CUDA generators: integer literals, the include prelude and the
// kernel signature (every generator); and for the reduce, normalisation, pooling, cumsum, top_k
// and direct gemm generators the kernel start, index decomposition, strided offsets, 32/64-bit
// index choice, and how rows of a reduction map onto threads. Generated code names its index
// type `cx_index`.
#pragma once

#include "conflux/util/errors.hpp"
#include "cuda/codegen/generator.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace conflux::cuda::text {

// "int" when every element count and element_space of `shapes` fits in int32 (so every offset
// and linear index a kernel over them forms does too), else "long long".
std::string index_type(const std::vector<shape>& shapes);
// index_type over the request's inputs and outputs.
std::string index_type(const kernel_request& r);

// `#include "conflux/<header>"` for each of `headers`, then an empty line: the first lines of
// every generated file.
std::string include_prelude(const std::vector<std::string>& headers);

// Generated code declares every coordinate and offset it might need; those that a shape makes
// constant go unused, which is not worth a warning per kernel.
constexpr const char* suppress_unused_warnings = "#pragma nv_diag_suppress 177\n";

// `extern "C" __global__ void <entry>(<parameters>)`, with `__launch_bounds__(<launch_bounds>) `
// (or `__launch_bounds__(<launch_bounds>, <min_blocks>) `) before the name unless launch_bounds
// is 0; no brace.
std::string kernel_signature(const std::string& entry, const std::vector<std::string>& parameters,
                             unsigned launch_bounds = 0, unsigned min_blocks = 0);

// The parameters of the convention of kernel_source.hpp: `const S0* in0, ...` for the inputs,
// then `S* out0, ...` for the outputs, S the storage type.
std::vector<std::string> buffer_parameters(const std::vector<shape>& inputs,
                                           const std::vector<shape>& outputs);

// The device headers the reduce, normalisation, pooling and direct gemm kernels include.
inline const std::vector<std::string> reduce_headers = {"types.cuh", "reduce.cuh"};

// The start of every kernel of the reduce, normalisation, pooling, scatter and direct gemm
// generators: the includes of `headers`, `typedef <index> cx_index;`, and `extern "C" __global__
// void <entry>(const S0* in0, ..., S* out0, ...)` up to and including the opening brace.
std::string kernel_begin(const kernel_request& r, const std::string& index,
                         const std::vector<std::string>& headers = reduce_headers);

// The kernel `kernel_begin(r, index_type(r), headers) + body + "}"` launched as `launch`.
kernel_source make_kernel(const kernel_request& r, const std::string& body, launch_dims launch,
                          const std::vector<std::string>& headers = reduce_headers);

// A kernel that does nothing, for requests whose outputs have no elements; launches no block.
kernel_source empty_kernel(const kernel_request& r);

// The Op of a one-input, one-output request, checked: the lowering builds requests from valid
// instructions, so a mismatch is an internal error.
template <class Op> const Op& single_operand_op(const kernel_request& r, const char* generator) {
    const auto* op = r.op->get_if<Op>();
    CONFLUX_ASSERT(op != nullptr, generator, " for ", r.op->name());
    CONFLUX_ASSERT(r.inputs.size() == 1 && r.outputs.size() == 1, r.op->name(),
                   ": one input and one output expected");
    CONFLUX_ASSERT(r.outputs[0].lens() == op->compute_shape({r.inputs[0]}).lens(), r.op->name(),
                   ": output ", to_string(r.outputs[0]), " does not match input ",
                   to_string(r.inputs[0]));
    return *op;
}

// {prefix + "0", prefix + "1", ...}: n variable names.
std::vector<std::string> names(const std::string& prefix, std::size_t n);

// Declares `i`, this thread's element in row-major order of `elements` (launched with
// linear_launch(elements, 256)); threads past the last return.
std::string thread_per_element(std::size_t elements, const std::string& indent);
constexpr unsigned elementwise_block = 256;

// Lines declaring `const cx_index <names[i]>` as the row-major multi-index of `linear` over
// `lens`. An axis of len 1 is the constant 0; no lens may be 0.
std::string decompose(const std::string& linear, const dims& lens,
                      const std::vector<std::string>& names, const std::string& indent);

// "a * 12 + b * 3": the element offset of a multi-index whose i-th coordinate is the expression
// index[i]. Axes of len 1 or stride 0 contribute nothing; "0" when nothing is left.
std::string offset(const std::vector<std::string>& index, const dims& lens, const dims& strides);

// "expr * factor", or just "expr" when factor is 1.
std::string scaled(const std::string& expr, std::size_t factor);

// Integer literals for generated code, all in decimal. INT64_MIN is written as
// "(-9223372036854775807LL - 1)": its magnitude is no literal of a signed type. A std::size_t
// must not exceed INT64_MAX (internal error).
// An int literal where the value fits in int32, else "LL"-suffixed.
std::string integer_literal(long long v);
std::string integer_literal(std::size_t v);
// Always "LL"-suffixed, so that the arithmetic it takes part in is 64-bit.
std::string long_long_literal(long long v);
std::string long_long_literal(std::size_t v);
// Without a suffix (C++ gives it the first of int, long, long long that holds it): how the index
// generator writes its constants.
std::string decimal_literal(std::int64_t v);

// One thread per item in blocks of `block` threads; grid 0 when there are no items.
launch_dims linear_launch(std::size_t items, unsigned block);

// How the rows of a reduction (the elements reduced into one result) are spread over threads:
// a block per row whose threads stride over the row and combine through cx_block_reduce, a warp
// per row (several rows per block) combining through shuffles alone, or one thread per row
// looping over it. Short rows waste a block; many rows whose neighbours are adjacent in memory
// (the fastest-varying input axis is not reduced) read coalesced only with a thread per row; many
// rows of at most 1024 contiguous elements (attention's softmax, a transformer's layer norm) go
// a warp each: a block per row there spends its time in barriers and block scheduling.
struct row_mapping {
    bool thread_per_row = false;
    bool warp_per_row = false;
    unsigned block = 256; // threads per block; a multiple of 32
    std::size_t rows = 0;
    std::size_t row_length = 0;

    launch_dims launch() const;
    // Declares `row` (the row this thread works on, returning early past the last one in
    // thread- and warp-per-row modes), `first` and `step` (this thread's elements of the row are
    // first, first + step, ...).
    std::string prologue(const std::string& indent) const;
    // The value every thread of the row needs, combined from each thread's `value` with the
    // function object `op` (e.g. "cx_op_add()").
    std::string combine(const std::string& value, const std::string& op) const;
};

// The rows of a kernel that walks one axis sequentially per thread (cumsum, top_k): a row per
// position over every other axis, thread `i` taking row `i`.
struct axis_rows {
    std::size_t axis = 0;
    dims lens;                      // the other axes' lens, in order
    std::vector<std::string> names; // their coordinates' variables
    std::size_t count = 1;          // rows

    // Declares the coordinates of row `i` (from thread_per_element(count, ...)).
    std::string decompose_row(const std::string& indent) const;
    // Declares `const cx_index <var>`: the offset of the row's start in `s` (of the row source's
    // rank, any strides).
    std::string start(const std::string& var, const shape& s, const std::string& indent) const;
};
axis_rows rows_along(const shape& x, std::size_t axis);

// Picks the mapping. `fastest_axis_reduced`: the input axis with the smallest stride (among axes
// of len > 1) is one of the reduced ones.
row_mapping choose_row_mapping(std::size_t rows, std::size_t row_length, bool fastest_axis_reduced);

// Whether the input axis with the smallest non-zero stride among axes of len > 1 is in `axes`
// (true when there is no such axis).
bool fastest_axis_in(const shape& s, const std::vector<std::size_t>& axes);

} // namespace conflux::cuda::text
