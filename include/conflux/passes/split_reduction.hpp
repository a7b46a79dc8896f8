// Split reduction: a reduction over several axes whose input keeps its fastest axis (a spatial
// mean of channels-last data: squeeze-and-excitation's global pool) and has too few outputs to
// occupy the GPU becomes two reductions, the inner reduced axes first, then the rest:
//   reduce_mean{axes: [2, 3]}(x [32,32,112,112]{.., 1, ..})         1,024 outputs of 12,544
// To:
//   @a = reduce_mean{axes: [3], keepdims}(x)                         114,688 outputs of 112
//   reduce_mean{axes: [2, 3]}(@a)                                    1,024 outputs of 112
// Adjacent threads of the first one read adjacent channels (coalesced) and it has a thread per
// output; one reduction would either read with the channel stride (a block per output) or give
// a thread the whole image (issue 16: EfficientNet-B0's first pool ran at about 110 GB/s).
//
// Only reductions that the split leaves exact up to rounding: mean (the means of equal-sized
// parts), max and min, and sum of f32/f64 (a 16-bit partial sum could overflow where the whole
// sum, accumulated in f32, does not). The intermediate has the input's dtype.
#pragma once

#include "conflux/ir/module.hpp"

#include <cstddef>

namespace conflux {

struct split_reduction {
    // Reductions with fewer outputs than this are split...
    std::size_t max_outputs = 65536;
    // ...when they reduce at least this many elements each.
    std::size_t min_row_length = 64;
    // The first reduction takes the largest set of inner axes that still gives it this many
    // outputs (the innermost axis alone when none does).
    std::size_t target_outputs = 32768;

    std::string name() const { return "split_reduction"; }
    void apply(module& m) const;
};

} // namespace conflux
