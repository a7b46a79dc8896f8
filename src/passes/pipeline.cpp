#include "conflux/passes/pipeline.hpp"

#include "conflux/passes/dce.hpp"
#include "conflux/passes/eliminate_common_subexpressions.hpp"
#include "conflux/passes/fuse_gemm.hpp"
#include "conflux/passes/fuse_pointwise.hpp"
#include "conflux/passes/layout.hpp"
#include "conflux/passes/merge_sibling_gemms.hpp"
#include "conflux/passes/pad_conv_channels.hpp"
#include "conflux/passes/pad_gemm_weights.hpp"
#include "conflux/passes/reduced_precision.hpp"
#include "conflux/passes/simplify.hpp"
#include "conflux/passes/split_reduction.hpp"
#include "conflux/util/errors.hpp"

#include <algorithm>

namespace conflux {

std::vector<pass> target_independent_passes(std::optional<reduced_precision> precision,
                                            std::optional<fuse_attention> attention) {
    std::vector<pass> passes{
        simplify{}, // fold constants and batch norms, cancel views
        dce{},      //
    };
    if (precision) passes.push_back(*precision); // weights fold below
    passes.insert(passes.end(),
                  {
                      layout_nhwc{}, // convolutions in NHWC with KRSC weights
                      simplify{},    // cancel the transposes between consecutive convolutions
                      eliminate_common_subexpressions{}, // per-layer copies of one value: once
                      merge_sibling_gemms{}, // one input's q, k, v projections: one product
                      dce{},                 //
                      split_reduction{},     // few long rows of channels-last data: two steps
                  });
    if (attention) // softmax(q.kt * scale + bias).v -> attention
        passes.insert(passes.end(), {std::move(*attention), dce{}});
    passes.insert(passes.end(),
                  {
                      pad_conv_channels{}, // 3-channel stems read whole (padded) pixels
                      pad_gemm_weights{},  // 16-byte rows for constant B operands (after the
                                           // last simplify, which would fold the slice back)
                      fuse_pointwise{},    // elementwise DAGs -> pointwise ops
                      fuse_gemm{},         // anchor + epilogue + layout tail -> fused_gemm ops
                      dce{},
                  });
    return passes;
}

std::vector<pass> without_passes(std::vector<pass> passes, const std::vector<std::string>& names) {
    std::vector<std::string> known; // each name once, in pipeline order
    for (const auto& p : passes)
        if (std::find(known.begin(), known.end(), p.name()) == known.end())
            known.push_back(p.name());
    for (const auto& name : names) {
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        std::string all;
        for (const auto& k : known)
            all += (all.empty() ? "" : ", ") + k;
        throw_user_error("--skip-pass: no pass named '", name, "' (the passes are: ", all, ")");
    }
    std::erase_if(passes, [&](const pass& p) {
        return std::find(names.begin(), names.end(), p.name()) != names.end();
    });
    return passes;
}

} // namespace conflux
