#include "cuda/codegen/generator.hpp"

#include "conflux/ir/errors.hpp"

namespace conflux::cuda {

void add_index_generators() {}

kernel_source generate_module_kernel(const module&, const std::vector<shape>&,
                                     const std::vector<shape>&, const std::string& entry) {
    throw_internal_error("generate_module_kernel: not written yet (", entry, ")");
}

} // namespace conflux::cuda
