// Resize programs, shared by the GPU op tests and the host emulation of the generated kernels
// (tests/unit/cuda_kernel_emulation_test.cpp), so both check the same programs.
#pragma once

#include "conflux/ir/module.hpp"
#include "conflux/ops/resize.hpp"
#include "conflux/ops/views.hpp"
#include "data_movement_cases.hpp"

#include <string>
#include <vector>

namespace conflux::test {

inline std::vector<program_case> resize_cases() {
    auto make = [](op::resize_mode mode, op::resize_coordinates c, dims out) {
        op::resize r;
        r.mode = mode;
        r.coordinates = c;
        r.scales = {1, 1, double(out[2]) / 4, double(out[3]) / 6};
        r.out_lens = std::move(out);
        return r;
    };
    using enum op::resize_mode;
    std::vector<program_case> cases;
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16})
        for (auto mode : {nearest, linear, cubic}) {
            const std::string label = "resize " + std::string(op::resize_mode_name(mode)) + " " +
                                      std::string(to_string(t));
            cases.push_back(
                {label, [=](module& m) {
                     auto x = m.add_parameter("x", shape{t, {2, 4, 6, 3}});
                     auto nchw = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {x});
                     auto r = make(mode, op::resize_coordinates::half_pixel, {2, 3, 7, 4});
                     m.add_return({m.add_instruction(r, {nchw})});
                 }});
            cases.push_back(
                {label + " antialias", [=](module& m) {
                     auto x = m.add_parameter("x", shape{t, {2, 3, 4, 6}});
                     auto r = make(mode, op::resize_coordinates::pytorch_half_pixel, {2, 3, 2, 2});
                     r.antialias = true;
                     m.add_return({m.add_instruction(r, {x})});
                 }});
        }
    cases.push_back(
        {"resize crop i32", [=](module& m) {
             auto x = m.add_parameter("x", shape{dtype::i32, {1, 2, 4, 6}});
             auto r = make(nearest, op::resize_coordinates::tf_crop_and_resize, {1, 2, 5, 5});
             r.roi = {0, 0, 0.2, -0.3, 1, 1, 1.3, 0.8};
             r.extrapolation_value = -7;
             m.add_return({m.add_instruction(r, {x})});
         }});
    return cases;
}

} // namespace conflux::test
