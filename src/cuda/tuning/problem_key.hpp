// What a tuned perf config is remembered under (docs/ARCHITECTURE.md, "Tuning and the problem
// cache"): the kernel family, the device, the generator's version, the anchor problem and the
// fusion signature. The same fused pattern on the same shapes gives the same key in every run and
// process; a fused and an unfused convolution of one shape get different keys, because the
// fastest config of a kernel depends on its epilogue.
#pragma once

#include "conflux/ir/module.hpp"

#include <string>
#include <vector>

namespace conflux::cuda {

struct gemm_problem;

// Bumped whenever a change to the gemm generator can change which config is fastest or which
// configs are valid: entries of other versions are re-tuned.
// 7: the wgmma family; 8: its warp-specialised persistent form (_ws); 9: _ws producers
// announce stages when their copies land (faster _ws); 10: tiled depthwise configs (_r);
// 11: the loader's copying-thread index only where needed; 12: ping-pong (_pp) candidates;
// 13: TMA producers (_tma) candidates
inline constexpr const char* gemm_generator_version = "gemm-13";
// The same for depthwise problems' keys (the depthwise family among their candidates); before
// it they used gemm_generator_version. dw-14: tensor-core (dw_mma) candidates; dw-15: their
// pipelined form (_p); dw-16: _p blocks walk down columns of tiles and load only the rows a
// tile adds.
inline constexpr const char* depthwise_generator_version = "gemm-13+dw-16";

struct problem_key {
    std::string family;            // "conv2d", "dot", "depthwise_conv2d", ...
    std::string device;            // "sm_90/132": arch and SM count
    std::string generator_version; // gemm_generator_version (depthwise_generator_version)
    std::string problem;           // to_string(gemm_problem): every field that shapes the kernel
    std::string fusion;            // fusion_signature, or "none" for an anchor alone

    // The store's identity of the problem: family, problem and fusion. An entry found under a
    // slot whose device or version differs from this key's is stale.
    std::string slot() const;
    // Everything, printable (--trace-compile, `conflux cache list`).
    std::string text() const;
};

// A canonical hash (16 hex digits) of a fused module as it is bound: every instruction's op,
// attributes and inputs (by position), every parameter's and return's lens, strides and dtype.
// Names do not count.
std::string fusion_signature(const module& m, const std::vector<shape>& inputs,
                             const std::vector<shape>& outputs);

problem_key make_problem_key(const gemm_problem& p, const std::string& fusion,
                             const std::string& arch, unsigned sm_count);

} // namespace conflux::cuda
