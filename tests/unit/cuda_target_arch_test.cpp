// The CUDA target's architecture choice: the wgmma kernels only for sm_90 (their sm_90a code
// runs on compute capability 9.0 alone), and --arch sm_90a taken as sm_90. No GPU needed.
#include "conflux/cuda/target.hpp"
#include "conflux/ops/dot.hpp"

#include <gtest/gtest.h>

#include <string>

namespace conflux::cuda {
namespace cuda_target_arch_test {

compiled_program compile_product(const std::string& arch) {
    program p;
    module& m = p.main();
    auto a = m.add_parameter("a", shape{dtype::f16, {256, 128}});
    auto b = m.add_parameter("b", shape{dtype::f16, {128, 192}});
    m.add_return({m.add_instruction(op::dot{}, {a, b})});
    compile_options o;
    o.arch = arch;
    o.tune = tune_mode::none;
    o.use_problem_cache = false;
    o.use_kernel_cache = false;
    return compile(std::move(p), o);
}

bool runs_wgmma(const compiled_program& c) {
    for (const auto& line : c.trace())
        if (line.find("_wgmma") != std::string::npos) return true;
    return false;
}

TEST(CudaTargetArch, WgmmaOnlyForHopper) {
    const auto hopper = compile_product("sm_90");
    EXPECT_EQ(hopper.stats().arch, "sm_90");
    EXPECT_TRUE(runs_wgmma(hopper));
    const auto ampere = compile_product("sm_80");
    EXPECT_EQ(ampere.stats().arch, "sm_80");
    EXPECT_FALSE(runs_wgmma(ampere));
}

TEST(CudaTargetArch, ArchSpecificNameIsTheSameDevice) {
    const auto c = compile_product("sm_90a");
    EXPECT_EQ(c.stats().arch, "sm_90"); // what the device reports, so the program loads
    EXPECT_TRUE(runs_wgmma(c));
}

} // namespace cuda_target_arch_test
} // namespace conflux::cuda
