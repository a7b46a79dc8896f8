// Sizes past what a tensor can hold, from every place a size enters Conflux: a model's input
// dims, attribute values, constant operands, options. Each must be a user error that names the
// node or the input; none may wrap around into a small, wrong size. The values are chosen so that
// unchecked 64-bit arithmetic wraps (2^62+1 times 4 is 4 modulo 2^64), and the expected results
// are worked out by hand here, not taken from the code under test.
//
// Also: graphs deep or wide enough to overflow a recursive pass's stack, or to expose quadratic
// work, compile for the CUDA target (NVRTC only, no GPU needed).
#include "conflux/cuda/target.hpp"
#include "conflux/ref/evaluate.hpp"
#include "conflux/util/checked_size.hpp"
#include "conflux/util/errors.hpp"

#include "onnx_model_builder.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>

namespace bad_shapes_test {

using namespace conflux;
using namespace conflux::test;
using ::onnx::TensorProto;

namespace {

constexpr std::int64_t two_62 = std::int64_t{1} << 62;

std::string import_error(const model_builder& b,
                         const conflux::onnx::import_options& options = {}) {
    try {
        b.import(options);
    } catch (const user_error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a user_error";
    return {};
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// x -> Op(x, constant `operand`) -> y
model_builder with_constant_operand(const std::string& op, const std::vector<std::int64_t>& x_dims,
                                    const std::vector<std::int64_t>& operand) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, x_dims);
    b.initializer_i64("c", {std::int64_t(operand.size())}, operand);
    b.node(op, {"x", "c"}, {"y"}, "n");
    b.output("y");
    return b;
}

cuda::compile_options sm90_no_caches() {
    cuda::compile_options o;
    o.arch = "sm_90";
    o.use_kernel_cache = false;
    o.use_problem_cache = false;
    o.tune = cuda::tune_mode::none;
    return o;
}

// The number of distinct kernels b compiles to for sm_90.
std::size_t kernels_for_sm90(const model_builder& b) {
    return cuda::compile(b.import(), sm90_no_caches()).stats().kernels;
}

} // namespace

// ---- the arithmetic itself -----------------------------------------------------------------

TEST(checked_size, add_and_mul_refuse_wrap_and_the_bound) {
    EXPECT_EQ(mul_size(std::size_t{1} << 24, std::size_t{1} << 24), max_tensor_elements);
    EXPECT_FALSE(mul_size(max_tensor_elements, 2));
    EXPECT_FALSE(mul_size(std::size_t(two_62) + 1, 4)); // wraps to 4 unchecked
    EXPECT_FALSE(add_size(std::numeric_limits<std::size_t>::max(), 1));
    EXPECT_EQ(add_size(3, 4), 7u);
    EXPECT_FALSE(add_i64(std::numeric_limits<std::int64_t>::max(), 1));
    EXPECT_FALSE(sub_i64(std::numeric_limits<std::int64_t>::min(), 1));
    EXPECT_FALSE(mul_i64(two_62, 2));
    EXPECT_EQ(mul_i64(-two_62, 2), std::numeric_limits<std::int64_t>::min());
}

TEST(checked_size, an_empty_axis_does_not_hide_a_wrapping_stride) {
    // [0, 2^62] holds no element, but the stride of its first axis would be 2^62 * 1 and the
    // strides of [0, 2^62, 8] would wrap.
    EXPECT_FALSE(bounded_extent({0, std::size_t(two_62), 8}));
    EXPECT_EQ(bounded_extent({0, 3, 5}), 15u);
    EXPECT_EQ(bounded_extent({}), 1u);
}

TEST(checked_size, messages_name_the_thing_and_the_bound) {
    auto msg = user_error_of([] { checked_elements({std::size_t(two_62) + 1, 4}, "input 'x'"); });
    EXPECT_TRUE(contains(msg, "input 'x'")) << msg;
    EXPECT_TRUE(contains(msg, "[4611686018427387905,4]")) << msg;
    EXPECT_TRUE(contains(msg, "2^48")) << msg;
    EXPECT_TRUE(contains(user_error_of([] { checked_dim(-3, "pads"); }), "negative")) << msg;
    EXPECT_EQ(checked_dim(7, "pads"), 7u);
}

// ---- sizes from a model ----------------------------------------------------------------------

TEST(bad_shapes, reshape_to_a_wrapping_element_count) {
    auto msg = import_error(with_constant_operand("Reshape", {4}, {two_62 + 1, 4}));
    EXPECT_TRUE(contains(msg, "Reshape")) << msg;
    EXPECT_TRUE(contains(msg, "[4611686018427387905,4]")) << msg;
}

TEST(bad_shapes, conv_pads_that_overflow_the_output_size) {
    for (std::int64_t pad : {two_62, std::int64_t{1} << 31}) {
        model_builder b;
        b.input("x", TensorProto::FLOAT, {1, 1, 4, 4});
        b.initializer("w", {1, 1, 1, 1}, {1.0f});
        set_ints(b.node("Conv", {"x", "w"}, {"y"}, "conv"), "pads", {pad, pad, pad, pad});
        b.output("y");
        auto msg = import_error(b);
        EXPECT_TRUE(contains(msg, "'conv'")) << pad << ": " << msg;
        EXPECT_TRUE(contains(msg, "2^48")) << pad << ": " << msg;
    }
}

TEST(bad_shapes, pad_expand_and_tile_past_the_bound) {
    const std::int64_t two_33 = std::int64_t{1} << 33;
    for (const auto& [op, x_dims, operand] :
         std::vector<std::tuple<std::string, std::vector<std::int64_t>, std::vector<std::int64_t>>>{
             {"Pad", {2, 2}, {two_62, 0, 0, 0}},
             {"Expand", {1, 1}, {two_33, two_33}},
             {"Expand", {1}, {two_62}},
             {"Tile", {1, 1}, {two_33, two_33}},
         }) {
        auto msg = import_error(with_constant_operand(op, x_dims, operand));
        EXPECT_TRUE(contains(msg, op)) << op << ": " << msg;
        EXPECT_TRUE(contains(msg, "'n'")) << op << ": " << msg;
    }
}

TEST(bad_shapes, input_dims_past_the_bound) {
    for (std::int64_t dim : {two_62 + 1, two_62, std::numeric_limits<std::int64_t>::max()}) {
        model_builder b;
        b.input("x", TensorProto::FLOAT, {dim, 4});
        b.node("Relu", {"x"}, {"y"});
        b.output("y");
        auto msg = import_error(b);
        EXPECT_TRUE(contains(msg, "input 'x'")) << msg;
        EXPECT_TRUE(contains(msg, std::to_string(dim))) << msg;
    }
}

TEST(bad_shapes, batch_option_past_the_bound) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {-1, 3}, {"N"});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    for (std::size_t batch : {std::size_t{6148914691236517206}, std::size_t(two_62)}) {
        conflux::onnx::import_options o;
        o.batch = batch;
        auto msg = import_error(b, o);
        EXPECT_TRUE(contains(msg, "--batch " + std::to_string(batch))) << msg;
    }
    conflux::onnx::import_options o;
    o.batch = 5;
    EXPECT_EQ(b.import(o).main().get_parameter("x")->get_shape().lens(), (dims{5, 3}));
}

