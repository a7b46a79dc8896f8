// Steps that share a kernel (equal code is compiled once) each launch it with their own grid: a
// block-per-row reduction's text does not depend on its number of rows, so two of them with
// different row counts are one kernel and two grids. (EfficientNet-B0 at batch 1 lost rows of
// its squeeze-and-excitation means when the second launch took the first's grid.)
#include "conflux/cuda/target.hpp"
#include "conflux/ops/reduce.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace conflux {
namespace cuda_shared_kernel_launch_test {

TEST(CudaSharedKernel, EachStepLaunchesWithItsOwnGrid) {
    program p;
    auto& m = p.main();
    const op::reduce mean{op::reduce_kind::mean, {1}, true, false};
    auto a = m.add_instruction(mean, {m.add_parameter("a", shape{dtype::f16, {96, 56}})});
    auto b = m.add_instruction(mean, {m.add_parameter("b", shape{dtype::f16, {144, 56}})});
    m.add_return({a, b});
    cuda::compile_options o;
    o.arch = "sm_90";
    o.tune = cuda::tune_mode::none;
    o.use_problem_cache = false;
    o.use_kernel_cache = false;
    const auto compiled = cuda::compile(std::move(p), o);
    std::ostringstream text;
    compiled.print(text);
    const std::string s = text.str();
    EXPECT_NE(s.find("1 kernels, 2 launches"), std::string::npos) << s;
    EXPECT_NE(s.find("<<<96x1x1, 64>>>"), std::string::npos) << s;
    EXPECT_NE(s.find("<<<144x1x1, 64>>>"), std::string::npos) << s;
}

} // namespace cuda_shared_kernel_launch_test
} // namespace conflux
