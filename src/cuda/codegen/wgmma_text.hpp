// The text of one wgmma.mma_async instruction as a device function (kernels/wgmma.cuh has the
// descriptors and fences), for the kernel families that multiply with it: the GEMM's _wgmma
// configs and the attention kernel's.
#pragma once

#include "conflux/ir/dtype.hpp"

#include <string>

namespace conflux::cuda {

// Where the instruction's A operand comes from: a shared-memory descriptor (K-major, or
// M-major when transposed), or four registers per thread holding the 64x16 tile in mma.sync's
// A-fragment layout (warp q of the group: rows 16q..16q+15).
enum class wgmma_a { shared, shared_transposed, registers };

// `void name(float (&d)[n / 2], A a, unsigned long long b)` computing d += A . B for an m64 x
// n x k16 tile of f16 or bf16 (f32 accumulators), A as `a_from` says (unsigned long long for
// a descriptor, const unsigned (&)[4] for registers); B transposed (N-major) when trans_b.
std::string wgmma_function(const std::string& name, unsigned n, dtype t, wgmma_a a_from,
                           bool trans_b);

} // namespace conflux::cuda