// Range's count is ceil((limit - start) / delta) in exact integer arithmetic: here
// ceil(1 / 2^62) = 1, the element 2^63 - 2 (numpy.arange agrees). Computed in double, the
// difference 1 vanishes next to 2^63 and the count came out 0.
TEST(bad_shapes, range_counts_exactly_near_int64_max) {
    model_builder b;
    const std::int64_t start = std::numeric_limits<std::int64_t>::max() - 1;
    b.initializer_i64("start", {}, {start});
    b.initializer_i64("limit", {}, {std::numeric_limits<std::int64_t>::max()});
    b.initializer_i64("delta", {}, {two_62});
    b.node("Range", {"start", "limit", "delta"}, {"y"});
    b.output("y");
    auto p = b.import();
    auto results = ref::evaluate(p, ref::parameter_map{});
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(to_vector<std::int64_t>(results[0]), std::vector<std::int64_t>{start});

    // Crossing zero with a negative step: ceil((-7 - 5) / -4) = 3: 5, 1, -3.
    model_builder c;
    c.initializer_i64("start", {}, {5});
    c.initializer_i64("limit", {}, {-7});
    c.initializer_i64("delta", {}, {-4});
    c.node("Range", {"start", "limit", "delta"}, {"y"});
    c.output("y");
    auto q = c.import();
    EXPECT_EQ(to_vector<std::int64_t>(ref::evaluate(q, ref::parameter_map{}).at(0)),
              (std::vector<std::int64_t>{5, 1, -3}));
}

