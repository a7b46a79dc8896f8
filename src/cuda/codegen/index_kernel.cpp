#include "cuda/codegen/index_kernel.hpp"

#include "cuda/codegen/codegen_text.hpp"

namespace conflux::cuda::index {

std::string kernel_signature(const std::string& entry, const std::vector<shape>& inputs,
                             const std::vector<shape>& outputs) {
    return text::kernel_signature(entry, text::buffer_parameters(inputs, outputs), block_threads);
}

std::string kernel_prelude() {
    return text::include_prelude({"types.cuh", "math.cuh"});
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
