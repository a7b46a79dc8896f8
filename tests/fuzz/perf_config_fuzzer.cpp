// The perf-config parser (what --perf-config and the problem cache hand the generator) on
// arbitrary text. A config that parses must print back as the same text (the grammar admits one
// spelling per config), and valid() and the kernel generator must cope with whatever numbers it
// holds: on a few fixed problems, a config valid() accepts must generate a kernel.
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "cuda/codegen/gemm/gemm_kernel.hpp"
#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/codegen/gemm/perf_config.hpp"
#include "fuzz_support.hpp"

#include <vector>

namespace {

using namespace conflux;
using namespace conflux::cuda;

struct fixed_problem {
    gemm_problem problem;
    shape output;
};

fixed_problem dot(dtype t, std::size_t m, std::size_t n, std::size_t k) {
    const operation op = op::dot{};
    const shape a{t, {m, k}}, b{t, {k, n}};
    const shape out = op.compute_shape({a, b});
    return {*make_gemm_problem(op, {a, b}, out), out};
}

fixed_problem conv(dtype t) {
    op::convolution c;
    c.channels_last = true;
    c.stride = {2, 2};
    c.dilation = {1, 1};
    c.padding = {1, 1, 1, 1};
    const operation op = c;
    const shape x{t, {2, 9, 9, 16}}, w{t, {32, 3, 3, 16}};
    const shape y = op.compute_shape({x, w});
    return {*make_gemm_problem(op, {x, w}, y), y};
}

const std::vector<fixed_problem>& problems() {
    static const std::vector<fixed_problem> all{
        dot(dtype::f16, 128, 96, 64), dot(dtype::f32, 33, 17, 70), dot(dtype::f64, 8, 8, 8),
        dot(dtype::i8, 64, 64, 48), conv(dtype::f16)};
    return all;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text = fuzz::as_text(data, size);
    const auto config = parse_perf_config(text);
    if (!config) return 0;
    if (to_string(*config) != text)
        fuzz::finding("perf config '" + std::string(text) + "' prints as '" + to_string(*config) +
                      "'");
    for (const auto& p : problems()) {
        std::string why;
        if (!valid(*config, p.problem, &why)) {
            if (why.empty())
                fuzz::finding("valid() gives no reason for '" + std::string(text) + "'");
            continue;
        }
        const gemm_epilogue e = default_epilogue(p.problem, p.output);
        const kernel_source k = generate_gemm_kernel(p.problem, *config, e, "cx_fuzz");
        if (k.empty() || k.launch.block[0] != config->threads())
            fuzz::finding("'" + std::string(text) + "' is valid on " + to_string(p.problem) +
                          " but generates no kernel of its threads");
        if (config->split_k > 1)
            (void)generate_split_k_finish_kernel(p.problem, *config, e, "cx_fuzz_finish");
    }
    return 0;
}
