#include "conflux/onnx/import.hpp"
#include "conflux/ref/evaluate.hpp"

#include "onnx_model_builder.hpp"

#include "onnx/onnx.pb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <unistd.h>

namespace onnx_import_test {

using namespace conflux;
using namespace conflux::test;

namespace {

using ::onnx::TensorProto;

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const user_error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a user_error";
    return {};
}

std::string import_error(const model_builder& b,
                         const conflux::onnx::import_options& options = {}) {
    return error_of([&] { b.import(options); });
}

argument f32(const dims& lens, const std::vector<float>& values) {
    return from_vector(dtype::f32, lens, values);
}

std::vector<float> run1(const program& p, const ref::parameter_map& params) {
    auto results = ref::evaluate(p, params);
    EXPECT_EQ(results.size(), 1u);
    return to_vector<float>(results.at(0));
}

bool has_op(const program& p, const std::string& name) {
    for (const auto& ins : p.main())
        if (ins.name() == name) return true;
    return false;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

const argument& returned_literal(const program& p, std::size_t i = 0) {
    auto* ret = p.main().get_return();
    const auto* lit = ret->inputs().at(i)->get_operator().get_if<op::literal>();
    EXPECT_NE(lit, nullptr);
    return lit->value;
}

} // namespace

// ---- errors -------------------------------------------------------------------------------

TEST(onnx_import, unsupported_op_names_type_node_and_opset) {
    model_builder b(17);
    b.input("x", TensorProto::FLOAT, {2});
    b.node("Foo", {"x"}, {"y"}, "n1");
    b.output("y");
    EXPECT_EQ(import_error(b), "unsupported operator 'Foo' (node 'n1', domain '', opset 17)");
}

TEST(onnx_import, every_unsupported_op_is_listed_at_once_with_its_count_and_first_node) {
    model_builder b(17);
    b.input("x", TensorProto::FLOAT, {2});
    b.node("Foo", {"x"}, {"a"}, "f1");
    b.node("Relu", {"a"}, {"b"}, "r");
    b.node("Bar", {"b"}, {"c"}, "b1");
    b.node("Foo", {"c"}, {"d"}, "f2");
    b.node("Foo", {"d"}, {"y"}, "f3");
    b.output("y");
    EXPECT_EQ(import_error(b), "unsupported operators: 'Foo' (3 nodes, the first 'f1', domain "
                               "'', opset 17), 'Bar' (node 'b1', domain '', opset 17)");
}

TEST(onnx_import, ops_with_value_dependent_shapes_say_why_and_what_to_do) {
    model_builder b(17);
    b.input("x", TensorProto::FLOAT, {4});
    b.node("NonZero", {"x"}, {"i"}, "nz");
    b.node("Foo", {"i"}, {"y"}, "f");
    b.output("y");
    EXPECT_EQ(import_error(b),
              "unsupported operators: 'NonZero' (node 'nz', domain '', opset 17), 'Foo' (node "
              "'f', domain '', opset 17); 'NonZero': output shapes that depend on the input's "
              "values, and Conflux compiles fixed shapes: export the model without the step "
              "that needs them (a detector's box selection, say) and run that step after it");
}

TEST(onnx_import, non_default_domain_is_unsupported) {
    model_builder b(17);
    auto* o = b.model.add_opset_import();
    o->set_domain("com.microsoft");
    o->set_version(1);
    b.input("x", TensorProto::FLOAT, {2});
    b.node("Relu", {"x"}, {"y"}, "ms")->set_domain("com.microsoft");
    b.output("y");
    EXPECT_EQ(import_error(b), "unsupported operator 'Relu' (node 'ms', domain 'com.microsoft', "
                               "opset 1)");
}

TEST(onnx_import, unsupported_attribute_value_gives_reason) {
    model_builder b(17);
    b.input("x", TensorProto::FLOAT, {2, 3});
    b.initializer_i64("pads", {4}, {0, 1, 0, 1});
    set_string(b.node("Pad", {"x", "pads"}, {"y"}, "p"), "mode", "wrap");
    b.output("y");
    EXPECT_EQ(import_error(b), "unsupported operator 'Pad' (node 'p', domain '', opset 17): mode "
                               "'wrap'");
}

TEST(onnx_import, maxpool_indices_output_is_unsupported) {
    model_builder b(12);
    b.input("x", TensorProto::FLOAT, {1, 1, 4, 4});
    set_ints(b.node("MaxPool", {"x"}, {"y", "idx"}, "mp"), "kernel_shape", {2, 2});
    b.output("y");
    auto msg = import_error(b);
    EXPECT_NE(msg.find("unsupported operator 'MaxPool' (node 'mp'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Indices"), std::string::npos) << msg;
}

TEST(onnx_import, truncated_file_is_not_a_valid_model) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {64});
    auto* w = b.initializer("w", {64}, {});
    w->set_raw_data(std::string(64 * 4, '\0'));
    b.node("Add", {"x", "w"}, {"y"});
    b.output("y");
    auto bytes = b.bytes();
    auto cut = bytes.substr(0, bytes.size() / 2);
    auto msg = error_of([&] { conflux::onnx::import_model_bytes(cut, {}, "model.onnx"); });
    EXPECT_EQ(msg.rfind("model.onnx: not a valid ONNX model (", 0), 0u) << msg;
}

TEST(onnx_import, garbage_and_empty_bytes_are_not_a_valid_model) {
    for (std::string bytes : {std::string("\xff\xff\xff\xff\xff garbage \x01\x02", 17),
                              std::string("hello, this is not a model"), std::string()}) {
        auto msg = error_of([&] { conflux::onnx::import_model_bytes(bytes, {}, "model.onnx"); });
        EXPECT_EQ(msg.rfind("model.onnx: not a valid ONNX model (", 0), 0u) << msg;
    }
}

TEST(onnx_import, missing_file_names_the_path) {
    auto msg = error_of([] { conflux::onnx::import_model("/nonexistent/dir/m.onnx"); });
    EXPECT_NE(msg.find("/nonexistent/dir/m.onnx"), std::string::npos) << msg;
}

TEST(onnx_import, undefined_input_names_node_and_value) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2});
    b.node("Add", {"x", "W"}, {"y"}, "add1");
    b.output("y");
    auto msg = import_error(b);
    EXPECT_NE(msg.find("node 'add1'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'W'"), std::string::npos) << msg;
}

TEST(onnx_import, undefined_graph_output_is_an_error) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2});
    b.node("Relu", {"x"}, {"y"});
    b.output("z");
    auto msg = import_error(b);
    EXPECT_NE(msg.find("'z'"), std::string::npos) << msg;
}

TEST(onnx_import, conv_shape_mismatch_is_prefixed_with_the_node) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {1, 3, 5, 5});
    b.initializer("w", {4, 2, 3, 3}, std::vector<float>(72, 1.0f));
    b.node("Conv", {"x", "w"}, {"y"}, "conv1");
    b.output("y");
    auto msg = import_error(b);
    EXPECT_EQ(msg.rfind("node 'conv1' (Conv): convolution", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(onnx_import, non_constant_reshape_shape) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2, 3});
    b.input("s", TensorProto::INT64, {2});
    b.node("Reshape", {"x", "s"}, {"y"}, "n3");
    b.output("y");
    EXPECT_EQ(import_error(b), "Reshape (node 'n3', opset 17): input 'shape' must be a constant");
}

