// Normalisation programs per floating type, shared by the GPU op tests and the host emulation of
// the generated kernels (tests/unit/cuda_kernel_emulation_test.cpp), so both check the same
// programs.
#pragma once

#include "conflux/ir/module.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/views.hpp"
#include "data_movement_cases.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace conflux::test {

inline std::vector<program_case> normalisation_cases(dtype t) {
    const std::string ts(to_string(t));
    auto param = [](module& m, const std::string& name, dtype type, dims lens) {
        return m.add_parameter(name, shape{type, std::move(lens)});
    };
    auto case_of = [](std::string name, std::function<void(module&)> build) {
        return program_case{std::move(name), std::move(build)};
    };
    std::vector<program_case> cases;
    cases.push_back(case_of("layer_norm with bias " + ts, [=](module& m) {
        auto x = param(m, "x", t, {4, 7, 96});
        auto s = param(m, "s", t, {96});
        auto b = param(m, "b", t, {96});
        m.add_return({m.add_instruction(op::layer_norm{2, 1e-5f}, {x, s, b})});
    }));
    cases.push_back(case_of("layer_norm warp per row " + ts, [=](module& m) {
        auto x = param(m, "x", t, {4, 70, 768});
        auto s = param(m, "s", t, {768});
        auto b = param(m, "b", t, {768});
        m.add_return({m.add_instruction(op::layer_norm{2, 1e-5f}, {x, s, b})});
    }));
    // The dense-row kernel (layer_norm.cuh): odd lengths one element at a time, long rows
    // a block each, no bias, ConvNeXt's channels-last norm, and rows of a slice (strides a
    // multiple of the vector, the start not aligned: the kernel's one-element path).
    for (const auto& [label, shape_lens] :
         std::vector<std::pair<std::string, dims>>{{"odd rows", {3, 50, 77}},
                                                   {"rows of 4096", {2, 9, 4096}},
                                                   {"rows of 20000", {3, 20000}},
                                                   {"channels last", {2, 7, 7, 96}}}) {
        // A copy: Clang 14 cannot capture a structured binding.
        const dims lens = shape_lens;
        cases.push_back(case_of("layer_norm " + label + " " + ts, [=](module& m) {
            const std::size_t c = lens.back();
            auto x = param(m, "x", t, lens);
            auto s = param(m, "s", t, {c});
            auto b = param(m, "b", t, {c});
            m.add_return({m.add_instruction(op::layer_norm{std::int64_t(lens.size()) - 1, 1e-5f},
                                            {x, s, b})});
        }));
    }
    if (t != dtype::f32)
        cases.push_back(case_of("layer_norm f32 scale and bias " + ts, [=](module& m) {
            auto x = param(m, "x", t, {4, 70, 768});
            auto s = param(m, "s", dtype::f32, {768});
            auto b = param(m, "b", dtype::f32, {768});
            m.add_return({m.add_instruction(op::layer_norm{2, 1e-5f}, {x, s, b})});
        }));
    cases.push_back(case_of("layer_norm no bias " + ts, [=](module& m) {
        auto x = param(m, "x", t, {5, 33, 384});
        auto s = param(m, "s", t, {384});
        m.add_return({m.add_instruction(op::layer_norm{2, 1e-6f}, {x, s})});
    }));
    // RMS normalisation (not centred): LLaMA's rows of 512 (a warp per row), long rows (a
    // block), odd rows (the general kernel's path for rows that are not a vector multiple),
    // and a strided input (the general kernel).
    for (const auto& [label, shape_lens] : std::vector<std::pair<std::string, dims>>{
             {"llama", {4, 33, 512}}, {"rows of 4096", {2, 5, 4096}}, {"odd rows", {3, 17, 77}}}) {
        const dims lens = shape_lens;
        cases.push_back(case_of("rms_norm " + label + " " + ts, [=](module& m) {
            auto x = param(m, "x", t, lens);
            auto s = param(m, "s", t, {lens.back()});
            m.add_return({m.add_instruction(
                op::layer_norm{std::int64_t(lens.size()) - 1, 1e-6f, false}, {x, s})});
        }));
    }
    cases.push_back(case_of("rms_norm of a transposed input " + ts, [=](module& m) {
        auto x = param(m, "x", t, {6, 64, 5});
        auto v = m.add_instruction(op::transpose{{0, 2, 1}}, {x});
        auto s = param(m, "s", t, {64});
        m.add_return({m.add_instruction(op::layer_norm{2, 1e-5f, false}, {v, s})});
    }));
    cases.push_back(case_of("layer_norm of a slice " + ts, [=](module& m) {
        auto x = param(m, "x", t, {4, 70, 776});
        auto v = m.add_instruction(op::slice{{2}, {1}, {769}, {1}}, {x});
        auto s = param(m, "s", t, {768});
        auto b = param(m, "b", t, {768});
        m.add_return({m.add_instruction(op::layer_norm{2, 1e-5f}, {v, s, b})});
    }));
    cases.push_back(case_of("batch_norm " + ts, [=](module& m) {
        auto x = param(m, "x", t, {2, 5, 6, 6});
        std::vector<instruction_ref> in{x};
        for (const char* n : {"scale", "bias", "mean", "var"})
            in.push_back(param(m, n, t, {5}));
        auto abs_var = m.add_instruction(op::make_elementwise(op::elementwise_kind::abs), {in[4]});
        in[4] = abs_var;
        m.add_return({m.add_instruction(op::batch_norm{1e-5f}, in)});
    }));
    return cases;
}

} // namespace conflux::test
