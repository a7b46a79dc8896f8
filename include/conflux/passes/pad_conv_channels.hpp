// Convolutions over a few input channels (an image model's stem: 3 colours) read their input
// one element at a time: a pixel's channels are 6 bytes of f16, so no vector load fits a run
// of them, and when the input is the graph's NCHW tensor seen channels-last, consecutive
// channels are a whole image plane apart. Such a convolution is given its input as a
// channels-last copy padded with zero channels to the next multiple of 8 bytes (3 -> 4 in f16
// and f32), and its weights padded with zeros to match, so each pixel's channels are one
// aligned vector. The padded channels multiply zeros: the result is unchanged.
#pragma once

#include "conflux/ir/module.hpp"

#include <cstddef>

namespace conflux {

struct pad_conv_channels {
    // Inputs smaller than this are left alone: the copy is one more launch (a few microseconds)
    // and a small convolution waits on its few tiles' latency more than on its loads. 1 MiB
    // keeps a batch-1 ImageNet stem (294 KiB in f16) as it is and pads batch 4 and up; a
    // guess until the stem is timed both ways.
    std::size_t min_input_bytes = std::size_t(1) << 20;
    std::string name() const { return "pad_conv_channels"; }
    void apply(module& m) const;
};

} // namespace conflux