TEST(onnx_import, wrong_input_count_is_an_error) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2});
    b.node("Add", {"x"}, {"y"}, "a");
    b.output("y");
    EXPECT_EQ(import_error(b), "Add (node 'a', opset 17): expects 2 input(s), got 1");
}

TEST(onnx_import, opset_out_of_range_is_an_error) {
    for (std::int64_t opset : {6, 22}) {
        model_builder b(opset);
        b.input("x", TensorProto::FLOAT, {2});
        b.node("Relu", {"x"}, {"y"});
        b.output("y");
        auto msg = import_error(b);
        EXPECT_NE(msg.find("opset " + std::to_string(opset)), std::string::npos) << msg;
    }
}

TEST(onnx_import, symbolic_dims) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {-1, 3, -1}, {"N", "", "height"});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    auto msg = import_error(b);
    EXPECT_NE(msg.find("input 'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'height'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--input-dim"), std::string::npos) << msg;

    conflux::onnx::import_options given;
    given.input_dims["x"] = {2, 3, 7};
    auto p = b.import(given);
    EXPECT_EQ(p.main().get_parameter("x")->get_shape().lens(), (dims{2, 3, 7}));

    conflux::onnx::import_options wrong_dim;
    wrong_dim.input_dims["x"] = {2, 4, 7};
    msg = import_error(b, wrong_dim);
    EXPECT_NE(msg.find("--input-dim x"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fixes it to 3"), std::string::npos) << msg;

    conflux::onnx::import_options wrong_rank;
    wrong_rank.input_dims["x"] = {2, 3};
    msg = import_error(b, wrong_rank);
    EXPECT_NE(msg.find("rank 3"), std::string::npos) << msg;

    conflux::onnx::import_options unknown;
    unknown.input_dims["nope"] = {1};
    msg = import_error(b, unknown);
    EXPECT_NE(msg.find("'nope'"), std::string::npos) << msg;
}

TEST(onnx_import, symbolic_batch_takes_batch_option) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {-1, 3}, {"N"});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    EXPECT_EQ(b.import().main().get_parameter("x")->get_shape().lens(), (dims{1, 3}));
    conflux::onnx::import_options o;
    o.batch = 8;
    EXPECT_EQ(b.import(o).main().get_parameter("x")->get_shape().lens(), (dims{8, 3}));
}

// ---- graph structure -------------------------------------------------------------------------

TEST(onnx_import, raw_and_typed_initializers_give_identical_literals) {
    struct variant {
        int type;
        std::string raw;
        std::function<void(TensorProto&)> typed;
    };
    float fv[] = {1.5f, -2.0f, 0.25f};
    std::int64_t iv[] = {-1, 0, 1LL << 40};
    std::uint16_t hv[] = {0x3c00, 0xc000, 0x3400}; // f16 1, -2, 0.25
    std::int8_t bv[] = {-128, 0, 127};
    const char boolv[] = {1, 0, 1};
    std::vector<variant> variants{
        {TensorProto::FLOAT, std::string(reinterpret_cast<char*>(fv), sizeof fv),
         [&](TensorProto& t) {
             for (auto v : fv)
                 t.add_float_data(v);
         }},
        {TensorProto::INT64, std::string(reinterpret_cast<char*>(iv), sizeof iv),
         [&](TensorProto& t) {
             for (auto v : iv)
                 t.add_int64_data(v);
         }},
        {TensorProto::FLOAT16, std::string(reinterpret_cast<char*>(hv), sizeof hv),
         [&](TensorProto& t) {
             for (auto v : hv)
                 t.add_int32_data(v);
         }},
        {TensorProto::INT8, std::string(reinterpret_cast<char*>(bv), sizeof bv),
         [&](TensorProto& t) {
             for (auto v : bv)
                 t.add_int32_data(v);
         }},
        {TensorProto::BOOL, std::string(boolv, sizeof boolv),
         [&](TensorProto& t) {
             for (auto v : boolv)
                 t.add_int32_data(v);
         }},
    };
    for (const auto& v : variants) {
        model_builder b;
        for (const char* name : {"raw", "typed"}) {
            auto* t = b.model.mutable_graph()->add_initializer();
            t->set_name(name);
            t->set_data_type(v.type);
            t->add_dims(3);
            if (std::string(name) == "raw")
                t->set_raw_data(v.raw);
            else
                v.typed(*t);
            b.output(name);
        }
        auto p = b.import();
        const auto& raw = returned_literal(p, 0);
        const auto& typed = returned_literal(p, 1);
        EXPECT_TRUE(raw.same_values(typed)) << to_string(raw) << " vs " << to_string(typed);
        EXPECT_EQ(raw.get_shape().lens(), (dims{3}));
    }
}

TEST(onnx_import, raw_data_size_mismatch_is_an_error) {
    model_builder b;
    auto* t = b.initializer("w", {4}, {});
    t->set_raw_data(std::string(8, '\0'));
    b.output("w");
    auto msg = import_error(b);
    EXPECT_NE(msg.find("tensor 'w'"), std::string::npos) << msg;
}

TEST(onnx_import, initializer_listed_as_input_is_a_literal) {
    model_builder b(8);
    b.input("x", TensorProto::FLOAT, {2});
    b.input("w", TensorProto::FLOAT, {2});
    b.initializer("w", {2}, {10, 20});
    b.node("Add", {"x", "w"}, {"y"});
    b.output("y");
    auto p = b.import();
    EXPECT_EQ(p.main().parameters().size(), 1u);
    expect_near(run1(p, {{"x", f32({2}, {1, 2})}}), {11, 22});
}

TEST(onnx_import, return_carries_output_names) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2});
    b.node("Relu", {"x"}, {"r"});
    b.node("Neg", {"x"}, {"n"});
    b.output("n");
    b.output("r");
    auto p = b.import();
    EXPECT_EQ(p.main().output_names(), (std::vector<std::string>{"n", "r"}));
}

TEST(onnx_import, shape_arithmetic_folds_away) {
    // x [2,3,4] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) = [2, 12]
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2, 3, 4});
    b.initializer_i64("zero", {}, {0});
    b.initializer_i64("axes0", {1}, {0});
    b.initializer_i64("minus1", {1}, {-1});
    b.node("Shape", {"x"}, {"s"});
    b.node("Gather", {"s", "zero"}, {"n"});
    b.node("Unsqueeze", {"n", "axes0"}, {"n1"});
    set_int(b.node("Concat", {"n1", "minus1"}, {"shape"}), "axis", 0);
    b.node("Reshape", {"x", "shape"}, {"y"});
    b.output("y");
    auto p = b.import();
    for (const auto& ins : p.main()) {
        EXPECT_TRUE(ins.is_param() || ins.is_return() || ins.name() == "reshape")
            << p.main().to_string();
    }
    EXPECT_EQ(p.main().get_return()->inputs().at(0)->get_shape().lens(), (dims{2, 12}));
    p.validate();
}

TEST(onnx_import, constant_of_shape_and_range_become_literals) {
    model_builder b;
    b.initializer_i64("shape", {2}, {2, 3});
    auto* c = b.node("ConstantOfShape", {"shape"}, {"c"});
    auto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(TensorProto::FLOAT);
    a->mutable_t()->add_dims(1);
    a->mutable_t()->add_float_data(7.0f);
    b.initializer_i64("start", {}, {1});
    b.initializer_i64("limit", {}, {10});
    b.initializer_i64("delta", {}, {3});
    b.node("Range", {"start", "limit", "delta"}, {"r"});
    b.output("c");
    b.output("r");
    auto p = b.import();
    EXPECT_EQ(to_vector<float>(returned_literal(p, 0)), std::vector<float>(6, 7.0f));
    EXPECT_EQ(to_vector<std::int64_t>(returned_literal(p, 1)),
              (std::vector<std::int64_t>{1, 4, 7}));
}

