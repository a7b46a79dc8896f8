// All of a model's kernels through NVRTC at once: identical sources compiled once, the rest in
// parallel, cubins taken from and put into the disk cache.
#pragma once

#include "cuda/jit/kernel_source.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace conflux::cuda {

class kernel_cache;

struct compile_kernels_options {
    std::string arch = "sm_90";
    kernel_cache* cache = nullptr; // none: always compile
    unsigned threads = 0;          // 0: std::thread::hardware_concurrency()
    // Called after each distinct kernel is done (compiled or found in the cache), from worker
    // threads but never two calls at once; done counts up to total, the number of distinct
    // kernels.
    std::function<void(std::size_t done, std::size_t total)> progress;
};

// One compiled_kernel per source, in the same order. Sources with the same entry and code are
// compiled once and share the cubin; a cache hit has an empty log. When kernels fail, the error
// of the first failing one in input order is rethrown here (after every worker has stopped),
// naming that kernel; kernels not yet started when a failure occurs are skipped.
std::vector<compiled_kernel> compile_kernels(const std::vector<kernel_source>& sources,
                                             const compile_kernels_options& options);

} // namespace conflux::cuda