TEST(bad_shapes, constant_gather_indices_out_of_range_are_refused_at_import) {
    {
        model_builder b;
        b.input("x", TensorProto::FLOAT, {4, 3});
        b.initializer_i64("i", {2}, {0, 7});
        b.node("Gather", {"x", "i"}, {"y"}, "g");
        b.output("y");
        auto msg = import_error(b);
        EXPECT_TRUE(contains(msg, "'g'")) << msg;
        EXPECT_TRUE(contains(msg, "index 7")) << msg;
        EXPECT_TRUE(contains(msg, "[-4, 4)")) << msg;
    }
    {
        model_builder b;
        b.input("x", TensorProto::FLOAT, {2, 2});
        b.initializer_i64("i", {2, 2}, {0, 5, 1, 0});
        set_int(b.node("GatherElements", {"x", "i"}, {"y"}, "ge"), "axis", 0);
        b.output("y");
        auto msg = import_error(b);
        EXPECT_TRUE(contains(msg, "'ge'")) << msg;
        EXPECT_TRUE(contains(msg, "index 5")) << msg;
    }
    // In range, negative indices included: accepted.
    model_builder ok;
    ok.input("x", TensorProto::FLOAT, {4, 3});
    ok.initializer_i64("i", {2}, {-4, 3});
    ok.node("Gather", {"x", "i"}, {"y"}, "g");
    ok.output("y");
    EXPECT_NO_THROW(ok.import());
}

TEST(bad_shapes, constant_nd_and_scatter_indices_out_of_range_are_refused_at_import) {
    {
        model_builder b;
        b.input("x", TensorProto::FLOAT, {2, 3});
        b.initializer_i64("i", {2, 2}, {1, -3, 0, 3});
        b.node("GatherND", {"x", "i"}, {"y"}, "g");
        b.output("y");
        EXPECT_EQ(import_error(b), "GatherND (node 'g', opset 17): index 3 (element 3 of the "
                                   "indices) is out of range [-3, 3) for axis 1 of length 3");
    }
    {
        model_builder b;
        b.input("x", TensorProto::FLOAT, {4});
        b.initializer_i64("i", {2, 1}, {0, -5});
        b.input("u", TensorProto::FLOAT, {2});
        b.node("ScatterND", {"x", "i", "u"}, {"y"}, "s");
        b.output("y");
        EXPECT_EQ(import_error(b), "ScatterND (node 's', opset 17): index -5 (element 1 of the "
                                   "indices) is out of range [-4, 4) for axis 0 of length 4");
    }
    {
        model_builder b;
        b.input("x", TensorProto::FLOAT, {2, 2});
        b.initializer_i64("i", {1, 2}, {0, 2});
        b.input("u", TensorProto::FLOAT, {1, 2});
        set_int(b.node("ScatterElements", {"x", "i", "u"}, {"y"}, "se"), "axis", 1);
        b.output("y");
        EXPECT_EQ(import_error(b), "ScatterElements (node 'se', opset 17): index 2 (element 1 "
                                   "of the indices) is out of range [-2, 2) for axis 1 of length "
                                   "2");
    }
    // The indices' last axis longer than the data's rank: the shape error comes first.
    model_builder b;
    b.input("x", TensorProto::FLOAT, {4});
    b.initializer_i64("i", {1, 2}, {0, 0});
    b.node("GatherND", {"x", "i"}, {"y"}, "g");
    b.output("y");
    EXPECT_EQ(import_error(b), "node 'g' (GatherND): gather_nd: the indices' last axis has "
                               "length 2 but must be in [1, 1] (data rank 1 less batch_dims 0)");
}

