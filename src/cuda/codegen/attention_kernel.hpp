// What the attention op's fused kernel (attention_codegen.cpp, kernels/attention.cuh) takes:
// f16 or bf16 q, kt, v (and a bias of any float type), head dims up to 128, any sequence
// lengths and strides.
#pragma once

#include "conflux/ir/shape.hpp"

#include <string>
#include <vector>

namespace conflux::cuda {

// Why the kernel cannot run an attention op with these input shapes; empty when it can.
std::string attention_kernel_obstacle(const std::vector<shape>& inputs);

} // namespace conflux::cuda
