// The kernel generators, one per op family, found by op name. A generator turns one operation
// applied to operands of known shapes into one kernel (kernel_source.hpp says how its
// parameters are laid out). Generators never assume standard strides: they read every input and
// write every output through the shapes given, which is how views, layout tails and the memory
// plan's aliasing stay free.
#pragma once

#include "conflux/ir/operation.hpp"
#include "cuda/jit/kernel_source.hpp"

#include <functional>
#include <string>
#include <vector>

namespace conflux::cuda {

struct kernel_request {
    const operation* op = nullptr;
    std::vector<shape> inputs;          // the actual operand shapes (any strides)
    std::vector<shape> outputs;         // where results go (any strides; >1 for tuple results)
    std::vector<const module*> modules; // the op's submodules (pointwise, fused_gemm parts)
    std::string entry;                  // the kernel's name, unique within a program
    // A config the kernel family must use when it can (the attention kernel's); empty: its
    // heuristic.
    std::string config;
    // Whether the target runs sm_90a's warpgroup MMA (the attention kernel's _wgmma configs).
    bool wgmma = false;
    // Each input's pointer is its buffer's base (16-byte aligned) plus this many elements (a
    // view such as a slice aliases its input's memory); empty: every offset is 0. Kernels that
    // move several elements per load check that the offset keeps them aligned.
    std::vector<std::size_t> input_offsets;
};

// Whether input i of r starts `elements` elements past an address aligned to their size (its
// offset, when the request gives one, is a multiple of `elements`).
bool input_aligned_to(const kernel_request& r, std::size_t i, std::size_t elements);

using generator_fn = std::function<kernel_source(const kernel_request&)>;

// Registers `fn` for every op whose name() is `op_name`; called by the add_*_generators
// functions below.
void add_generator(const std::string& op_name, generator_fn fn);
// The generator for op_name, or nullptr.
const generator_fn* find_generator(const std::string& op_name);
// Runs the generator for the request's op; a user_error naming the op when there is none.
kernel_source generate_kernel(const kernel_request& request);

// Each generator family registers its ops; generator.cpp calls these once, in one visible list.
void add_index_generators();         // index_codegen: pointwise modules, elementwise, copies of
                                     // views, contiguous, concat, pad, the gathers, trilu,
                                     // batch_normalization
void add_reduce_generators();        // reduce_*, softmax, log_softmax, argmax, argmin
void add_normalization_generators(); // layer_normalization
void add_pooling_generators();       // max_pool, average_pool
void add_scan_generators();          // cumsum
void add_top_k_generators();         // top_k
void add_resize_generators();        // resize
void add_scatter_generators();       // scatter_nd, scatter_elements
void add_direct_gemm_generators();   // convolution, dot: simple correct kernels, not tuned
void add_attention_generators();     // attention: the fused flash-attention kernel

// The kernel for a module of views and index-expressible ops (what a `pointwise` op, a split
// part of a fused gemm op or a layout copy holds): parameters bound to `inputs` in order, each
// return written to the matching `outputs` shape.
kernel_source generate_module_kernel(const module& m, const std::vector<shape>& inputs,
                                     const std::vector<shape>& outputs, const std::string& entry);

} // namespace conflux::cuda
