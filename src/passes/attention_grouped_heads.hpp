// Private to fuse_attention: grouped-query attention (LLaMA, Mistral: each key/value head serves
// `r` query heads) without the copy that repeats the keys and values.
//
// Exporters write the repeat as unsqueeze -> expand -> reshape: [.., kv, 1, S, D] broadcast to
// [.., kv, r, S, D] (stride 0 along r), then the kv and r axes merged into the heads axis, which
// no strides can express, so the reshape copies every key and value r times. The attention op
// takes any batch axes, so instead every operand gets the heads axis split into (kv, r): the
// repeated ones are the broadcast itself, the others a view (splitting an axis always is), and
// the result is merged back, a view of the contiguous output.
#pragma once

#include "conflux/ir/module.hpp"

#include <functional>
#include <string>
#include <vector>

namespace conflux::passes_detail {

// `att` (an attention instruction) with its heads grouped when its keys or values are such a
// repeat; otherwise `att` unchanged. `obstacle` (may be empty) is the target's veto on the
// grouped operands' shapes, as fuse_attention's.
instruction_ref
group_repeated_heads(module& m, instruction_ref att,
                     const std::function<std::string(const std::vector<shape>&)>& obstacle);

} // namespace conflux::passes_detail
