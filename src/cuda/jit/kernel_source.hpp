// What every kernel generator produces: CUDA C++ text plus how to launch it. Shapes are static,
// so lens and strides are compiled into the text and a kernel takes only pointers:
//
//   extern "C" __global__ void <entry>(const In0* in0, ..., Out0* out0, ...)
//
// one pointer per input, then one per output, each typed by its dtype's storage type and pointing
// at element 0 of the operand's view (offsets are applied by the caller). Inputs are read and
// outputs written through the lens and strides the generator was given.
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace conflux::cuda {

struct launch_dims {
    std::array<unsigned, 3> grid{1, 1, 1};
    std::array<unsigned, 3> block{1, 1, 1};
    unsigned shared_bytes = 0; // dynamic shared memory
};

struct kernel_source {
    std::string entry; // the extern "C" __global__ function's name
    std::string code;  // a complete translation unit; may include "conflux/*.cuh"
    launch_dims launch;
    std::size_t inputs = 0;
    std::size_t outputs = 0;
    // Uses instructions of the architecture-specific target (sm_90a's wgmma): compiled for
    // "<arch>a", whose code runs on that architecture only.
    bool arch_specific = false;
    // Nothing to launch: every output is empty (zero elements).
    bool empty() const { return launch.grid[0] * launch.grid[1] * launch.grid[2] == 0; }
};

} // namespace conflux::cuda
