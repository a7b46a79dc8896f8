// What the index kernels share: the parameter list, the block size and the index type.
#pragma once

#include "conflux/ir/module.hpp"

#include <string>
#include <vector>

namespace conflux::cuda::index {

// Threads per block of every index kernel.
constexpr unsigned block_threads = 256;

// `extern "C" __global__ void __launch_bounds__(256) entry(const In0* in0, ..., Out0* out0)`,
// the convention of kernel_source.hpp.
std::string kernel_signature(const std::string& entry, const std::vector<shape>& inputs,
                             const std::vector<shape>& outputs);

// "int" when every buffer's element space, every output's element count and every value the
// module computes has fewer than 2^31 elements (so every index and offset fits), else
// "long long".
std::string index_type_for(const module& m, const std::vector<shape>& inputs,
                           const std::vector<shape>& outputs);

// The file's first lines: the device headers every index kernel includes.
std::string kernel_prelude();

} // namespace conflux::cuda::index
