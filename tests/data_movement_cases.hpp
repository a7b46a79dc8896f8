// Layout copies and data movement as program builders per dtype, shared by the GPU op tests and
// the host emulation of the generated kernels (tests/unit/cuda_kernel_emulation_test.cpp), so
// both check the same programs.
#pragma once

#include "conflux/ir/module.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/scatter.hpp"
#include "conflux/ops/views.hpp"

#include <functional>
#include <string>
#include <vector>

namespace conflux::test {

struct program_case {
    std::string name;
    std::function<void(module&)> build;
};

inline std::vector<program_case> data_movement_cases(dtype t) {
    const std::string ts(to_string(t));
    auto param = [t](module& m, const std::string& name, dims lens) {
        return m.add_parameter(name, shape{t, std::move(lens)});
    };
    std::vector<program_case> cases;
    // Large enough for the tiled transpose (shared-memory tiles and a block barrier).
    cases.push_back({"transpose copy " + ts, [=](module& m) {
                         auto x = param(m, "x", {4, 33, 65});
                         m.add_return({m.add_instruction(op::transpose{{2, 0, 1}}, {x})});
                     }});
    cases.push_back({"slice negative step " + ts, [=](module& m) {
                         auto x = param(m, "x", {6, 10});
                         m.add_return({m.add_instruction(op::slice{{1}, {8}, {1}, {-2}}, {x})});
                     }});
    cases.push_back({"reshape of transposed " + ts, [=](module& m) {
                         auto x = param(m, "x", {6, 10});
                         auto tr = m.add_instruction(op::transpose{{1, 0}}, {x});
                         m.add_return({m.add_instruction(op::reshape{{5, 12}}, {tr})});
                     }});
    cases.push_back({"concat " + ts, [=](module& m) {
                         auto a = param(m, "a", {2, 3, 4});
                         auto b = param(m, "b", {2, 5, 4});
                         m.add_return({m.add_instruction(op::concat{1}, {a, b})});
                     }});
    for (auto mode : {op::pad_mode::constant, op::pad_mode::reflect, op::pad_mode::edge})
        cases.push_back(
            {"pad " + std::string(op::pad_mode_name(mode)) + " " + ts, [=](module& m) {
                 auto x = param(m, "x", {3, 5});
                 m.add_return({m.add_instruction(op::pad{{1, 2, 2, 1}, 0.5f, mode}, {x})});
             }});
    // Both tests fill integer inputs with 0..3: indices in range here.
    cases.push_back({"gather " + ts, [=](module& m) {
                         auto x = param(m, "x", {5, 6});
                         auto i = m.add_parameter("i", shape{dtype::i64, {2, 3}});
                         m.add_return({m.add_instruction(op::gather{1}, {x, i})});
                     }});
    cases.push_back({"gather_elements " + ts, [=](module& m) {
                         auto x = param(m, "x", {4, 6});
                         auto i = m.add_parameter("i", shape{dtype::i64, {4, 2}});
                         m.add_return({m.add_instruction(op::gather_elements{1}, {x, i})});
                     }});
    // Duplicate indices, so the order of updates matters for every reduction.
    cases.push_back({"gather_nd " + ts, [=](module& m) {
                         auto x = param(m, "x", {4, 5, 6});
                         auto i = m.add_parameter("i", shape{dtype::i64, {3, 2, 2}});
                         m.add_return({m.add_instruction(op::gather_nd{}, {x, i})});
                     }});
    cases.push_back({"gather_nd batch_dims 1 " + ts, [=](module& m) {
                         auto x = param(m, "x", {3, 4, 5});
                         auto i = m.add_parameter("i", shape{dtype::i32, {3, 2, 1}});
                         m.add_return({m.add_instruction(op::gather_nd{1}, {x, i})});
                     }});
    for (auto red :
         {op::scatter_reduction::none, op::scatter_reduction::add, op::scatter_reduction::mul,
          op::scatter_reduction::max, op::scatter_reduction::min}) {
        const std::string rs(op::scatter_reduction_name(red));
        cases.push_back({"scatter_nd " + rs + " of transposed " + ts, [=](module& m) {
                             auto x = param(m, "x", {6, 5, 4});
                             auto tr = m.add_instruction(op::transpose{{2, 1, 0}}, {x});
                             auto i = m.add_parameter("i", shape{dtype::i64, {3, 2, 1}});
                             auto u = param(m, "u", {3, 2, 5, 6});
                             m.add_return({m.add_instruction(op::scatter_nd{red}, {tr, i, u})});
                         }});
        cases.push_back({"scatter_nd elements " + rs + " " + ts, [=](module& m) {
                             auto x = param(m, "x", {4, 5});
                             auto i = m.add_parameter("i", shape{dtype::i32, {7, 2}});
                             auto u = param(m, "u", {7});
                             m.add_return({m.add_instruction(op::scatter_nd{red}, {x, i, u})});
                         }});
        cases.push_back(
            {"scatter_elements " + rs + " " + ts, [=](module& m) {
                 auto x = param(m, "x", {5, 6});
                 auto i = m.add_parameter("i", shape{dtype::i64, {3, 4}});
                 auto u = param(m, "u", {3, 4});
                 m.add_return({m.add_instruction(op::scatter_elements{1, red}, {x, i, u})});
             }});
    }
    return cases;
}

} // namespace conflux::test
