// Fuse attention: softmax(scale * q . kt + bias) . v, as PyTorch's exporters write it, becomes
// one `attention` op (conflux/ops/attention.hpp). Recognised around every softmax over the last
// axis whose probabilities feed only the left operand of a dot:
//   - the scores: a dot, then scalar factors (x * c, c * x, x / c with c a one-element literal)
//     and at most one added bias (an additive mask, a position bias), the bias before any factor
//     applied after the dot (a later factor would scale the bias too); scalar factors on either
//     operand of the dot (torch's SDPA scales q and k by sqrt(scale) each) join the scale;
//   - float converts anywhere in the chain (--fp16 keeps softmax in f32);
//   - after the softmax, optionally torch's safe-softmax guard where(isnan(p), 0, p)
//     (zero_nan_rows).
// Grouped-query attention (each key/value head repeated for several query heads by
// unsqueeze -> expand -> reshape, a copy) keeps the heads grouped instead: the op gets the heads
// axis split into (kv heads, repeat) and reads the keys and values once per kv head.
// Every intermediate value must have that one use. Precondition: after simplify, before
// fuse_pointwise. Guarantee: the same results up to the rounding of the intermediate scores and
// probabilities, which the op keeps in f32 (or f64).
#pragma once

#include "conflux/ir/module.hpp"

#include <functional>
#include <string>
#include <vector>

namespace conflux {

struct fuse_attention {
    // When set: why the target cannot run an attention op with these input shapes (q, kt, v
    // and the bias if any), empty when it can. A match the target cannot run stays as it was.
    std::function<std::string(const std::vector<shape>&)> obstacle;
    // When set: told of each match left as it was, with the reason (--trace-compile).
    std::function<void(const std::string&)> note;

    std::string name() const { return "fuse_attention"; }
    void apply(module& m) const;
};

} // namespace conflux
