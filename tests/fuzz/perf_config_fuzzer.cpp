// The perf-config parser (what --perf-config and the problem cache hand the generator) on
// arbitrary text. A config that parses must print back as the same text (the grammar admits one
// spelling per config), and valid() and the kernel generator must cope with whatever numbers it
// holds: on a few fixed problems, a config valid() accepts must generate a kernel.
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "cuda/codegen/gemm/depthwise_kernel.hpp"
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

// A channels-last convolution of x by w (KRSC) with these strides and padding on both axes.
fixed_problem conv(dtype t, dims x_lens, dims w_lens, std::size_t group, std::size_t stride,
                   std::size_t pad) {
    op::convolution c;
    c.channels_last = true;
    c.group = group;
    c.stride = {stride, stride};
    c.dilation = {1, 1};
    c.padding = {pad, pad, pad, pad};
    const operation op = c;
    const shape x{t, std::move(x_lens)}, w{t, std::move(w_lens)};
    const shape y = op.compute_shape({x, w});
    return {*make_gemm_problem(op, {x, w}, y), y};
}

const std::vector<fixed_problem>& problems() {
    static const std::vector<fixed_problem> all{
        dot(dtype::f16, 128, 96, 64), dot(dtype::f32, 33, 17, 70), dot(dtype::f64, 8, 8, 8),
        dot(dtype::i8, 64, 64, 48), conv(dtype::f16, {2, 9, 9, 16}, {32, 3, 3, 16}, 1, 2, 1),
        // 7x7 depthwise: the depthwise family's configs
        // (direct, tiled and tensor cores) take it.
        conv(dtype::f16, {2, 11, 19, 24}, {24, 7, 7, 1}, 24, 1, 3)};
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
        // The depthwise kernels take their epilogue over all channels as one row.
        const gemm_epilogue e = default_epilogue(
            config->is_depthwise() ? depthwise_epilogue_problem(p.problem) : p.problem, p.output);
        const kernel_source k = generate_gemm_kernel(p.problem, *config, e, "cx_fuzz");
        // A depthwise block may launch fewer threads than its config's (whole channel vectors
        // times whole strips); the GEMM kernels launch exactly theirs.
        const unsigned block = k.launch.block[0];
        const bool threads_fit = config->is_depthwise() ? block > 0 && block <= config->threads()
                                                        : block == config->threads();
        if (k.empty() || !threads_fit)
            fuzz::finding("'" + std::string(text) + "' is valid on " + to_string(p.problem) +
                          " but generates no kernel of its threads");
        if (config->split_k > 1)
            (void)generate_split_k_finish_kernel(p.problem, *config, e, "cx_fuzz_finish");
    }
    return 0;
}
