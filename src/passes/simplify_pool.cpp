// A pooling whose window is the whole input (global pooling: GlobalAveragePool,
// GlobalMaxPool, AdaptiveAvgPool2d(1), an AveragePool sized to the image) becomes a mean / max
// reduction over the spatial axes: the same values, and the reduction kernels split each
// image's sum across threads where the pooling kernel gives one thread the whole window
// (issue 16: EfficientNet-B0's squeeze-and-excitation pools took 0.3 ms at batch 32).
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/reduce.hpp"
#include "passes/simplify_rewrites.hpp"

namespace conflux::simplify_detail {

bool find_global_pool(module& m, instruction_ref ins) {
    const auto* p = ins->get_operator().get_if<op::pooling>();
    if (p == nullptr) return false;
    const shape& x = ins->inputs()[0]->get_shape();
    const std::size_t nd = p->lengths.size();
    if (x.rank() != nd + 2) return false;
    const std::size_t first = p->channels_last ? 1 : 2;
    std::vector<std::int64_t> axes;
    for (std::size_t d = 0; d < nd; ++d) {
        const bool dilated = !p->dilation.empty() && p->dilation[d] != 1;
        if (p->lengths[d] != x.lens()[first + d] || dilated || x.lens()[first + d] == 0)
            return false;
        axes.push_back(static_cast<std::int64_t>(first + d));
    }
    for (std::size_t pad : p->padding)
        if (pad != 0) return false;
    for (std::size_t d = 0; d < nd; ++d)
        if (ins->get_shape().lens()[first + d] != 1) return false; // ceil_mode windows
    const op::reduce r{p->mode == op::pooling_mode::max ? op::reduce_kind::max
                                                        : op::reduce_kind::mean,
                       axes, true, false};
    auto reduced = m.insert_instruction(ins, r, {ins->inputs()[0]});
    if (reduced->get_shape().lens() != ins->get_shape().lens()) return false;
    replace(m, ins, reduced);
    return true;
}

} // namespace conflux::simplify_detail
