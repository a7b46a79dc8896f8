// Reductions, softmax and arg reductions as program builders, shared by the GPU op tests and
// the host emulation of the generated kernels (tests/unit/cuda_kernel_emulation_test.cpp), so
// both check the same programs.
#pragma once

#include "conflux/ir/module.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "data_movement_cases.hpp"

#include <functional>
#include <string>
#include <vector>

namespace conflux::test {

inline std::vector<program_case> reduction_cases() {
    auto unary = [](const operation& op, dtype t, dims lens) {
        return [=](module& m) {
            auto x = m.add_parameter("x", shape{t, lens});
            m.add_return({m.add_instruction(op, {x})});
        };
    };
    std::vector<program_case> cases;
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16}) {
        const std::string ts(to_string(t));
        for (auto kind :
             {op::reduce_kind::sum, op::reduce_kind::mean, op::reduce_kind::max,
              op::reduce_kind::min, op::reduce_kind::prod, op::reduce_kind::l1, op::reduce_kind::l2,
              op::reduce_kind::log_sum_exp, op::reduce_kind::sum_square})
            for (const std::vector<std::int64_t>& axes :
                 {std::vector<std::int64_t>{2}, {0}, {0, 2}, {}})
                cases.push_back(
                    {"reduce_" + std::string(op::reduce_kind_name(kind)) + " axes " +
                         std::to_string(axes.size()) + " " + ts,
                     unary(op::reduce{kind, axes, axes.size() != 1, false}, t, {4, 6, 300})});
        for (bool log : {false, true})
            for (std::int64_t axis : {1, 2})
                cases.push_back({std::string(log ? "log_softmax" : "softmax") + " axis " +
                                     std::to_string(axis) + " " + ts,
                                 unary(op::softmax{axis, log}, t, {3, 40, 129})});
        for (bool max : {true, false})
            cases.push_back({std::string(max ? "argmax " : "argmin ") + ts,
                             unary(op::arg_reduce{max, 1, true, false}, t, {4, 50, 3})});
        // Many rows of at most 1024 contiguous elements: a warp per row.
        cases.push_back(
            {"softmax warp per row " + ts, unary(op::softmax{2, false}, t, {4, 96, 200})});
        cases.push_back(
            {"log_softmax warp per row " + ts, unary(op::softmax{1, true}, t, {300, 1000})});
        cases.push_back(
            {"reduce_sum warp per row " + ts,
             unary(op::reduce{op::reduce_kind::sum, {1}, false, false}, t, {300, 130})});
        cases.push_back({"argmax warp per row " + ts,
                         unary(op::arg_reduce{true, 1, false, false}, t, {512, 77})});
        // Squeeze-and-excitation's pool of channels-last data: split_reduction makes it two
        // reductions (width, then height), compared with the whole reduction's reference.
        for (auto kind : {op::reduce_kind::mean, op::reduce_kind::max, op::reduce_kind::sum})
            cases.push_back(
                {"reduce_" + std::string(op::reduce_kind_name(kind)) +
                     " spatial of channels-last " + ts,
                 [=](module& m) {
                     auto x = m.add_parameter("x", shape{t, {8, 56, 56, 24}});
                     auto nchw = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {x});
                     m.add_return({m.add_instruction(
                         op::reduce{kind, {2, 3}, kind != op::reduce_kind::sum, false}, {nchw})});
                 }});
    }
    // One kernel (equal code), two grids: each launch must cover its own rows.
    cases.push_back(
        {"two block-per-row means sharing a kernel", [](module& m) {
             const op::reduce mean{op::reduce_kind::mean, {1}, true, false};
             auto a = m.add_instruction(mean, {m.add_parameter("a", shape{dtype::f16, {96, 56}})});
             auto b = m.add_instruction(mean, {m.add_parameter("b", shape{dtype::f16, {144, 56}})});
             m.add_return({a, b});
         }});
    cases.push_back({"reduce_sum i64", unary(op::reduce{op::reduce_kind::sum, {1}, true, false},
                                             dtype::i64, {4, 100})});
    return cases;
}

} // namespace conflux::test
