// Scaled dot-product attention as one op: out = softmax(scale * q . kt + bias) . v, the
// softmax along the last axis, computed in f32 (f64 for f64) without rounding the scores or
// the probabilities to the inputs' type. The pass fuse_attention forms it from the
// dot -> scale -> mask -> softmax -> dot chains PyTorch's exporters write.
//
// Inputs: q [..., Sq, D], kt [..., D, Sk] (the keys transposed, as the first product's right
// operand; any strides), v [..., Sk, Dv], and optionally bias [..., Sq, Sk] (any strides: a
// broadcast mask has zero strides). Every batch axis has one length in q, kt, v and bias (a
// broadcast operand is a view with stride 0). Output [..., Sq, Dv] of v's type.
//
// zero_nan_rows: a row whose softmax is not a number (every score -inf, or a NaN or +inf among
// them) gives zeros, as PyTorch's safe softmax (`where(isnan(p), 0, p)`) does.
//
// out_perm: empty, or the output is that result transposed (output axis i is its axis
// out_perm[i]) and stored contiguous: the kernel writes the heads back into a [batch, Sq,
// heads, Dv] tensor itself, so the merge of the heads before the output projection is a view
// and not a copy.
#pragma once

#include "conflux/ir/operation.hpp"

namespace conflux::op {

struct attention {
    float scale = 1.0f;
    bool zero_nan_rows = false;
    std::vector<std::int64_t> out_perm;
    std::string name() const { return "attention"; }
    static attention from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const;
    op_traits traits() const { return {.accumulates_in_f32 = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    // The result [..., Sq, Dv] before out_perm, as a view of the output `out` (its strides).
    shape result_view(const shape& out) const;
    bool operator==(const attention&) const = default;
};

} // namespace conflux::op
