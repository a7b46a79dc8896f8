// Which anchors the implicit-GEMM generator should leave to the direct kernel. A depthwise
// convolution (one input channel per group) is, as a GEMM, one product per channel with N = 1
// (or the channel multiplier) and K = the kernel's taps: the generator's tiles run almost empty
// (issue 16 measured ConvNeXt-tiny's 7x7 depthwise layers at 1.95 ms each at batch 32). The
// direct kernel gives each thread one output and walks the taps; with channels last,
// neighbouring threads read neighbouring channels, so its loads coalesce.
#pragma once

#include "conflux/ir/operation.hpp"

namespace conflux::cuda {

// True for a channels-last convolution with more than one group and one input channel per
// group (depthwise, with any channel multiplier), of a floating type.
bool depthwise_runs_direct(const operation& anchor, const std::vector<shape>& inputs);

} // namespace conflux::cuda