TEST(onnx_import, eye_like_becomes_a_literal_of_the_input_shape) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {3, 4});
    auto* e = b.node("EyeLike", {"x"}, {"e"});
    auto* k = e->add_attribute();
    k->set_name("k");
    k->set_type(::onnx::AttributeProto::INT);
    k->set_i(-1);
    auto* t = e->add_attribute();
    t->set_name("dtype");
    t->set_type(::onnx::AttributeProto::INT);
    t->set_i(TensorProto::INT32);
    b.output("e");
    auto p = b.import();
    const argument eye = returned_literal(p, 0);
    EXPECT_EQ(eye.get_shape().type(), dtype::i32);
    EXPECT_EQ(to_vector<std::int64_t>(eye),
              (std::vector<std::int64_t>{0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
}

TEST(onnx_import, eye_like_of_a_3d_input_is_refused) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2, 3, 4});
    b.node("EyeLike", {"x"}, {"e"});
    b.output("e");
    EXPECT_NE(import_error(b).find("EyeLike"), std::string::npos) << import_error(b);
    EXPECT_NE(import_error(b).find("must be 2-D, got"), std::string::npos) << import_error(b);
}

// Opset 7's Upsample: scales as an attribute, nearest rounding down (x / scale, floored).
TEST(onnx_import, upsample_of_opset_7_repeats_nearest_values) {
    model_builder b(7);
    b.input("x", TensorProto::FLOAT, {1, 1, 2, 2});
    auto* u = b.node("Upsample", {"x"}, {"y"});
    auto* a = u->add_attribute();
    a->set_name("scales");
    a->set_type(::onnx::AttributeProto::FLOATS);
    for (float s : {1.0f, 1.0f, 2.0f, 3.0f})
        a->add_floats(s);
    b.output("y");
    auto p = b.import();
    expect_near(run1(p, {{"x", f32({1, 1, 2, 2}, {1, 2, 3, 4})}}),
                {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
}

TEST(onnx_import, broadcasting_add_inserts_broadcast) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2, 3});
    b.input("y", TensorProto::FLOAT, {3});
    b.node("Add", {"x", "y"}, {"z"});
    b.output("z");
    auto p = b.import();
    EXPECT_TRUE(has_op(p, "broadcast")) << p.main().to_string();
    expect_near(run1(p, {{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"y", f32({3}, {10, 20, 30})}}),
                {11, 22, 33, 14, 25, 36});
}

// ---- numerics --------------------------------------------------------------------------------

TEST(onnx_import, gemm_with_trans_b_alpha_beta) {
    model_builder b(11);
    b.input("a", TensorProto::FLOAT, {2, 3});
    b.input("w", TensorProto::FLOAT, {2, 3}); // B^T; an input, so its transpose stays a view
    b.initializer("c", {2}, {100, 200});
    auto* n = b.node("Gemm", {"a", "w", "c"}, {"y"}, "g");
    set_int(n, "transB", 1);
    set_float(n, "alpha", 2.0f);
    set_float(n, "beta", 0.5f);
    b.output("y");
    auto p = b.import();
    EXPECT_TRUE(has_op(p, "dot"));
    EXPECT_TRUE(has_op(p, "transpose"));
    // A B = [[1+3, 2], [4+6, 5]]; y = 2 A B + 0.5 c
    expect_near(
        run1(p, {{"a", f32({2, 3}, {1, 2, 3, 4, 5, 6})}, {"w", f32({2, 3}, {1, 0, 1, 0, 1, 0})}}),
        {58, 104, 70, 110});
}

TEST(onnx_import, matmul_with_vector_operands) {
    model_builder b;
    b.input("v", TensorProto::FLOAT, {3});
    b.input("m", TensorProto::FLOAT, {3, 2});
    b.node("MatMul", {"v", "m"}, {"y"});
    b.output("y");
    auto p = b.import();
    auto y = ref::evaluate(p, {{"v", f32({3}, {1, 2, 3})}, {"m", f32({3, 2}, {1, 2, 3, 4, 5, 6})}});
    EXPECT_EQ(y.at(0).get_shape().lens(), (dims{2}));
    expect_near(to_vector<float>(y.at(0)), {22, 28});
}

TEST(onnx_import, conv_with_bias_and_same_upper) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {1, 1, 3, 3});
    b.initializer("w", {1, 1, 2, 2}, {1, 1, 1, 1});
    b.initializer("bias", {1}, {0.5f});
    set_string(b.node("Conv", {"x", "w", "bias"}, {"y"}, "c"), "auto_pad", "SAME_UPPER");
    b.output("y");
    auto p = b.import();
    // 2x2 box sums with one pad row/column at the end.
    expect_near(run1(p, {{"x", f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})}}),
                {12.5, 16.5, 9.5, 24.5, 28.5, 15.5, 15.5, 17.5, 9.5});
}

TEST(onnx_import, softmax_before_opset_13_flattens) {
    model_builder b(11);
    b.input("x", TensorProto::FLOAT, {1, 2, 2});
    set_int(b.node("Softmax", {"x"}, {"y"}), "axis", 1);
    b.output("y");
    auto p = b.import();
    auto y = run1(p, {{"x", f32({1, 2, 2}, {0, 0, 0, std::log(5.0f)})}});
    // One softmax over all four values.
    expect_near(y, {0.125f, 0.125f, 0.125f, 0.625f});
}

// Expected values from Python's math.erf and math.tanh.
TEST(onnx_import, gelu_opset_20_is_one_op_in_both_forms) {
    for (const std::string approximate : {"none", "tanh"}) {
        model_builder b(20);
        b.input("x", TensorProto::FLOAT, {3});
        set_string(b.node("Gelu", {"x"}, {"y"}), "approximate", approximate);
        b.output("y");
        auto p = b.import();
        EXPECT_TRUE(has_op(p, "gelu")) << p.to_string();
        EXPECT_FALSE(has_op(p, "erf") || has_op(p, "tanh")) << p.to_string();
        auto y = run1(p, {{"x", f32({3}, {1, -0.5f, 3})}});
        if (approximate == "none")
            expect_near(y, {0.8413447461f, -0.1542687694f, 2.9959503059f});
        else
            expect_near(y, {0.8411919906f, -0.1542859902f, 2.9963626079f});
    }
    model_builder b(20);
    b.input("x", TensorProto::FLOAT, {3});
    set_string(b.node("Gelu", {"x"}, {"y"}, "act"), "approximate", "sigmoid");
    b.output("y");
    const auto message = import_error(b);
    EXPECT_NE(message.find("act"), std::string::npos) << message;
    EXPECT_NE(message.find("approximate 'sigmoid'"), std::string::npos) << message;
}

TEST(onnx_import, clip_with_missing_min_and_mean) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {4});
    b.initializer("hi", {}, {1.0f});
    b.node("Clip", {"x", "", "hi"}, {"c"});
    b.node("Mean", {"x", "c"}, {"y"});
    b.output("y");
    auto p = b.import();
    expect_near(run1(p, {{"x", f32({4}, {-5, 0.5, 2, 4})}}), {-5, 0.5, 1.5, 2.5});
}

