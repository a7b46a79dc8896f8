// The epilogue of a fused gemm op inside the gemm kernel (docs/ARCHITECTURE.md, "Compiling a fused
// gemm op"): the fused module's part after the anchor (module::split at the anchor) becomes the
// kernel's cx_epilogue. The anchor's value is known at one position per call; the epilogue maps
// that position forward through the layout ops (reshape / transpose / squeeze / unsqueeze /
// flatten) that move it, computes the pointwise ops where the values meet (extra inputs read
// through their own strides, broadcasts included), and stores each return at its mapped
// position, straight into the output buffer's lens and strides. Layout changes before the
// pointwise ops (the NHWC convolution's transpose back to NCHW) and layout tails after them are
// both just forward maps.
//
// can_fuse says whether a perf config's kernel can hold such an epilogue, and why not:
//   - split-K: a block holds a partial sum, and the epilogue must not see partial sums;
//   - the module's shape: every op that uses the anchor's value is pointwise or a layout op,
//     values combined by a pointwise op came through the same layout ops (one position), and
//     every return is computed from the anchor;
//   - extra inputs: the kernel takes at most max_epilogue_inputs of them;
//   - shared memory: an output whose fastest axis is the tile's m (a transposed tail) is
//     written through a staged, m-major walk (gemm_kernel.hpp), whose shared memory must fit the
//     device in place of the pipeline's.
#pragma once

#include "conflux/ir/module.hpp"
#include "cuda/codegen/gemm/gemm_kernel.hpp"

#include <optional>
#include <string>
#include <vector>

namespace conflux::cuda {

// The most extra inputs (beyond A and B) a fused epilogue may read: each is a kernel parameter
// and a live pointer in every thread of the store loop.
constexpr std::size_t max_epilogue_inputs = 16;

// A fused op's epilogue module with what it is bound to.
struct epilogue_module {
    const module* mod = nullptr; // the part after the anchor: pointwise ops and layout tails
    std::size_t anchor_slot = 0; // its parameter that receives the anchor's output
    std::vector<shape> inputs;   // the shapes bound to mod's parameters, in order
    std::vector<shape> outputs;  // the fused op's outputs as allocated (any strides)
    // Each input's element offset in its buffer, where known (empty: not known): an input whose
    // offset keeps its lanes aligned is read a vector at a time.
    std::vector<std::size_t> input_offsets;
    std::size_t extra_inputs() const { return inputs.size() - 1; }
};

// What the epilogue needs from every config: empty `unsupported` when some config can fuse it,
// and the store walk its outputs want.
struct epilogue_shape {
    std::string unsupported;
    store_walk walk = store_walk::n_major;
    bool walk_required = false; // an output's fastest axis is m: only a staged walk coalesces
    unsigned lanes = 1;         // n_major: elements per thread step (16 bytes of the anchor)
};
epilogue_shape analyse_epilogue(const gemm_problem& p, const epilogue_module& e);

// Whether the kernel of config c (valid for p) can apply e's epilogue itself; when not and why
// is given, *why says which constraint failed.
bool can_fuse(const perf_config& c, const gemm_problem& p, const epilogue_module& e,
              std::string* why = nullptr, const gemm_device_limits& limits = {});

// The epilogue of e for the gemm kernel generator. Requires analyse_epilogue(p, e).unsupported
// to be empty; the parameters are e's extra inputs, then its outputs.
gemm_epilogue fused_epilogue(const gemm_problem& p, const epilogue_module& e);

} // namespace conflux::cuda
