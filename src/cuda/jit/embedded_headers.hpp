// The device headers of src/cuda/kernels, embedded in the binary at build time (see
// cmake/embed_files.cmake); generated kernels include them as "conflux/<file>.cuh".
#pragma once

#include <vector>

namespace conflux::cuda {

struct embedded_header {
    const char* include_name;
    const char* text;
};

const std::vector<embedded_header>& embedded_headers();

} // namespace conflux::cuda
