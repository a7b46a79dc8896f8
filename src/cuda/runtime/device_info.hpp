// Which GPUs this process can use and what they offer. Safe to call on a machine with no GPU or
// no driver: the runtime is linked statically, so only these calls find that out.
#pragma once

#include "conflux/cuda/devices.hpp"

#include <cstddef>
#include <string>

namespace conflux::cuda {

struct device_info {
    int index = 0;
    std::string name;
    std::string arch; // "sm_90": what nvrtc_compile takes
    int sm_count = 0;
    std::size_t shared_per_block = 0;       // without opting in
    std::size_t shared_per_block_optin = 0; // with cudaFuncAttributeMaxDynamicSharedMemorySize
    std::size_t shared_per_sm = 0;
    std::size_t l2_bytes = 0;
    std::size_t global_bytes = 0;
    int max_threads_per_block = 0;
    int regs_per_sm = 0;
};

// Throws user_error when the device does not exist (naming no_device_reason() when there is none).
device_info query_device(int index = 0);

} // namespace conflux::cuda
