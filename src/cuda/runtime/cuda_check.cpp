#include "cuda/runtime/cuda_check.hpp"

#include "conflux/util/errors.hpp"

namespace conflux::cuda {

bool is_environment_error(cudaError_t e) {
    switch (e) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorInitializationError:
    case cudaErrorDevicesUnavailable:
    case cudaErrorDeviceNotLicensed:
    case cudaErrorSystemNotReady:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorMemoryAllocation:
    case cudaErrorNoKernelImageForDevice:
        return true;
    default:
        return false;
    }
}

void cuda_check(cudaError_t e, std::string_view what) {
    if (e == cudaSuccess) return;
    // The runtime also records a non-sticky error as the thread's last error; clearing it keeps a
    // later, unrelated cudaGetLastError from reporting this one a second time.
    (void)cudaGetLastError();
    const char* name = cudaGetErrorName(e);
    const char* text = cudaGetErrorString(e);
    if (is_environment_error(e))
        throw_user_error("CUDA error during ", what, ": ", text, " (", name, ")");
    throw_internal_error("CUDA error during ", what, ": ", text, " (", name, ")");
}

} // namespace conflux::cuda