TEST(onnx_import, split_and_tile_and_pad) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2, 3});
    b.initializer_i64("sizes", {2}, {1, 2});
    set_int(b.node("Split", {"x", "sizes"}, {"a", "bc"}), "axis", 1);
    b.initializer_i64("reps", {2}, {1, 2});
    b.node("Tile", {"a", "reps"}, {"t"});
    b.initializer_i64("pads", {4}, {0, 1, 0, 0});
    b.node("Pad", {"bc", "pads"}, {"p"});
    b.output("t");
    b.output("p");
    auto p = b.import();
    auto out = ref::evaluate(p, {{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].get_shape().lens(), (dims{2, 2}));
    expect_near(to_vector<float>(out[0]), {1, 1, 4, 4});
    EXPECT_EQ(out[1].get_shape().lens(), (dims{2, 3}));
    expect_near(to_vector<float>(out[1]), {0, 2, 3, 0, 5, 6});
}

// RWKV's time shift: one step padded in front, one cropped at the end.
TEST(onnx_import, negative_pads_crop) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2, 3});
    b.initializer_i64("pads", {4}, {-1, 1, 0, -2});
    b.initializer("v", {}, {9});
    b.node("Pad", {"x", "pads", "v"}, {"y"});
    b.output("y");
    auto out = ref::evaluate(b.import(), {{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}});
    ASSERT_EQ(out.size(), 1u);
    // Row 0 cropped; one column padded in front, two cropped at the end.
    EXPECT_EQ(out[0].get_shape().lens(), (dims{1, 2}));
    expect_near(to_vector<float>(out[0]), {9, 4});
}

TEST(onnx_import, negative_pads_that_crop_everything_are_an_error) {
    for (const auto& [pads, mode, expected] :
         std::vector<std::tuple<std::vector<std::int64_t>, std::string, std::string>>{
             {{-1, 0, -1, 0}, "constant", "pads -1 and -1 crop all of axis 0 of padded length 2"},
             {{0, -4, 0, 0}, "constant", "pads -4 and 0 crop all of axis 1 of padded length 3"},
             {{0, -1, 0, 0}, "reflect", "negative pads (cropping) in mode 'reflect'"}}) {
        model_builder b;
        b.input("x", TensorProto::FLOAT, {2, 3});
        b.initializer_i64("pads", {4}, pads);
        set_string(b.node("Pad", {"x", "pads"}, {"y"}, "p"), "mode", mode);
        b.output("y");
        const auto msg = import_error(b);
        EXPECT_NE(msg.find("node 'p'"), std::string::npos) << msg;
        EXPECT_NE(msg.find(expected), std::string::npos) << msg;
    }
}

namespace {

// A one-node graph for an If's branch, reading `inputs` from the outer graph.
void set_branch(::onnx::NodeProto* if_node, const std::string& attr, const std::string& op,
                const std::vector<std::string>& inputs, const std::string& output) {
    auto* a = if_node->add_attribute();
    a->set_name(attr);
    a->set_type(::onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name(attr);
    auto* n = g->add_node();
    n->set_op_type(op);
    for (const auto& i : inputs)
        n->add_input(i);
    n->add_output(output);
    g->add_output()->set_name(output);
}

// x f32[2, 3]; If(shape(x)[1] > `bound`) then x * 2 else -x.
model_builder if_on_shape(std::int64_t bound) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2, 3});
    b.initializer_i64("one", {}, {1});
    b.initializer_i64("bound", {}, {bound});
    b.initializer("two", {}, {2});
    b.node("Shape", {"x"}, {"s"});
    b.node("Gather", {"s", "one"}, {"d"});
    b.node("Greater", {"d", "bound"}, {"cond"});
    auto* n = b.node("If", {"cond"}, {"y"}, "if");
    set_branch(n, "then_branch", "Mul", {"x", "two"}, "doubled");
    set_branch(n, "else_branch", "Neg", {"x"}, "negated");
    b.output("y");
    return b;
}

} // namespace

// TorchScript exports test shapes with If; the shapes are static, so the condition is known.
TEST(onnx_import, if_on_a_shape_takes_its_branch_at_import) {
    const auto x = f32({2, 3}, {1, -2, 3, -4, 5, -6});
    auto taken = ref::evaluate(if_on_shape(2).import(), {{"x", x}});
    ASSERT_EQ(taken.size(), 1u);
    expect_near(to_vector<float>(taken[0]), {2, -4, 6, -8, 10, -12});
    auto other = ref::evaluate(if_on_shape(3).import(), {{"x", x}});
    ASSERT_EQ(other.size(), 1u);
    expect_near(to_vector<float>(other[0]), {-1, 2, -3, 4, -5, 6});
}

TEST(onnx_import, if_on_a_value_is_unsupported_with_the_reason) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2, 3});
    b.input("c", TensorProto::BOOL, {});
    auto* n = b.node("If", {"c"}, {"y"}, "if");
    set_branch(n, "then_branch", "Relu", {"x"}, "r");
    set_branch(n, "else_branch", "Neg", {"x"}, "q");
    b.output("y");
    EXPECT_EQ(import_error(b), "unsupported operator 'If' (node 'if', domain '', opset 17): the "
                               "condition 'c' depends on the model's inputs (only conditions "
                               "known at import, such as tests of shapes, are supported)");
}

