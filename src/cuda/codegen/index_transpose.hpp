// Transpose-like copies tiled through shared memory: when a module is nothing but views of its
// one parameter and the output's fastest axis is not the input's, a direct copy would read or
// write with a large stride. A 32x32 tile (padded to 33 columns, so the transposed read from
// shared memory hits 32 different banks) is read along the input's fastest axis and written
// along the output's, both coalesced.
#pragma once

#include "conflux/ir/module.hpp"
#include "cuda/jit/kernel_source.hpp"

#include <optional>

namespace conflux::cuda::index {

// The tiled kernel for m, or nullopt when m is not a single chain of views (transpose,
// reshape/flatten that can be views of the actual input, squeeze, unsqueeze, broadcast,
// contiguous) from its only parameter to its only return, or when the copy has no transposed
// pair of axes at least 16 long each (the generic kernel is as good for thin transposes).
std::optional<kernel_source> tiled_transpose_kernel(const module& m,
                                                    const std::vector<shape>& inputs,
                                                    const std::vector<shape>& outputs,
                                                    const std::string& entry);

} // namespace conflux::cuda::index