TEST(bad_shapes, scatter_reductions_are_checked_against_the_opset) {
    auto scatter = [](std::int64_t opset, const std::string& reduction) {
        model_builder b(opset);
        b.input("x", TensorProto::FLOAT, {4});
        b.input("i", TensorProto::INT64, {2, 1});
        b.input("u", TensorProto::FLOAT, {2});
        set_string(b.node("ScatterND", {"x", "i", "u"}, {"y"}, "s"), "reduction", reduction);
        b.output("y");
        return b;
    };
    EXPECT_EQ(import_error(scatter(18, "sum")),
              "ScatterND (node 's', opset 18): unknown reduction 'sum' (none, add, mul, max or "
              "min)");
    EXPECT_EQ(import_error(scatter(17, "max")),
              "ScatterND (node 's', opset 17): reduction 'max' needs opset 18 or later");
    EXPECT_EQ(import_error(scatter(13, "add")),
              "ScatterND (node 's', opset 13): reduction 'add' needs opset 16 or later");
    EXPECT_NO_THROW(scatter(18, "min").import());
    EXPECT_NO_THROW(scatter(16, "mul").import());
}

// A 1x1 convolution over [1, 1, 2^20, 2^20]: 2^40 output elements, within the bound, but more
// thread blocks than any CUDA grid can have for every perf config. That is a user error saying
// so, not an internal error.
TEST(bad_shapes, a_problem_no_perf_config_can_run_is_a_user_error) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {1, 1, 1 << 20, 1 << 20});
    b.initializer("w", {1, 1, 1, 1}, {1.0f});
    b.node("Conv", {"x", "w"}, {"y"}, "conv");
    b.output("y");
    std::string msg;
    try {
        cuda::compile(b.import(), sm90_no_caches());
    } catch (const user_error& e) {
        msg = e.what();
    }
    EXPECT_TRUE(contains(msg, "no perf config")) << msg;
    EXPECT_TRUE(contains(msg, "grid")) << msg;
}

// ---- graphs deep and wide ----------------------------------------------------------------

// The index code generator once built each value's expression recursively: 10,000 chained
// elementwise ops (one fused kernel) overflowed the stack; so did a Sum of 5,000 operands.
TEST(large_graphs, a_chain_of_ten_thousand_ops_compiles_for_the_cuda_target) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {1, 16});
    const int n = 10000;
    for (int i = 0; i < n; ++i)
        b.node("Relu", {i == 0 ? "x" : "t" + std::to_string(i)},
               {i + 1 == n ? "y" : "t" + std::to_string(i + 1)});
    b.output("y");
    EXPECT_EQ(kernels_for_sm90(b), 1u); // fused into one
}

TEST(large_graphs, a_sum_of_five_thousand_operands_compiles_for_the_cuda_target) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {1, 16});
    std::vector<std::string> operands(5000, "x");
    b.node("Sum", operands, {"y"});
    b.output("y");
    EXPECT_EQ(kernels_for_sm90(b), 1u); // fused into one
}

// 20,000 outputs once took over two minutes to compile (validation and fusion quadratic in the
// number of users of one value); it takes under a second in a release build.
TEST(large_graphs, twenty_thousand_outputs_compile_in_bounded_time) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {1, 4});
    for (int i = 0; i < 20000; ++i) {
        b.node("Relu", {"x"}, {"y" + std::to_string(i)});
        b.output("y" + std::to_string(i));
    }
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(kernels_for_sm90(b), 1u); // equal Relus merged, then one kernel
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 60.0);
}

} // namespace bad_shapes_test
