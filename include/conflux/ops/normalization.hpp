// Inference-time normalisations.
#pragma once

#include "conflux/ir/operation.hpp"

namespace conflux::op {

// y = scale * (x - mean) / sqrt(var + epsilon) + bias, per channel (axis 1).
// Inputs: x [N, C, ...], scale [C], bias [C], mean [C], var [C]. As in ONNX, scale/bias and
// mean/var may have their own floating types (pairwise equal); computed in x's compute type.
struct batch_norm {
    float epsilon = 1e-5f;
    std::string name() const { return "batch_normalization"; }
    static batch_norm from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"epsilon", epsilon}}; }
    op_traits traits() const { return {.accumulates_in_f32 = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const batch_norm&) const = default;
};

// Normalises over axes [axis, rank): y = (x - mean) / sqrt(var + epsilon) * scale (+ bias).
// Inputs: x, scale (lens = x.lens[axis:], or numpy-broadcastable to them), optional bias (same).
// scale and bias of x's dtype, or f32 with an f16/bf16 x (what reduced precision makes: the
// parameters keep their f32 values). Statistics and arithmetic in f32 (f64 for f64 inputs); y
// has x's dtype. A negative axis counts from the end.
// Not centred, it is RMS normalisation (ONNX's RMSNormalization, LLaMA's RMSNorm): the mean
// taken as 0, so y = x / sqrt(mean(x^2) + epsilon) * scale (+ bias).
struct layer_norm {
    std::int64_t axis = -1; // normalised (non-negative) by the importer
    float epsilon = 1e-5f;
    bool centered = true;
    std::string name() const { return "layer_normalization"; }
    static layer_norm from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const {
        nlohmann::json a{{"axis", axis}, {"epsilon", epsilon}};
        if (!centered) a["centered"] = false;
        return a;
    }
    op_traits traits() const { return {.accumulates_in_f32 = true, .reads_16bit_input = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const layer_norm&) const = default;
};

} // namespace conflux::op
