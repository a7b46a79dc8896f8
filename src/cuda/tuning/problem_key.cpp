#include "cuda/tuning/problem_key.hpp"

#include "conflux/util/errors.hpp"
#include "conflux/util/fnv1a.hpp"
#include "cuda/codegen/gemm/depthwise_kernel.hpp"
#include "cuda/codegen/gemm/gemm_problem.hpp"

#include <map>

namespace conflux::cuda {

namespace {

std::string describe(const shape& s) {
    return conflux::to_string(s) + "{" + conflux::to_string(s.strides()) + "}";
}

} // namespace

std::string problem_key::slot() const {
    return family + " | " + problem + " | fusion " + fusion;
}

std::string problem_key::text() const {
    return family + " | " + device + " | " + generator_version + " | " + problem + " | fusion " +
           fusion;
}

std::string fusion_signature(const module& m, const std::vector<shape>& inputs,
                             const std::vector<shape>& outputs) {
    std::map<const instruction*, std::size_t> position;
    std::string text;
    std::size_t next_param = 0;
    for (const instruction& ins : m) {
        position[&ins] = position.size();
        if (ins.is_param()) {
            CONFLUX_ASSERT(next_param < inputs.size(), "fusion_signature: too few inputs");
            text += "param " + describe(inputs[next_param++]) + "\n";
            continue;
        }
        text += ins.get_operator().name() + " " +
                ins.get_operator().attributes().dump(-1, ' ', false,
                                                     nlohmann::json::error_handler_t::replace) +
                " (";
        for (instruction_ref in : ins.inputs())
            text += std::to_string(position.at(in)) + ",";
        text += ")";
        if (ins.is_literal()) text += " literal " + describe(ins.get_shape());
        text += "\n";
    }
    for (const shape& s : outputs)
        text += "output " + describe(s) + "\n";
    return hex_64(fnv1a_64(text));
}

problem_key make_problem_key(const gemm_problem& p, const std::string& fusion,
                             const std::string& arch, unsigned sm_count) {
    problem_key k;
    k.problem = to_string(p);
    k.family = k.problem.substr(0, k.problem.find(' '));
    // Depthwise problems have a kernel family of their own besides implicit GEMM.
    if (is_depthwise(p)) k.family = "depthwise_" + k.family;
    k.device = arch + "/" + std::to_string(sm_count);
    k.generator_version = is_depthwise(p) ? depthwise_generator_version : gemm_generator_version;
    k.fusion = fusion;
    return k;
}

} // namespace conflux::cuda
