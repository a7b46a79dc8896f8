// Compiling generated kernels in the unit tests: NVRTC for sm_90, no GPU needed.
#pragma once

#include "cuda/jit/kernel_source.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace conflux::cuda {

// One NVRTC run for many kernels (each generated file is a complete translation unit with its
// own names, so they concatenate); on failure each is compiled alone to name the culprit.
inline void expect_compiles(const std::vector<kernel_source>& kernels) {
    ASSERT_FALSE(kernels.empty());
    kernel_source all;
    all.entry = kernels.front().entry + "_and_others";
    for (const auto& k : kernels)
        all.code += k.code + "\n";
    try {
        const compiled_kernel c = nvrtc_compile(all, "sm_90");
        EXPECT_GT(c.cubin.size(), 4u);
        EXPECT_EQ(c.log, "") << "generated code should compile without warnings";
    } catch (const internal_error&) {
        for (const auto& k : kernels) {
            try {
                nvrtc_compile(k, "sm_90");
            } catch (const internal_error& e) {
                ADD_FAILURE() << e.what() << "\n---- generated code ----\n" << k.code;
                return;
            }
        }
        ADD_FAILURE() << "the kernels compile one by one but not together";
    }
}

} // namespace conflux::cuda
