#include "cuda/codegen/generator.hpp"

namespace conflux::cuda {

void add_direct_gemm_generators() {}

} // namespace conflux::cuda
