#include "cuda/codegen/generator.hpp"

namespace conflux::cuda {

void add_pooling_generators() {}

} // namespace conflux::cuda
