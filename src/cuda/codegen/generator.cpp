#include "cuda/codegen/generator.hpp"

#include "conflux/util/errors.hpp"

#include <map>

namespace conflux::cuda {

namespace {
std::map<std::string, generator_fn>& table() {
    static std::map<std::string, generator_fn> generators;
    return generators;
}

std::map<std::string, generator_fn>& registry() {
    static const bool filled = [] {
        add_index_generators();
        add_reduce_generators();
        add_normalization_generators();
        add_pooling_generators();
        add_scan_generators();
        add_top_k_generators();
        add_resize_generators();
        add_scatter_generators();
        add_direct_gemm_generators();
        add_attention_generators();
        return true;
    }();
    (void)filled;
    return table();
}
} // namespace

void add_generator(const std::string& op_name, generator_fn fn) {
    table()[op_name] = std::move(fn);
}

const generator_fn* find_generator(const std::string& op_name) {
    auto it = registry().find(op_name);
    return it == registry().end() ? nullptr : &it->second;
}

bool input_aligned_to(const kernel_request& r, std::size_t i, std::size_t elements) {
    return i >= r.input_offsets.size() || r.input_offsets[i] % elements == 0;
}

kernel_source generate_kernel(const kernel_request& request) {
    CONFLUX_ASSERT(request.op != nullptr, "generate_kernel without an op");
    const std::string name = request.op->name();
    const generator_fn* fn = find_generator(name);
    CONFLUX_USER_CHECK(fn != nullptr, "the cuda target has no kernel generator for op '", name,
                       "'");
    kernel_source k = (*fn)(request);
    k.inputs = request.inputs.size();
    k.outputs = request.outputs.size();
    return k;
}

} // namespace conflux::cuda
