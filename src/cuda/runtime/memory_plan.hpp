// Places a program's temporary buffers in one arena so that buffers whose lifetimes do not
// overlap share memory. Lifetimes are inclusive step intervals [first, last]: a step that reads
// one buffer and writes another keeps them apart (kernels never work in place).
#pragma once

#include <cstddef>
#include <vector>

namespace conflux::cuda {

struct buffer_lifetime {
    std::size_t bytes = 0;
    std::size_t first = 0; // the step that writes it first
    std::size_t last = 0;  // the last step that reads it (>= first)
};

struct memory_plan {
    std::vector<std::size_t> offsets; // per buffer, in bytes from the arena's start
    std::size_t arena_bytes = 0;      // the peak: what the arena must hold
    std::size_t total_bytes = 0;      // the sum of all buffer sizes (no reuse)
};

// Every offset is a multiple of `alignment` (a power of two). Greedy by size: the largest
// buffers are placed first, each at the lowest offset that no lifetime-overlapping buffer
// already occupies.
memory_plan plan_memory(const std::vector<buffer_lifetime>& buffers, std::size_t alignment = 256);

} // namespace conflux::cuda
