// Views as index transforms: the position in a view's input that holds the value at a position
// of its output. Every transform depends only on lens (never on strides), so it is right
// whether the reference evaluated the op as a view or as a copy.
#pragma once

#include "conflux/ir/operation.hpp"
#include "cuda/codegen/index_writer.hpp"

#include <optional>

namespace conflux::cuda::index {

// For the view ops (reshape, flatten, transpose, squeeze, unsqueeze, broadcast, slice with any
// steps) and contiguous: the position in input 0 (of lens `in_lens`) read for output position
// `at`. nullopt for any other op.
std::optional<index_expr> view_source(const operation& op, const dims& in_lens,
                                      const index_expr& at, kernel_writer& w);

// The position over `in_lens` of the element that is at `at` in row-major order over at.lens
// (equal element counts): a reshape's transform.
index_expr reshape_source(const dims& in_lens, const index_expr& at, kernel_writer& w);

} // namespace conflux::cuda::index
