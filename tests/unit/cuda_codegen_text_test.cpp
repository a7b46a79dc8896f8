// The text pieces every CUDA generator shares (codegen_text.hpp): integer literals at their edge
// values, the include prelude, the kernel signature and the gemm store formats.
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/gemm/gemm_codegen.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>

namespace conflux::cuda {
namespace cuda_codegen_text_test {

TEST(CudaCodegenText, IntegerLiteralIsAnIntWhereItFits) {
    EXPECT_EQ(text::integer_literal(0LL), "0");
    EXPECT_EQ(text::integer_literal(-7LL), "-7");
    EXPECT_EQ(text::integer_literal(2147483647LL), "2147483647");
    EXPECT_EQ(text::integer_literal(-2147483648LL), "-2147483648");
    EXPECT_EQ(text::integer_literal(2147483648LL), "2147483648LL");
    EXPECT_EQ(text::integer_literal(-2147483649LL), "-2147483649LL");
    EXPECT_EQ(text::integer_literal(LLONG_MAX), "9223372036854775807LL");
    EXPECT_EQ(text::integer_literal(LLONG_MIN), "(-9223372036854775807LL - 1)");
    EXPECT_EQ(text::integer_literal(std::size_t{4096}), "4096");
    EXPECT_EQ(text::integer_literal(std::size_t{1} << 40), "1099511627776LL");
    EXPECT_THROW(text::integer_literal(std::size_t(LLONG_MAX) + 1), internal_error);
}

TEST(CudaCodegenText, LongLongLiteralIsAlwaysSuffixed) {
    EXPECT_EQ(text::long_long_literal(0LL), "0LL");
    EXPECT_EQ(text::long_long_literal(-1LL), "-1LL");
    EXPECT_EQ(text::long_long_literal(LLONG_MAX), "9223372036854775807LL");
    EXPECT_EQ(text::long_long_literal(LLONG_MIN), "(-9223372036854775807LL - 1)");
    EXPECT_EQ(text::long_long_literal(std::size_t{12}), "12LL");
    EXPECT_THROW(text::long_long_literal(~std::size_t{0}), internal_error);
}

TEST(CudaCodegenText, DecimalLiteralHasNoSuffix) {
    EXPECT_EQ(text::decimal_literal(0), "0");
    EXPECT_EQ(text::decimal_literal(-3), "-3");
    EXPECT_EQ(text::decimal_literal(std::int64_t{1} << 40), "1099511627776");
    EXPECT_EQ(text::decimal_literal(INT64_MAX), "9223372036854775807");
    EXPECT_EQ(text::decimal_literal(INT64_MIN), "(-9223372036854775807LL - 1)");
}

TEST(CudaCodegenText, IncludePreludeAndKernelSignature) {
    EXPECT_EQ(text::include_prelude({"types.cuh", "math.cuh"}),
              "#include \"conflux/types.cuh\"\n#include \"conflux/math.cuh\"\n\n");
    EXPECT_EQ(text::include_prelude({}), "\n");
    const auto params = text::buffer_parameters({shape{dtype::f16, {2, 3}}, shape{dtype::i64, {3}}},
                                                {shape{dtype::f32, {2}}});
    EXPECT_EQ(params, (std::vector<std::string>{"const cx_f16* in0", "const long long* in1",
                                                "float* out0"}));
    EXPECT_EQ(
        text::kernel_signature("k", params),
        "extern \"C\" __global__ void k(const cx_f16* in0, const long long* in1, float* out0)");
    EXPECT_EQ(text::kernel_signature("k", {"int* out0"}, 256),
              "extern \"C\" __global__ void __launch_bounds__(256) k(int* out0)");
    EXPECT_EQ(text::kernel_signature("k", {}), "extern \"C\" __global__ void k()");
}

TEST(CudaCodegenText, StoreFormatReplacesEveryPlaceholder) {
    EXPECT_EQ(gemm::fill_store_format("out[($M) * 8 + ($N)] = $V;", "acc", "m", "n + 1"),
              "out[(m) * 8 + (n + 1)] = acc;");
    // Every occurrence, not just the first.
    EXPECT_EQ(gemm::fill_store_format("f($V, $M, $N, $M, $N)", "v", "m", "n"), "f(v, m, n, m, n)");
    // Other `$` signs are left alone.
    EXPECT_EQ(gemm::fill_store_format("$V $M $N $X", "v", "m", "n"), "v m n $X");
}

TEST(CudaCodegenText, StoreFormatWithoutAPlaceholderIsAnInternalError) {
    EXPECT_THROW(gemm::fill_store_format("out[$M] = $V;", "v", "m", "n"), internal_error);
    EXPECT_THROW(gemm::fill_store_format("f($M, $N)", "v", "m", "n"), internal_error);
}

} // namespace cuda_codegen_text_test
} // namespace conflux::cuda
