#include "cuda/codegen/generator.hpp"

namespace conflux::cuda {

void add_normalization_generators() {}

} // namespace conflux::cuda
