// What the attention op's fused kernel (attention_codegen.cpp, kernels/attention.cuh) takes:
// f16 or bf16 q, kt, v (and a bias of any float type), head dims up to 128, any sequence
// lengths and strides; and its configs (warps per block, 16-row tiles per warp, keys per tile,
// mma.sync or Hopper's wgmma).
#pragma once

#include "conflux/ir/shape.hpp"

#include <optional>
#include <string>
#include <vector>

namespace conflux::cuda {

// Why the kernel cannot run an attention op with these input shapes; empty when it can.
std::string attention_kernel_obstacle(const std::vector<shape>& inputs);

// A block of `warps` warps, each owning `row_tiles` tiles of 16 query rows, streaming keys and
// values `key_tile` at a time; with wgmma, on Hopper's warpgroup MMA (attention_wgmma.cuh:
// whole warpgroups, one row tile a warp, head dims 64 or 128). Named "w4_m2_n64",
// "w8_m1_n64_wgmma".
struct attention_config {
    int warps = 4;
    int row_tiles = 1;
    int key_tile = 64;
    bool wgmma = false;
    // wgmma only: the softmax of one key tile overlaps the previous tile's P . V
    // (attention_wgmma.cuh).
    bool pipelined = false;
    int rows() const { return warps * 16 * row_tiles; }
    std::string name() const;
    bool operator==(const attention_config&) const = default;
};

// Every config the kernel is written for (the every-config harness runs them all).
std::vector<attention_config> attention_configs();
std::optional<attention_config> parse_attention_config(const std::string& name);
// Why `c` cannot run head dims d and dv on a target with or without wgmma (its shared memory,
// its registers would spill, its head dims or architecture); empty when it can.
std::string attention_config_obstacle(const attention_config& c, std::size_t d, std::size_t dv,
                                      bool has_wgmma = true);
// The config for `batches` entries (batch x heads) of these lengths when none is forced.
attention_config choose_attention_config(std::size_t batches, std::size_t sq, std::size_t sk,
                                         std::size_t d, std::size_t dv, bool has_wgmma = false);

} // namespace conflux::cuda
