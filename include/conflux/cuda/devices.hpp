// Whether this process can use a GPU; asked before running, never throws.
#pragma once

#include <string>

namespace conflux::cuda {

// The number of usable devices; 0 when there is no GPU or no (new enough) driver. Never throws.
int available_devices();

// Why available_devices() is 0, in the runtime's words (e.g. "no CUDA-capable device is
// detected"), for error messages; empty when a device exists.
std::string no_device_reason();

} // namespace conflux::cuda
