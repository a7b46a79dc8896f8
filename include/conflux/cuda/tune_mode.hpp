// How the CUDA target chooses perf configs; shared by compile_options and the tuner.
#pragma once

namespace conflux::cuda {

// How compile() picks each gemm's perf config when the problem cache has no usable entry:
// none (the heuristic's first), quick (time the heuristic's best few), exhaustive (time every
// candidate). Timing needs a GPU; without one, none.
enum class tune_mode { none, quick, exhaustive };

} // namespace conflux::cuda
