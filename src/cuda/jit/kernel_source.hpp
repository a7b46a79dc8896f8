// What every kernel generator produces: CUDA C++ text plus how to launch it. Shapes are static,
// so lens and strides are compiled into the text and a kernel takes only pointers:
//
//   extern "C" __global__ void <entry>(const In0* in0, ..., Out0* out0, ...)
//
// one pointer per input, then one per output, each typed by its dtype's storage type and pointing
// at element 0 of the operand's view (offsets are applied by the caller). Inputs are read and
// outputs written through the lens and strides the generator was given. A kernel that loads
// through the Hopper tensor-memory accelerator (TMA) takes, after the pointers, one tensor map
// per entry of `tensor_maps` (const __grid_constant__ cx_tensor_map, 128 bytes): a map names
// its memory's address, so whoever binds the pointers encodes the maps from them
// (runtime/tensor_maps.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace conflux::cuda {

struct launch_dims {
    std::array<unsigned, 3> grid{1, 1, 1};
    std::array<unsigned, 3> block{1, 1, 1};
    unsigned shared_bytes = 0; // dynamic shared memory
};

// A tiled tensor map over one of the kernel's pointer arguments (cuTensorMapEncodeTiled's
// arguments, less the address): dims[0] is the contiguous axis; strides are in bytes for
// dims 1..rank-1; box is the tile one load copies into shared memory, swizzled in
// swizzle_bytes-wide rows (32, 64 or 128; the wgmma layout, kernels/wgmma.cuh).
struct tensor_map_spec {
    std::size_t argument = 0; // index of the pointer parameter it maps
    unsigned element_bytes = 2;
    bool bfloat16 = false; // else float16 (TMA copies bytes; the type is for its checks)
    unsigned rank = 2;
    std::array<unsigned long long, 5> dims{};
    std::array<unsigned long long, 4> strides{};
    std::array<unsigned, 5> box{};
    unsigned swizzle_bytes = 128;
    friend bool operator==(const tensor_map_spec&, const tensor_map_spec&) = default;
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
    // TMA tensor maps the kernel takes after its pointers (empty for every other kernel).
    std::vector<tensor_map_spec> tensor_maps;
    // Nothing to launch: every output is empty (zero elements).
    bool empty() const { return launch.grid[0] * launch.grid[1] * launch.grid[2] == 0; }
};

} // namespace conflux::cuda
