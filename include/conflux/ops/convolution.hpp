// N-D convolution (1-D/2-D/3-D) in ONNX's NCHW form: input [N, C, spatial...], weights
// [K, C/group, kernel...]; output [N, K, out spatial...]. Any input strides (so an NHWC-ordered
// input is just an input with permuted strides). An empty padding/stride/dilation means ONNX's
// default (zeros/ones). Bias is not an input: the importer adds it as a separate add.
//
// channels_last (set by layout_nhwc): input [N, spatial..., C], weights [K, kernel..., C/group]
// (KRSC), output [N, out spatial..., K]. Same arithmetic; only the axis order differs.
#pragma once

#include "conflux/ir/operation.hpp"

namespace conflux::op {

struct convolution {
    std::vector<std::size_t> padding;  // 2*nd values: all begins, then all ends
    std::vector<std::size_t> stride;   // nd values
    std::vector<std::size_t> dilation; // nd values
    std::size_t group = 1;
    bool channels_last = false;

    std::string name() const { return "convolution"; }
    static convolution from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const;
    op_traits traits() const { return {.anchor = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const convolution&) const = default;

private:
    // The ONNX-order computation that channels_last reduces to by permuting views.
    shape nchw_shape(const shape& x, const shape& w) const;
    argument nchw_eval(const shape& out, const argument& x, const argument& w) const;
};

} // namespace conflux::op