TEST(onnx_import, if_branch_with_an_unsupported_op_or_wrong_outputs_is_an_error) {
    auto b = if_on_shape(2);
    b.graph->mutable_node(3)->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_op_type(
        "Frobnicate");
    auto msg = import_error(b);
    EXPECT_NE(msg.find("unsupported operator 'Frobnicate'"), std::string::npos) << msg;
    auto c = if_on_shape(2);
    c.graph->mutable_node(3)->add_output("extra");
    msg = import_error(c);
    EXPECT_NE(msg.find("node 'if'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("then_branch has 1 outputs, the node 2"), std::string::npos) << msg;
}

TEST(onnx_import, dropout_is_identity_with_true_mask) {
    model_builder b(13);
    b.input("x", TensorProto::FLOAT, {3});
    b.node("Dropout", {"x"}, {"y", "mask"});
    b.output("y");
    b.output("mask");
    auto p = b.import();
    auto out = ref::evaluate(p, {{"x", f32({3}, {1, 2, 3})}});
    ASSERT_EQ(out.size(), 2u);
    expect_near(to_vector<float>(out[0]), {1, 2, 3});
    EXPECT_EQ(out[1].get_shape().type(), dtype::boolean);
    EXPECT_EQ(to_vector<int>(out[1]), (std::vector<int>{1, 1, 1}));
}

TEST(onnx_import, reduce_axes_attribute_and_input) {
    for (std::int64_t opset : {11, 13}) {
        model_builder b(opset);
        b.input("x", TensorProto::FLOAT, {2, 3});
        ::onnx::NodeProto* n = nullptr;
        if (opset >= 13) {
            b.initializer_i64("axes", {1}, {-1});
            n = b.node("ReduceSum", {"x", "axes"}, {"y"});
        } else {
            n = b.node("ReduceSum", {"x"}, {"y"});
            set_ints(n, "axes", {-1});
        }
        set_int(n, "keepdims", 0);
        b.output("y");
        auto p = b.import();
        expect_near(run1(p, {{"x", f32({2, 3}, {1, 2, 3, 4, 5, 6})}}), {6, 15});
    }
}

TEST(onnx_import, read_tensor_file_round_trips) {
    TensorProto t;
    t.set_name("input_0");
    t.set_data_type(TensorProto::INT32);
    t.add_dims(2);
    for (int v : {7, -3})
        t.add_int32_data(v);
    auto path = std::filesystem::temp_directory_path() /
                ("conflux_tensor_" + std::to_string(::getpid()) + ".pb");
    {
        std::ofstream f(path, std::ios::binary);
        f << t.SerializeAsString();
    }
    std::string name;
    auto a = conflux::onnx::read_tensor_file(path.string(), &name);
    std::filesystem::remove(path);
    EXPECT_EQ(name, "input_0");
    EXPECT_EQ(a.get_shape(), (shape{dtype::i32, {2}}));
    EXPECT_EQ(to_vector<int>(a), (std::vector<int>{7, -3}));
    auto msg = error_of([&] { conflux::onnx::read_tensor_file(path.string()); });
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
}

TEST(onnx_import, huge_dims_without_the_values_are_rejected_before_allocating) {
    // An optional or sequence read as a TensorProto can claim dims like these (a terabyte of
    // floats); the file holds one value, so this must fail at once, not allocate.
    TensorProto t;
    t.set_name("opt");
    t.set_data_type(TensorProto::FLOAT);
    t.add_dims(std::int64_t{1} << 20);
    t.add_dims(std::int64_t{1} << 18);
    t.add_float_data(1.0f);
    auto path = std::filesystem::temp_directory_path() /
                ("conflux_huge_" + std::to_string(::getpid()) + ".pb");
    {
        std::ofstream f(path, std::ios::binary);
        f << t.SerializeAsString();
    }
    auto msg = error_of([&] { conflux::onnx::read_tensor_file(path.string()); });
    std::filesystem::remove(path);
    EXPECT_NE(msg.find("holds 1 values but its dims"), std::string::npos) << msg;
}

TEST(onnx_import, slice_attributes_before_opset_10_and_inputs_after) {
    for (std::int64_t opset : {9, 13}) {
        model_builder b(opset);
        b.input("x", TensorProto::FLOAT, {2, 4});
        if (opset < 10) {
            auto* n = b.node("Slice", {"x"}, {"y"});
            set_ints(n, "starts", {1});
            set_ints(n, "ends", {100});
            set_ints(n, "axes", {-1});
        } else {
            b.initializer_i64("starts", {1}, {1});
            b.initializer_i64("ends", {1}, {100});
            b.initializer_i64("axes", {1}, {-1});
            b.node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
        }
        b.output("y");
        auto p = b.import();
        expect_near(run1(p, {{"x", f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})}}), {2, 3, 4, 6, 7, 8});
    }
}

TEST(onnx_import, squeeze_unsqueeze_axes_attribute_and_input) {
    for (std::int64_t opset : {11, 13}) {
        model_builder b(opset);
        b.input("x", TensorProto::FLOAT, {1, 3});
        if (opset < 13) {
            set_ints(b.node("Squeeze", {"x"}, {"s"}), "axes", {0});
            set_ints(b.node("Unsqueeze", {"s"}, {"y"}), "axes", {-1});
        } else {
            b.initializer_i64("a0", {1}, {0});
            b.initializer_i64("a1", {1}, {-1});
            b.node("Squeeze", {"x", "a0"}, {"s"});
            b.node("Unsqueeze", {"s", "a1"}, {"y"});
        }
        b.output("y");
        auto p = b.import();
        EXPECT_EQ(p.main().get_return()->inputs().at(0)->get_shape().lens(), (dims{3, 1}));
    }
}

TEST(onnx_import, split_num_outputs_opset_18_allows_a_short_last_part) {
    model_builder b(18);
    b.input("x", TensorProto::FLOAT, {5});
    set_int(b.node("Split", {"x"}, {"a", "b"}), "num_outputs", 2);
    b.output("a");
    b.output("b");
    auto p = b.import();
    auto out = ref::evaluate(p, {{"x", f32({5}, {1, 2, 3, 4, 5})}});
    ASSERT_EQ(out.size(), 2u);
    expect_near(to_vector<float>(out[0]), {1, 2, 3});
    expect_near(to_vector<float>(out[1]), {4, 5});
}

TEST(onnx_import, expand_broadcasts_both_ways) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {3, 1});
    b.initializer_i64("shape", {3}, {2, 1, 4});
    b.node("Expand", {"x", "shape"}, {"y"});
    b.output("y");
    auto p = b.import();
    EXPECT_EQ(p.main().get_return()->inputs().at(0)->get_shape().lens(), (dims{2, 3, 4}));
}

TEST(onnx_import, clip_attributes_before_opset_11) {
    model_builder b(7);
    b.input("x", TensorProto::FLOAT, {3});
    set_float(b.node("Clip", {"x"}, {"y"}), "min", 0.0f);
    b.output("y");
    auto p = b.import();
    expect_near(run1(p, {{"x", f32({3}, {-1, 0.5, 7})}}), {0, 0.5, 7});
}

TEST(onnx_import, flatten_negative_axis_and_transpose_default_perm) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2, 3, 4});
    set_int(b.node("Flatten", {"x"}, {"f"}), "axis", -1);
    b.node("Transpose", {"f"}, {"y"});
    b.output("y");
    auto p = b.import();
    EXPECT_EQ(p.main().get_return()->inputs().at(0)->get_shape().lens(), (dims{4, 6}));
}

TEST(onnx_import, messages_stay_on_one_line) {
    model_builder b;
    b.input("x", TensorProto::FLOAT, {2});
    b.node("Add", {"x", "bad\nname"}, {"y"}, "n\r1");
    b.output("y");
    auto msg = import_error(b);
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\r'), std::string::npos) << msg;
}

// ONNX gives LayerNormalization's X, Scale and B one type; the op's own f32 parameters beside a
// 16-bit input are for reduced precision, not for models.
TEST(onnx_import, layer_norm_with_a_scale_of_another_type_is_an_error) {
    model_builder b(17);
    b.input("x", TensorProto::FLOAT16, {2, 8});
    b.input("s", TensorProto::FLOAT, {8});
    b.node("LayerNormalization", {"x", "s"}, {"y"}, "ln");
    b.output("y");
    const std::string e = import_error(b);
    EXPECT_NE(e.find("'ln'"), std::string::npos) << e;
    EXPECT_NE(e.find("Scale is f32 but X is f16"), std::string::npos) << e;
}

// LRN on an f16 input whose squares overflow f16 (300^2 > 65504): the window's sums are taken
// in f32. Expected values from the definition: channel 0's window holds 300^2 + 0^2, so
// y = 300 / (1 + 1e-4 * 90000)^0.75 = 300 / 10^0.75.
TEST(onnx_import, lrn_of_f16_sums_the_squares_in_f32) {
    model_builder b(17);
    b.input("x", TensorProto::FLOAT16, {1, 3, 1, 1});
    auto* n = b.node("LRN", {"x"}, {"y"});
    set_int(n, "size", 3);
    set_float(n, "alpha", 3e-4f);
    b.output("y");
    auto p = b.import();
    auto results = ref::evaluate(
        p, {{"x", from_vector(dtype::f16, {1, 3, 1, 1}, std::vector<float>{300, 0, -300})}});
    const float y0 = float(300 / std::pow(10.0, 0.75));
    expect_near(to_vector<float>(results.at(0)), {y0, 0, -y0}, 0.05f);
}

