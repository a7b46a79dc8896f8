// A generated kernel is named by what it is and what it contains, so that equal kernels get
// equal names within a program and across compiles (the kernel cache hits, listings are stable):
// "cx_<kind>_<12 hex digits of the FNV-1a hash of its text>", the text hashed with a fixed
// placeholder where the name goes.
#pragma once

#include "cuda/jit/kernel_source.hpp"

#include <functional>
#include <string>

namespace conflux::cuda {

// Calls `write` with the entry name to give the kernel; returns the kernel it wrote, named by
// its kind ("gemm", "epilogue", an op's name, ...) and content.
kernel_source
write_named_kernel(const std::string& kind,
                   const std::function<kernel_source(const std::string& entry)>& write);

} // namespace conflux::cuda
