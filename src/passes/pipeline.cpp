#include "conflux/passes/pipeline.hpp"

#include "conflux/passes/dce.hpp"
#include "conflux/passes/fuse_gemm.hpp"
#include "conflux/passes/fuse_pointwise.hpp"
#include "conflux/passes/layout.hpp"
#include "conflux/passes/reduced_precision.hpp"
#include "conflux/passes/simplify.hpp"
#include "conflux/passes/split_reduction.hpp"

namespace conflux {

std::vector<pass> target_independent_passes(std::optional<dtype> precision,
                                            std::optional<fuse_attention> attention) {
    std::vector<pass> passes{
        simplify{}, // fold constants and batch norms, cancel views
        dce{},      //
    };
    if (precision) passes.push_back(reduced_precision{*precision}); // weights fold below
    passes.insert(passes.end(),
                  {
                      layout_nhwc{},     // convolutions in NHWC with KRSC weights
                      simplify{},        // cancel the transposes between consecutive convolutions
                      dce{},             //
                      split_reduction{}, // few long rows of channels-last data: two steps
                  });
    if (attention) // softmax(q.kt * scale + bias).v -> attention
        passes.insert(passes.end(), {std::move(*attention), dce{}});
    passes.insert(passes.end(),
                  {
                      fuse_pointwise{}, // elementwise DAGs -> pointwise ops
                      fuse_gemm{},      // anchor + epilogue + layout tail -> fused_gemm ops
                      dce{},
                  });
    return passes;
}

} // namespace conflux