// Weight standardisation as NFNet and BiT export it: BatchNormalization in training mode,
// normalised by the batch's own mean and (biased) variance; the running statistics updated by
// momentum. Expected values computed here by hand from the definition.
TEST(onnx_import, batch_norm_in_training_mode_uses_the_batch_statistics) {
    model_builder b(15);
    b.input("x", TensorProto::FLOAT, {2, 2, 2});
    b.initializer("scale", {2}, {2, 1});
    b.initializer("bias", {2}, {0, 10});
    b.initializer("mean", {2}, {1, 1});
    b.initializer("var", {2}, {4, 4});
    auto* n = b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                     {"y", "running_mean", "running_var"});
    set_int(n, "training_mode", 1);
    set_float(n, "epsilon", 0.0f);
    set_float(n, "momentum", 0.5f);
    b.output("y");
    b.output("running_mean");
    b.output("running_var");
    auto p = b.import();
    // Channel 0 holds 1, 3, 5, 7 (mean 4, variance 5), channel 1 holds 2, 2, 6, 6 (mean 4,
    // variance 4).
    auto out = ref::evaluate(p, {{"x", f32({2, 2, 2}, {1, 3, 2, 2, 5, 7, 6, 6})}});
    ASSERT_EQ(out.size(), 3u);
    const float s5 = std::sqrt(5.0f);
    expect_near(to_vector<float>(out[0]),
                {2 * -3 / s5, 2 * -1 / s5, 10 - 1, 10 - 1, 2 * 1 / s5, 2 * 3 / s5, 10 + 1, 10 + 1});
    expect_near(to_vector<float>(out[1]), {0.5f * 1 + 0.5f * 4, 0.5f * 1 + 0.5f * 4});
    expect_near(to_vector<float>(out[2]), {0.5f * 4 + 0.5f * 5, 0.5f * 4 + 0.5f * 4});
}

TEST(onnx_import, batch_norm_in_training_mode_checks_its_parameters) {
    model_builder b(15);
    b.input("x", TensorProto::FLOAT, {1, 3, 2});
    b.initializer("scale", {2}, {1, 1});
    b.initializer("bias", {3}, {0, 0, 0});
    b.initializer("mean", {3}, {0, 0, 0});
    b.initializer("var", {3}, {1, 1, 1});
    set_int(b.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn"),
            "training_mode", 1);
    b.output("y");
    const std::string msg = import_error(b);
    EXPECT_NE(msg.find("scale must have lens [3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("bn"), std::string::npos) << msg;
}

// SpaceToDepth then DepthToSpace in DCR mode is the identity (ONNX defines one as the other's
// inverse); CRD mode orders the channels the other way, checked on a small case by hand.
TEST(onnx_import, depth_to_space_inverts_space_to_depth) {
    model_builder b(13);
    b.input("x", TensorProto::FLOAT, {1, 2, 4, 6});
    set_int(b.node("SpaceToDepth", {"x"}, {"d"}), "blocksize", 2);
    set_int(b.node("DepthToSpace", {"d"}, {"y"}), "blocksize", 2);
    b.output("d");
    b.output("y");
    auto p = b.import();
    std::vector<float> x(48);
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = float(i);
    auto out = ref::evaluate(p, {{"x", f32({1, 2, 4, 6}, x)}});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].get_shape().lens(), (dims{1, 8, 2, 3}));
    expect_near(to_vector<float>(out[1]), x);
    // Channel 0 of the depth form: input channel 0's top-left pixels of each block.
    const auto d = to_vector<float>(out[0]);
    expect_near({d.begin(), d.begin() + 6}, {0, 2, 4, 12, 14, 16});

    model_builder crd(13);
    crd.input("x", TensorProto::FLOAT, {1, 4, 1, 1});
    auto* n = crd.node("DepthToSpace", {"x"}, {"y"});
    set_int(n, "blocksize", 2);
    set_string(n, "mode", "CRD");
    crd.output("y");
    // CRD: channel c * 4 + (i * 2 + j) goes to output channel c, pixel (i, j).
    expect_near(
        to_vector<float>(ref::evaluate(crd.import(), {{"x", f32({1, 4, 1, 1}, {1, 2, 3, 4})}})[0]),
        {1, 2, 3, 4});
}

TEST(onnx_import, depth_to_space_names_what_is_wrong) {
    auto error_of = [](const std::string& op, const dims& lens, std::int64_t block,
                       const std::string& mode) {
        model_builder b(13);
        b.input("x", TensorProto::FLOAT, {lens.begin(), lens.end()});
        auto* n = b.node(op, {"x"}, {"y"}, "shuffle");
        set_int(n, "blocksize", block);
        if (!mode.empty()) set_string(n, "mode", mode);
        b.output("y");
        return import_error(b);
    };
    EXPECT_NE(error_of("DepthToSpace", {1, 6, 2, 2}, 2, "").find("not a multiple of blocksize^2"),
              std::string::npos);
    EXPECT_NE(error_of("DepthToSpace", {1, 8, 2, 2}, 2, "XYZ").find("mode must be DCR or CRD"),
              std::string::npos);
    EXPECT_NE(error_of("DepthToSpace", {8, 2, 2}, 2, "").find("rank 4"), std::string::npos);
    EXPECT_NE(error_of("SpaceToDepth", {1, 2, 5, 4}, 2, "").find("not a multiple of blocksize"),
              std::string::npos);
    EXPECT_NE(error_of("SpaceToDepth", {1, 2, 4, 4}, 0, "").find("blocksize must be positive"),
              std::string::npos);
    EXPECT_NE(error_of("SpaceToDepth", {1, 2, 4, 4}, 0, "").find("shuffle"), std::string::npos);
}

