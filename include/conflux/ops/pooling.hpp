// Max / average pooling over the spatial axes of [N, C, spatial...]. Global pooling is pooling
// whose window is the whole spatial extent (the importer fills `lengths`). An empty
// stride/padding/dilation means ONNX's default. ceil_mode follows ONNX: a last window that would
// start inside the end padding is dropped; with count_include_pad the divisor counts the taps
// inside the explicitly padded extent (never those past it in ceil mode).
//
// channels_last (set by layout_nhwc): input and output are [N, spatial..., C]; the same windows
// over the same axes, only the axis order differs (as for convolution).
#pragma once

#include "conflux/ir/operation.hpp"

namespace conflux::op {

enum class pooling_mode { max, average };

struct pooling {
    pooling_mode mode = pooling_mode::max;
    std::vector<std::size_t> lengths;  // window, nd values
    std::vector<std::size_t> stride;   // nd values
    std::vector<std::size_t> padding;  // 2*nd: begins then ends
    std::vector<std::size_t> dilation; // nd values
    bool ceil_mode = false;
    bool count_include_pad = false; // average only
    bool channels_last = false;

    std::string name() const { return mode == pooling_mode::max ? "max_pool" : "average_pool"; }
    static pooling from_attributes(pooling_mode mode, const nlohmann::json& a);
    nlohmann::json attributes() const;
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const pooling&) const = default;

private:
    // The ONNX-order computation that channels_last reduces to by permuting views.
    shape nchw_shape(const shape& x) const;
    argument nchw_eval(const shape& out, const argument& x) const;
};

} // namespace conflux::op
