// ONNX Resize: every output element is a weighted sum of a few input elements, separably per
// axis. Along each axis an output position maps to a coordinate in the input
// (coordinate_transformation_mode), and the mode picks the input positions it reads and their
// weights (nearest: one; linear: two; cubic: four; antialias widens linear and cubic filters by
// 1/scale when downsampling). Scales, ROI and output lens are fixed when the op is made (the
// importer folds them), so the taps of every axis are known before evaluation: the reference
// eval and the CUDA generator both read them from axis_taps, which is what keeps them equal.
#pragma once

#include "conflux/ir/operation.hpp"

#include <cstdint>
#include <string_view>

namespace conflux::op {

enum class resize_mode { nearest, linear, cubic };

enum class resize_coordinates {
    half_pixel,
    half_pixel_symmetric,
    pytorch_half_pixel,
    align_corners,
    asymmetric,
    tf_half_pixel_for_nn,
    tf_crop_and_resize,
};

enum class resize_nearest { round_prefer_floor, round_prefer_ceil, floor, ceil };

// Every value of each, for reading them back by name.
inline constexpr resize_mode all_resize_modes[] = {resize_mode::nearest, resize_mode::linear,
                                                   resize_mode::cubic};
inline constexpr resize_coordinates all_resize_coordinates[] = {
    resize_coordinates::half_pixel,         resize_coordinates::half_pixel_symmetric,
    resize_coordinates::pytorch_half_pixel, resize_coordinates::align_corners,
    resize_coordinates::asymmetric,         resize_coordinates::tf_half_pixel_for_nn,
    resize_coordinates::tf_crop_and_resize};
inline constexpr resize_nearest all_resize_nearest[] = {
    resize_nearest::round_prefer_floor, resize_nearest::round_prefer_ceil, resize_nearest::floor,
    resize_nearest::ceil};

// The ONNX spellings ("nearest", "half_pixel", "round_prefer_floor", ...).
std::string_view resize_mode_name(resize_mode m);
std::string_view resize_coordinates_name(resize_coordinates c);
std::string_view resize_nearest_name(resize_nearest n);

// What one axis reads: for output position j, taps input positions index[j * taps + t] (already
// clamped into the input, or 0 with weight 0 when exclude_outside drops them) with weights
// weight[j * taps + t]. outside[j] (tf_crop_and_resize only; empty otherwise) says that the
// position maps outside the input, so every output element there is extrapolation_value.
struct resize_axis_taps {
    std::size_t taps = 1;
    std::vector<std::int64_t> index;
    std::vector<double> weight;
    std::vector<bool> outside;
    // Output position j reads exactly input position j with weight 1: the axis is not resized.
    bool identity = false;
};

struct resize {
    resize_mode mode = resize_mode::nearest;
    resize_coordinates coordinates = resize_coordinates::half_pixel;
    resize_nearest nearest = resize_nearest::round_prefer_floor;
    float cubic_coeff_a = -0.75f;
    bool exclude_outside = false;
    bool antialias = false;
    float extrapolation_value = 0;
    std::vector<double> scales; // one per axis, > 0
    std::vector<double> roi;    // tf_crop_and_resize: starts then ends, 2 per axis; else empty
    dims out_lens;

    std::string name() const { return "resize"; }
    static resize from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const;
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape& out, const std::vector<argument>& in) const;
    bool operator==(const resize&) const = default;

    // The taps of `axis` for an input of length in_len along it (> 0 when out_lens[axis] > 0).
    resize_axis_taps axis_taps(std::size_t axis, std::size_t in_len) const;
};

} // namespace conflux::op
