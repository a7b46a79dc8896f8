#include "cuda/runtime/device_info.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"

#include <cuda_runtime_api.h>

namespace conflux::cuda {

namespace {

cudaError_t count_devices(int& count) {
    count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        count = 0; // left unwritten on failure
        (void)cudaGetLastError();
    }
    return e;
}

} // namespace

int available_devices() {
    int count = 0;
    count_devices(count);
    return count;
}

std::string no_device_reason() {
    int count = 0;
    const cudaError_t e = count_devices(count);
    if (e == cudaSuccess)
        return count > 0 ? std::string{} : std::string(cudaGetErrorString(cudaErrorNoDevice));
    std::string reason = std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
    // The static runtime reports a missing libcuda the same way as an old one.
    if (e == cudaErrorInsufficientDriver)
        reason += "; the NVIDIA driver is missing or older than this CUDA runtime needs";
    return reason;
}

device_info query_device(int index) {
    const int count = available_devices();
    if (count == 0) throw_user_error("no CUDA device available: ", no_device_reason());
    CONFLUX_USER_CHECK(index >= 0 && index < count, "CUDA device ", index,
                       " does not exist: this machine has ", count, " device(s)");
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, index),
               "query of CUDA device " + std::to_string(index) + "'s properties");
    device_info info;
    info.index = index;
    info.name = prop.name;
    info.arch = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
    info.sm_count = prop.multiProcessorCount;
    info.shared_per_block = prop.sharedMemPerBlock;
    info.shared_per_block_optin = prop.sharedMemPerBlockOptin;
    info.shared_per_sm = prop.sharedMemPerMultiprocessor;
    info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
    info.global_bytes = prop.totalGlobalMem;
    info.max_threads_per_block = prop.maxThreadsPerBlock;
    info.regs_per_sm = prop.regsPerMultiprocessor;
    return info;
}

} // namespace conflux::cuda