// LSTM against a direct implementation of ONNX's equations (gates i, o, f, c; both biases), in
// each direction, with initial states and the batch-first layout; then what is refused.
TEST(onnx_import, lstm_matches_its_definition_in_every_direction) {
    const std::size_t steps = 4, batch = 2, in = 3, hidden = 2;
    auto values = [](std::size_t n, float scale, float shift) {
        std::vector<float> v(n);
        for (std::size_t i = 0; i < n; ++i)
            v[i] = scale * std::sin(float(i) * 1.7f + shift);
        return v;
    };
    for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
        for (std::int64_t layout : {0, 1}) {
            SCOPED_TRACE(direction + " layout " + std::to_string(layout));
            const std::size_t dirs = direction == "bidirectional" ? 2 : 1;
            const auto w = values(dirs * 4 * hidden * in, 0.5f, 0.1f);
            const auto r = values(dirs * 4 * hidden * hidden, 0.5f, 0.7f);
            const auto bias = values(dirs * 8 * hidden, 0.3f, 1.3f);
            const auto h0 = values(dirs * batch * hidden, 0.4f, 2.1f);
            const auto c0 = values(dirs * batch * hidden, 0.4f, 2.9f);
            const auto x = values(steps * batch * in, 1.0f, 0.5f); // [steps, batch, in]
            model_builder b(14);
            const std::vector<std::int64_t> x_lens = layout == 0
                                                         ? std::vector<std::int64_t>{4, 2, 3}
                                                         : std::vector<std::int64_t>{2, 4, 3};
            b.input("x", TensorProto::FLOAT, x_lens);
            const auto d = std::int64_t(dirs), h = std::int64_t(hidden);
            b.initializer("W", {d, 4 * h, 3}, w);
            b.initializer("R", {d, 4 * h, h}, r);
            b.initializer("B", {d, 8 * h}, bias);
            const std::vector<std::int64_t> state_lens{d, 2, h};
            b.input("h0", TensorProto::FLOAT, state_lens);
            b.input("c0", TensorProto::FLOAT, state_lens);
            auto* n = b.node("LSTM", {"x", "W", "R", "B", "", "h0", "c0"}, {"y", "y_h", "y_c"});
            set_int(n, "hidden_size", h);
            set_string(n, "direction", direction);
            set_int(n, "layout", layout);
            b.output("y");
            b.output("y_h");
            b.output("y_c");
            // x in the model's layout.
            std::vector<float> x_model(x.size());
            for (std::size_t s = 0; s < steps; ++s)
                for (std::size_t bb = 0; bb < batch; ++bb)
                    for (std::size_t i = 0; i < in; ++i)
                        x_model[layout == 0 ? (s * batch + bb) * in + i
                                            : (bb * steps + s) * in + i] =
                            x[(s * batch + bb) * in + i];
            auto out =
                ref::evaluate(b.import(), {{"x", f32({x_lens.begin(), x_lens.end()}, x_model)},
                                           {"h0", f32({dirs, batch, hidden}, h0)},
                                           {"c0", f32({dirs, batch, hidden}, c0)}});
            ASSERT_EQ(out.size(), 3u);
            const auto y = to_vector<float>(out[0]);
            const auto y_h = to_vector<float>(out[1]);
            const auto sig = [](float v) { return 1 / (1 + std::exp(-v)); };
            for (std::size_t dd = 0; dd < dirs; ++dd) {
                const bool back = direction == "reverse" || dd == 1;
                std::vector<float> hs(h0.begin() + dd * batch * hidden,
                                      h0.begin() + (dd + 1) * batch * hidden);
                std::vector<float> cs(c0.begin() + dd * batch * hidden,
                                      c0.begin() + (dd + 1) * batch * hidden);
                for (std::size_t k = 0; k < steps; ++k) {
                    const std::size_t s = back ? steps - 1 - k : k;
                    std::vector<float> next_h(hs.size()), next_c(cs.size());
                    for (std::size_t bb = 0; bb < batch; ++bb)
                        for (std::size_t j = 0; j < hidden; ++j) {
                            float g[4];
                            for (std::size_t q = 0; q < 4; ++q) {
                                const std::size_t row = q * hidden + j;
                                float v = bias[dd * 8 * hidden + row] +
                                          bias[dd * 8 * hidden + 4 * hidden + row];
                                for (std::size_t i = 0; i < in; ++i)
                                    v += w[(dd * 4 * hidden + row) * in + i] *
                                         x[(s * batch + bb) * in + i];
                                for (std::size_t i = 0; i < hidden; ++i)
                                    v += r[(dd * 4 * hidden + row) * hidden + i] *
                                         hs[bb * hidden + i];
                                g[q] = v;
                            }
                            const float c =
                                sig(g[2]) * cs[bb * hidden + j] + sig(g[0]) * std::tanh(g[3]);
                            next_c[bb * hidden + j] = c;
                            next_h[bb * hidden + j] = sig(g[1]) * std::tanh(c);
                        }
                    hs = next_h;
                    cs = next_c;
                    for (std::size_t bb = 0; bb < batch; ++bb)
                        for (std::size_t j = 0; j < hidden; ++j) {
                            const std::size_t at =
                                layout == 0 ? ((s * dirs + dd) * batch + bb) * hidden + j
                                            : ((bb * steps + s) * dirs + dd) * hidden + j;
                            EXPECT_NEAR(y[at], hs[bb * hidden + j], 1e-5f) << "step " << s;
                        }
                }
                for (std::size_t bb = 0; bb < batch; ++bb)
                    for (std::size_t j = 0; j < hidden; ++j) {
                        const std::size_t at = layout == 0 ? (dd * batch + bb) * hidden + j
                                                           : (bb * dirs + dd) * hidden + j;
                        EXPECT_NEAR(y_h[at], hs[bb * hidden + j], 1e-5f);
                    }
            }
        }
    }
}

TEST(onnx_import, lstm_refuses_what_it_does_not_implement_by_name) {
    auto error_of = [](const std::function<void(model_builder&, ::onnx::NodeProto*)>& change) {
        model_builder b(14);
        b.input("x", TensorProto::FLOAT, {3, 1, 2});
        b.initializer("W", {1, 8, 2}, std::vector<float>(16, 0.1f));
        b.initializer("R", {1, 8, 2}, std::vector<float>(16, 0.1f));
        auto* n = b.node("LSTM", {"x", "W", "R"}, {"y"}, "rnn");
        set_int(n, "hidden_size", 2);
        change(b, n);
        b.output("y");
        return import_error(b);
    };
    EXPECT_NE(error_of([](model_builder& b, ::onnx::NodeProto* n) {
                  b.initializer("P", {1, 6}, std::vector<float>(6, 0.f));
                  n->add_input("");
                  n->add_input("");
                  n->add_input("");
                  n->add_input("");
                  n->add_input("P");
              }).find("peepholes"),
              std::string::npos);
    EXPECT_NE(error_of([](model_builder&, ::onnx::NodeProto* n) {
                  set_float(n, "clip", 1.0f);
              }).find("clip"),
              std::string::npos);
    EXPECT_NE(error_of([](model_builder&, ::onnx::NodeProto* n) {
                  set_string(n, "direction", "sideways");
              }).find("direction must be"),
              std::string::npos);
    EXPECT_NE(error_of([](model_builder&, ::onnx::NodeProto* n) {
                  for (auto& a : *n->mutable_attribute())
                      if (a.name() == "hidden_size") a.set_i(3);
              }).find("does not match"),
              std::string::npos);
    EXPECT_NE(error_of([](model_builder&, ::onnx::NodeProto* n) {
                  for (auto& a : *n->mutable_attribute())
                      if (a.name() == "hidden_size") a.set_i(3);
              }).find("rnn"),
              std::string::npos);
}

// Gate g of unit j of a GRU step, input part (with Wb) and recurrent part (with Rb).
float input_part_at(const std::vector<float>& w, const std::vector<float>& bias,
                    const std::vector<float>& x, std::size_t s, std::size_t b, std::size_t g,
                    std::size_t j, std::size_t in, std::size_t hidden, std::size_t batch) {
    float v = bias[g * hidden + j];
    for (std::size_t i = 0; i < in; ++i)
        v += w[(g * hidden + j) * in + i] * x[(s * batch + b) * in + i];
    return v;
}
float recurrent_at(const std::vector<float>& r, const std::vector<float>& bias,
                   const std::vector<float>& h, std::size_t b, std::size_t g, std::size_t j,
                   std::size_t hidden) {
    float v = bias[(3 + g) * hidden + j];
    for (std::size_t i = 0; i < hidden; ++i)
        v += r[(g * hidden + j) * hidden + i] * h[b * hidden + i];
    return v;
}

