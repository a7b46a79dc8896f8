// NVRTC compiles generated code without a GPU: these run in CI.
#include "conflux/util/errors.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"

#include <gtest/gtest.h>

namespace conflux::cuda {
namespace cuda_nvrtc_test {

TEST(Nvrtc, CompilesAKernelUsingTheEmbeddedHeadersForSm90) {
    kernel_source k;
    k.entry = "cx_test_convert";
    k.code = R"(#include "conflux/types.cuh"
extern "C" __global__ void cx_test_convert(const cx_f16* in0, cx_bf16* out0) {
    cx_store(out0 + threadIdx.x, cx_load(in0 + threadIdx.x) * 2.0f);
})";
    const compiled_kernel c = nvrtc_compile(k, "sm_90");
    EXPECT_EQ(c.entry, "cx_test_convert");
    ASSERT_GT(c.cubin.size(), 4u);
    EXPECT_EQ(c.cubin[0], 0x7f); // an ELF file
    EXPECT_EQ(std::string(c.cubin.data() + 1, 3), "ELF");
}

TEST(Nvrtc, ACompileErrorIsAnInternalErrorNamingTheKernelWithTheLog) {
    kernel_source k;
    k.entry = "cx_broken";
    k.code = "extern \"C\" __global__ void cx_broken() { undeclared_thing(); }";
    try {
        nvrtc_compile(k, "sm_90");
        FAIL() << "expected an error";
    } catch (const internal_error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("cx_broken"), std::string::npos) << msg;
        EXPECT_NE(msg.find("undeclared_thing"), std::string::npos) << msg;
    }
}

TEST(Nvrtc, KnowsWhichArchitecturesItSupports) {
    EXPECT_TRUE(nvrtc_supports_arch("sm_90"));
    EXPECT_TRUE(nvrtc_supports_arch("sm_80"));
    EXPECT_FALSE(nvrtc_supports_arch("sm_9"));
    EXPECT_FALSE(nvrtc_supports_arch("compute_90"));
    EXPECT_FALSE(nvrtc_supports_arch("sm_x0"));
    EXPECT_FALSE(nvrtc_version().empty());
}

} // namespace cuda_nvrtc_test
} // namespace conflux::cuda
