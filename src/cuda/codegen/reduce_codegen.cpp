#include "cuda/codegen/generator.hpp"

namespace conflux::cuda {

void add_reduce_generators() {}

} // namespace conflux::cuda
