// The spatial attributes that Conv, the poolings and ConvTranspose read alike (strides,
// dilations, pads, the kernel of the weights) and the per-channel bias both convolutions add.
// Each helper fails naming the node and the attribute.
#pragma once

#include "onnx/node_context.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace conflux::onnx {

// The number of spatial axes of X [N, C, spatial...]; fails below rank 3.
std::size_t spatial_rank(node_context& c, const shape& x);
dims spatial_lens(const shape& x);

// An attribute of nd positive values (strides, dilations), all 1 when absent.
std::vector<std::size_t> positive_ints(node_context& c, std::string_view name, std::size_t nd);

// The 'group' attribute, positive, 1 when absent.
std::size_t group_count(node_context& c);

// The 'pads' attribute: 2*nd values (all begins, then all ends), all 0 when absent. The sign is
// left to the caller: Conv refuses negative pads, ConvTranspose crops with them.
std::vector<std::int64_t> explicit_pads(node_context& c, std::size_t nd);

// The kernel of weights [*, *, kernel...], which must have the rank of X; a 'kernel_shape'
// attribute, when present, must agree with it.
dims weight_kernel(node_context& c, const shape& x, const shape& w);

// y [N, K, spatial...] plus the optional input 2, a bias [K] broadcast along the channel axis.
instruction_ref add_channel_bias(node_context& c, instruction_ref y);

} // namespace conflux::onnx