// GRU in PyTorch's form (linear_before_reset=1: the reset gate scales the hidden gate's
// recurrent product and its bias) and ONNX's default form, against the equations written out;
// ONNX's own GRU node tests cover only the default form.
TEST(onnx_import, gru_matches_its_definition_in_both_reset_forms) {
    const std::size_t steps = 3, batch = 2, in = 3, hidden = 2;
    auto values = [](std::size_t n, float scale, float shift) {
        std::vector<float> v(n);
        for (std::size_t i = 0; i < n; ++i)
            v[i] = scale * std::sin(float(i) * 1.3f + shift);
        return v;
    };
    const auto w = values(3 * hidden * in, 0.6f, 0.2f);
    const auto r = values(3 * hidden * hidden, 0.6f, 0.9f);
    const auto bias = values(6 * hidden, 0.3f, 1.7f);
    const auto x = values(steps * batch * in, 1.0f, 0.4f);
    for (std::int64_t lbr : {0, 1}) {
        SCOPED_TRACE("linear_before_reset " + std::to_string(lbr));
        model_builder b(14);
        b.input("x", TensorProto::FLOAT, {3, 2, 3});
        b.initializer("W", {1, 6, 3}, w);
        b.initializer("R", {1, 6, 2}, r);
        b.initializer("B", {1, 12}, bias);
        auto* n = b.node("GRU", {"x", "W", "R", "B"}, {"y", "y_h"});
        set_int(n, "hidden_size", 2);
        set_int(n, "linear_before_reset", lbr);
        b.output("y");
        b.output("y_h");
        const auto out = ref::evaluate(b.import(), {{"x", f32({3, 2, 3}, x)}});
        ASSERT_EQ(out.size(), 2u);
        const auto y = to_vector<float>(out[0]);
        const auto sig = [](float v) { return 1 / (1 + std::exp(-v)); };
        std::vector<float> h(batch * hidden, 0.0f);
        for (std::size_t s = 0; s < steps; ++s) {
            std::vector<float> next(h.size());
            for (std::size_t bb = 0; bb < batch; ++bb)
                for (std::size_t j = 0; j < hidden; ++j) {
                    // Gate g's input part (with Wb) and recurrent part (with Rb) of unit j.
                    auto input_part = [&](std::size_t g) {
                        float v = bias[g * hidden + j];
                        for (std::size_t i = 0; i < in; ++i)
                            v += w[(g * hidden + j) * in + i] * x[(s * batch + bb) * in + i];
                        return v;
                    };
                    auto recurrent_part = [&](std::size_t g, const std::vector<float>& state) {
                        float v = bias[(3 + g) * hidden + j];
                        for (std::size_t i = 0; i < hidden; ++i)
                            v += r[(g * hidden + j) * hidden + i] * state[bb * hidden + i];
                        return v;
                    };
                    const float z = sig(input_part(0) + recurrent_part(0, h));
                    const float reset = sig(input_part(1) + recurrent_part(1, h));
                    float candidate;
                    if (lbr != 0) {
                        candidate = std::tanh(input_part(2) + reset * recurrent_part(2, h));
                    } else {
                        // (reset ⊙ h) Rhᵀ + Rbh, where reset is per unit of h.
                        float v = bias[5 * hidden + j];
                        for (std::size_t i = 0; i < hidden; ++i) {
                            const float r_i =
                                sig(input_part_at(w, bias, x, s, bb, 1, i, in, hidden, batch) +
                                    recurrent_at(r, bias, h, bb, 1, i, hidden));
                            v += r[(2 * hidden + j) * hidden + i] * r_i * h[bb * hidden + i];
                        }
                        candidate = std::tanh(input_part(2) + v);
                    }
                    next[bb * hidden + j] = (1 - z) * candidate + z * h[bb * hidden + j];
                }
            h = next;
            for (std::size_t k = 0; k < h.size(); ++k)
                EXPECT_NEAR(y[s * batch * hidden + k], h[k], 1e-5f) << "step " << s;
        }
        expect_near(to_vector<float>(out[1]), h);
    }
}

// GroupNormalization: two groups of two channels of one position each, so each group's
// statistics are those of two values (mean (a + b) / 2, biased variance ((a - b) / 2)^2) and
// its outputs are -1 and +1 (epsilon 0) before the affine transform. Opset 18 scales per group,
// opset 21 per channel. Expected values computed by hand from the definition.
TEST(onnx_import, group_norm_scales_per_group_at_opset_18_and_per_channel_from_21) {
    for (int opset : {18, 21}) {
        model_builder b(opset);
        b.input("x", TensorProto::FLOAT, {1, 4, 1});
        const std::vector<std::int64_t> affine{opset < 21 ? 2 : 4};
        b.initializer("scale", affine,
                      opset < 21 ? std::vector<float>{2, 3} : std::vector<float>{2, 3, 4, 5});
        b.initializer("bias", affine,
                      opset < 21 ? std::vector<float>{10, 20} : std::vector<float>{10, 20, 30, 40});
        auto* n = b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn");
        set_int(n, "num_groups", 2);
        set_float(n, "epsilon", 0);
        b.output("y");
        auto out = ref::evaluate(b.import(), {{"x", f32({1, 4, 1}, {1, 3, 8, 4})}});
        ASSERT_EQ(out.size(), 1u);
        // Normalised: group 0 (1, 3) -> (-1, 1); group 1 (8, 4) -> (1, -1).
        const std::vector<float> want =
            opset < 21 ? std::vector<float>{8, 12, 23, 17} : std::vector<float>{8, 23, 34, 35};
        expect_near(to_vector<float>(out[0]), want);
    }
}

TEST(onnx_import, group_norm_errors_name_the_attribute_and_the_lens) {
    auto error_for = [](int opset, std::int64_t groups, std::int64_t affine, bool set_groups) {
        model_builder b(opset);
        b.input("x", TensorProto::FLOAT, {2, 6, 3});
        b.initializer("scale", {affine}, std::vector<float>(std::size_t(affine), 1));
        b.initializer("bias", {affine}, std::vector<float>(std::size_t(affine), 0));
        auto* n = b.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn");
        if (set_groups) set_int(n, "num_groups", groups);
        b.output("y");
        return import_error(b);
    };
    EXPECT_EQ(error_for(21, 4, 6, true),
              "GroupNormalization (node 'gn', opset 21): num_groups 4 does not divide the 6 "
              "channels of X f32[2,6,3]");
    EXPECT_EQ(error_for(21, 3, 3, true),
              "GroupNormalization (node 'gn', opset 21): scale must have lens [6] (channels at "
              "opset 21), got f32[3]");
    EXPECT_EQ(error_for(18, 3, 6, true),
              "GroupNormalization (node 'gn', opset 18): scale must have lens [3] (num_groups at "
              "opset 18), got f32[6]");
    EXPECT_EQ(error_for(21, 3, 6, false),
              "GroupNormalization (node 'gn', opset 21): attribute 'num_groups' is required");
}

// Mish: x * tanh(softplus(x)), against values computed from the definition in double; large
// inputs of either sign must not overflow (e^100).
TEST(onnx_import, mish_follows_its_definition_without_overflow) {
    model_builder b(18);
    b.input("x", TensorProto::FLOAT, {6});
    b.node("Mish", {"x"}, {"y"}, "mish");
    b.output("y");
    const std::vector<float> x{-100, -3, -0.5f, 0, 1.5f, 100};
    auto out = ref::evaluate(b.import(), {{"x", f32({6}, x)}});
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> want;
    for (float v : x)
        want.push_back(float(double(v) * std::tanh(std::log1p(std::exp(double(v))))));
    expect_near(to_vector<float>(out[0]), want);
}

} // namespace onnx_import_test
