// TMA tensor maps for the kernels that take them (kernel_source::tensor_maps): encoded on the
// host once the kernel's pointers are known, through the driver's cuTensorMapEncodeTiled, which
// the runtime hands out (cudaGetDriverEntryPointByVersion), so Conflux never links libcuda.
#pragma once

#include "cuda/jit/kernel_source.hpp"

#include <cstddef>
#include <vector>

namespace conflux::cuda {

// The 128 opaque bytes a kernel takes as `const __grid_constant__ cx_tensor_map`.
struct alignas(128) encoded_tensor_map {
    unsigned long long words[16] = {};
};

// The map of spec over the memory at `address` (the pointer bound to spec.argument). A spec the
// driver rejects is an internal_error naming the kernel (the generator promised it was valid);
// a driver without the entry point is a user_error.
encoded_tensor_map encode_tensor_map(const tensor_map_spec& spec, const void* address,
                                     const std::string& kernel);

// Every map of k, given the kernel's pointer arguments in parameter order.
std::vector<encoded_tensor_map> encode_tensor_maps(const kernel_source& k,
                                                   const std::vector<void*>& pointers);

} // namespace conflux::cuda
