// Every CUDA runtime call is checked; a failure becomes a Conflux error naming the call's purpose.
//
// Which channel: a failure caused by the machine rather than by Conflux is a user_error, so that
// tools report it as a problem with the environment or the request, not as a bug. Those are: no
// device or no (new enough) driver, device memory exhausted, and a cubin built for another
// architecture than the device's (the user picked the arch). Everything else — an invalid
// argument, a bad launch configuration, a fault inside a generated kernel — is an internal_error:
// Conflux generated or issued something wrong.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

namespace conflux::cuda {

// True for the errors cuda_check reports as user_error (see above).
bool is_environment_error(cudaError_t e);

// Throws when e is not cudaSuccess. The message has the CUDA error's name and description and
// `what`, the operation, e.g. "launch of kernel k12_pointwise (@12 = pointwise ...)".
void cuda_check(cudaError_t e, std::string_view what);

} // namespace conflux::cuda
