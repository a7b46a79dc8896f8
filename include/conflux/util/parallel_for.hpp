// Splits [0, n) into contiguous chunks run on up to hardware_concurrency() threads. The
// reference target uses it for the heavy ops (convolution, dot, pooling) so the test suite uses
// every core CI has. Exceptions from a worker are rethrown on the caller.
#pragma once

#include <cstddef>
#include <functional>

namespace conflux {

// f(begin, end) is called for disjoint ranges covering [0, n). Work below `grain` items runs
// inline on the caller.
void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& f,
                  std::size_t grain = 1);

} // namespace conflux
