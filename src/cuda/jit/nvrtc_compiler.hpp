// One generated kernel through NVRTC to a cubin for one GPU architecture. Needs no GPU: the
// same call compiles ahead of time on a machine without one.
#pragma once

#include "cuda/jit/kernel_source.hpp"

#include <string>
#include <vector>

namespace conflux::cuda {

struct compiled_kernel {
    std::string entry;
    std::vector<char> cubin;
    std::string log; // NVRTC's messages (warnings), empty when silent
};

// arch: "sm_90", "sm_80", ... Failure is an internal error (the code is generated, so a
// compile error is Conflux's bug): it names the kernel and carries NVRTC's log.
compiled_kernel nvrtc_compile(const kernel_source& k, const std::string& arch);

// The architecture nvrtc_compile compiles k for: arch, or its "a" target when k is
// arch_specific.
std::string target_arch(const kernel_source& k, const std::string& arch);

// The options nvrtc_compile passes, for cache keys.
std::vector<std::string> nvrtc_options(const std::string& arch);

// "13.0": the NVRTC library the process loaded.
std::string nvrtc_version();

// True for the architectures this NVRTC can compile for, e.g. "sm_90".
bool nvrtc_supports_arch(const std::string& arch);

} // namespace conflux::cuda
