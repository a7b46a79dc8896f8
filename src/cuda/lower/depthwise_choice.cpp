#include "cuda/lower/depthwise_choice.hpp"

#include "conflux/ops/convolution.hpp"

namespace conflux::cuda {

bool depthwise_runs_direct(const operation& anchor, const std::vector<shape>& inputs) {
    const auto* conv = anchor.get_if<op::convolution>();
    if (conv == nullptr || !conv->channels_last || conv->group <= 1 || inputs.size() != 2)
        return false;
    const shape& w = inputs[1]; // KRSC: [K, kernel..., C/group]
    const dtype t = inputs[0].type();
    const bool floating = t == dtype::f16 || t == dtype::bf16 || t == dtype::f32;
    return floating && w.rank() >= 3 && w.lens().back() == 1;
}

} // namespace conflux::cuda
