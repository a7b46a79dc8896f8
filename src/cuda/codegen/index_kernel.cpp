#include "cuda/codegen/index_kernel.hpp"

#include "cuda/codegen/device_types.hpp"

namespace conflux::cuda::index {

std::string kernel_signature(const std::string& entry, const std::vector<shape>& inputs,
                             const std::vector<shape>& outputs) {
    std::string params;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        params += (params.empty() ? "const " : ", const ") + storage_type(inputs[i].type()) +
                  "* in" + std::to_string(i);
    for (std::size_t i = 0; i < outputs.size(); ++i)
        params += (params.empty() ? "" : ", ") + storage_type(outputs[i].type()) + "* out" +
                  std::to_string(i);
    return "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block_threads) +
           ") " + entry + "(" + params + ")";
}

std::string index_type_for(const module& m, const std::vector<shape>& inputs,
                           const std::vector<shape>& outputs) {
    constexpr std::size_t limit = std::size_t{1} << 31;
    bool fits = true;
    for (const auto& s : inputs)
        fits = fits && s.element_space() < limit;
    for (const auto& s : outputs)
        fits = fits && s.element_space() < limit && s.elements() < limit;
    for (const auto& ins : m) {
        const shape& s = ins.get_shape();
        if (s.is_tuple()) continue;
        fits = fits && s.elements() < limit;
        if (ins.is_literal()) fits = fits && s.element_space() < limit; // read through its strides
    }
    return fits ? "int" : "long long";
}

} // namespace conflux::cuda::index
