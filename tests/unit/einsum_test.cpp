// ONNX Einsum: the equation parser and labelling, one imported case per feature checked against
// plain loops (as imported and after the target-independent passes), and the user errors.
#include "conflux/onnx/import.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/ref/evaluate.hpp"
#include "onnx/einsum_equation.hpp"

#include "onnx_model_builder.hpp"
#include "test_helpers.hpp"

#include "onnx/onnx.pb.h"

#include <gtest/gtest.h>

namespace einsum_test {

using namespace conflux;
using namespace conflux::test;

namespace {

using ::onnx::TensorProto;

struct einsum_case {
    std::string equation;
    std::vector<dims> inputs;
    int type = TensorProto::FLOAT;
};

model_builder einsum_model(const einsum_case& e, const std::string& node = "e") {
    model_builder b(12);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < e.inputs.size(); ++i) {
        names.push_back("x" + std::to_string(i));
        std::vector<std::int64_t> lens(e.inputs[i].begin(), e.inputs[i].end());
        b.input(names.back(), e.type, lens);
    }
    set_string(b.node("Einsum", names, {"y"}, node), "equation", e.equation);
    b.output("y");
    return b;
}

// The result as imported and after the passes, which must agree.
argument run_einsum(const einsum_case& e, const std::vector<std::vector<float>>& xs) {
    auto p = einsum_model(e).import();
    ref::parameter_map params;
    const dtype t = e.type == TensorProto::FLOAT ? dtype::f32 : dtype::i64;
    for (std::size_t i = 0; i < xs.size(); ++i)
        params["x" + std::to_string(i)] = from_vector<float>(t, e.inputs[i], xs[i]);
    auto imported = ref::evaluate(p, params).at(0);
    run_passes(p.main(), target_independent_passes());
    auto optimized = ref::evaluate(p, params).at(0);
    EXPECT_EQ(optimized.get_shape().lens(), imported.get_shape().lens());
    EXPECT_EQ(to_vector<double>(optimized), to_vector<double>(imported));
    return imported;
}

std::string import_error(const model_builder& b) {
    return user_error_of([&] { b.import(); });
}

std::string parse_error(std::string_view equation, std::size_t inputs) {
    return user_error_of([&] { conflux::onnx::parse_einsum_equation(equation, inputs); });
}

// want[i * K + k] = sum over j of a(i, j) * b(j, k).
template <class A, class B>
std::vector<float> matrix_product(std::size_t I, std::size_t J, std::size_t K, A a, B b) {
    std::vector<float> want(I * K, 0.0f);
    for (std::size_t i = 0; i < I; ++i)
        for (std::size_t k = 0; k < K; ++k)
            for (std::size_t j = 0; j < J; ++j)
                want[i * K + k] += a(i, j) * b(j, k);
    return want;
}

} // namespace

// ---- the equation ------------------------------------------------------------------------------

TEST(einsum_equation, parses_terms_spaces_ellipses_and_the_explicit_output) {
    auto eq = conflux::onnx::parse_einsum_equation(" b i... , ...j ->ij ", 2);
    ASSERT_EQ(eq.inputs.size(), 2u);
    EXPECT_EQ(eq.inputs[0].letters, "bi");
    EXPECT_EQ(eq.inputs[0].ellipsis, std::optional<std::size_t>(2));
    EXPECT_EQ(eq.inputs[1].letters, "j");
    EXPECT_EQ(eq.inputs[1].ellipsis, std::optional<std::size_t>(0));
    EXPECT_EQ(eq.output.letters, "ij");
    EXPECT_FALSE(eq.output.ellipsis.has_value());
}

TEST(einsum_equation, implicit_output_is_the_ellipsis_then_the_single_letters_in_ascii_order) {
    auto eq = conflux::onnx::parse_einsum_equation("zb...,bAa,ii", 3);
    EXPECT_EQ(eq.output.letters, "Aaz");
    EXPECT_EQ(eq.output.ellipsis, std::optional<std::size_t>(0));
    EXPECT_FALSE(conflux::onnx::parse_einsum_equation("ij,jk", 2).output.ellipsis.has_value());
    EXPECT_EQ(conflux::onnx::parse_einsum_equation("ij,jk", 2).output.letters, "ik");
}

TEST(einsum_equation, ellipsis_axes_are_right_aligned_across_inputs) {
    using conflux::onnx::einsum_ellipsis_label;
    auto eq = conflux::onnx::parse_einsum_equation("a...,...->...a", 2);
    auto labels = conflux::onnx::label_einsum_axes(eq, {4, 1});
    const int a = 26; // 'a'
    const int e0 = einsum_ellipsis_label, e1 = e0 + 1, e2 = e0 + 2;
    EXPECT_EQ(labels.inputs[0], (std::vector<int>{a, e0, e1, e2}));
    EXPECT_EQ(labels.inputs[1], (std::vector<int>{e2}));
    EXPECT_EQ(labels.output, (std::vector<int>{e0, e1, e2, a}));
}

TEST(einsum_equation, malformed_equations_say_what_is_wrong) {
    EXPECT_EQ(parse_error("ij,j%->i", 2),
              "the term of input 1 has the character '%' (labels are the letters a-z and A-Z)");
    EXPECT_EQ(parse_error("i\nj", 1), "the term of input 0 has the character byte 0x0a (labels "
                                      "are the letters a-z and A-Z)");
    EXPECT_EQ(parse_error("...i...", 1), "the term of input 0 has more than one '...'");
    EXPECT_EQ(parse_error("i..j", 1), "the term of input 0 has a '.' that is not part of '...'");
    EXPECT_EQ(parse_error("ij,jk,kl->il", 2), "the equation has 3 input term(s) for 2 input(s)");
    EXPECT_EQ(parse_error("ij,jk->iq", 2), "the output label 'q' is in no input term");
    EXPECT_EQ(parse_error("ij,jk->ii", 2), "the output label 'i' appears more than once");
    EXPECT_EQ(parse_error("ij->i->j", 1), "the equation has more than one '->'");
    EXPECT_EQ(parse_error("ij-i", 1),
              "the term of input 0 has the character '-' (labels are the letters a-z and A-Z)");
    EXPECT_EQ(parse_error("ij->.", 1),
              "the term of the output has a '.' that is not part of '...'");
}

// ---- imported: one case per feature ------------------------------------------------------------

TEST(einsum_import, matmul) {
    const std::size_t I = 2, J = 3, K = 4;
    auto a = small_integers(I * J, 1), b = small_integers(J * K, 2);
    auto want = matrix_product(
        I, J, K, [&](auto i, auto j) { return a[i * J + j]; },
        [&](auto j, auto k) { return b[j * K + k]; });
    expect_values(run_einsum({"ij,jk->ik", {{I, J}, {J, K}}}, {a, b}), {I, K}, want);
}

TEST(einsum_import, integer_matmul) {
    auto a = small_integers(6, 3), b = small_integers(6, 4);
    auto want = matrix_product(
        2, 3, 2, [&](auto i, auto j) { return a[i * 3 + j]; },
        [&](auto j, auto k) { return b[j * 2 + k]; });
    auto y = run_einsum({"ij,jk->ik", {{2, 3}, {3, 2}}, TensorProto::INT64}, {a, b});
    EXPECT_EQ(y.get_shape().type(), dtype::i64);
    expect_values(y, {2, 2}, want);
}

// A's '...' is [2, 1], B's [3]: they broadcast to [2, 3].
TEST(einsum_import, batch_matmul_with_broadcast_ellipsis) {
    const std::size_t P = 2, Q = 3, I = 2, J = 3, K = 4;
    auto a = small_integers(P * 1 * I * J, 5), b = small_integers(Q * J * K, 6);
    std::vector<float> want(P * Q * I * K, 0.0f);
    for (std::size_t p = 0; p < P; ++p)
        for (std::size_t q = 0; q < Q; ++q)
            for (std::size_t i = 0; i < I; ++i)
                for (std::size_t k = 0; k < K; ++k)
                    for (std::size_t j = 0; j < J; ++j)
                        want[((p * Q + q) * I + i) * K + k] +=
                            a[(p * I + i) * J + j] * b[(q * J + j) * K + k];
    expect_values(run_einsum({"...ij,...jk->...ik", {{P, 1, I, J}, {Q, J, K}}}, {a, b}),
                  {P, Q, I, K}, want);
}

TEST(einsum_import, diagonal_and_trace) {
    const std::size_t B = 2, N = 3;
    auto a = small_integers(B * N * N, 7);
    std::vector<float> diagonal(B * N), trace(B, 0.0f);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < N; ++i) {
            diagonal[b * N + i] = a[(b * N + i) * N + i];
            trace[b] += a[(b * N + i) * N + i];
        }
    expect_values(run_einsum({"bii->bi", {{B, N, N}}}, {a}), {B, N}, diagonal);
    // The repeated label need not be adjacent nor last, and may repeat three times.
    auto t = small_integers(N * B * N, 8);
    std::vector<float> picked(B * N);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < N; ++i)
            picked[i * B + b] = t[(i * B + b) * N + i];
    expect_values(run_einsum({"ibi->ib", {{N, B, N}}}, {t}), {N, B}, picked);
    auto cube = small_integers(N * N * N, 9);
    std::vector<float> cube_trace{0.0f};
    for (std::size_t i = 0; i < N; ++i)
        cube_trace[0] += cube[(i * N + i) * N + i];
    expect_values(run_einsum({"iii", {{N, N, N}}}, {cube}), {}, cube_trace);
    expect_values(run_einsum({"bii->b", {{B, N, N}}}, {a}), {B}, trace);
}

// b is in A alone and not in the output: summed before the product; c is contracted.
TEST(einsum_import, sum_out) {
    const std::size_t A = 2, B = 3, C = 4;
    auto x = small_integers(A * B * C, 10), v = small_integers(C, 11);
    std::vector<float> want(A, 0.0f);
    for (std::size_t a = 0; a < A; ++a)
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t c = 0; c < C; ++c)
                want[a] += x[(a * B + b) * C + c] * v[c];
    expect_values(run_einsum({"abc,c->a", {{A, B, C}, {C}}}, {x, v}), {A}, want);
    std::vector<float> total{0.0f};
    for (float e : x)
        total[0] += e;
    expect_values(run_einsum({"abc->", {{A, B, C}}}, {x}), {}, total);
}

// a spans operands 0 and 2 (a row of the first product, a batch axis of the second); the output
// is in another order than the operands give.
TEST(einsum_import, three_operands) {
    const std::size_t A = 2, B = 3, C = 4, D = 2;
    auto x = small_integers(A * B, 12), y = small_integers(B * C, 13),
         z = small_integers(C * A * D, 14);
    std::vector<float> want(D * A, 0.0f);
    for (std::size_t a = 0; a < A; ++a)
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t c = 0; c < C; ++c)
                for (std::size_t d = 0; d < D; ++d)
                    want[d * A + a] += x[a * B + b] * y[b * C + c] * z[(c * A + a) * D + d];
    expect_values(run_einsum({"ab,bc,cad->da", {{A, B}, {B, C}, {C, A, D}}}, {x, y, z}), {D, A},
                  want);
}

// No '->': the output is the letters seen once, in ASCII order ('A' before 'c'); b contracts.
TEST(einsum_import, implicit_output) {
    const std::size_t A = 2, B = 3, C = 4;
    auto x = small_integers(B * A, 15), y = small_integers(C * B, 16);
    auto want = matrix_product(
        A, B, C, [&](auto a, auto b) { return x[b * A + a]; },
        [&](auto b, auto c) { return y[c * B + b]; });
    expect_values(run_einsum({"bA,cb", {{B, A}, {C, B}}}, {x, y}), {A, C}, want);
}

TEST(einsum_import, outer_and_elementwise_products) {
    auto u = small_integers(3, 17), v = small_integers(2, 18);
    std::vector<float> outer(6), hadamard(3);
    for (std::size_t i = 0; i < 3; ++i) {
        hadamard[i] = u[i] * u[i];
        for (std::size_t j = 0; j < 2; ++j)
            outer[i * 2 + j] = u[i] * v[j];
    }
    expect_values(run_einsum({"i,j->ij", {{3}, {2}}}, {u, v}), {3, 2}, outer);
    expect_values(run_einsum({"i,i->i", {{3}, {3}}}, {u, u}), {3}, hadamard);
}

// ---- imported: errors name the node ------------------------------------------------------------

TEST(einsum_import, malformed_equations_are_user_errors_naming_the_node) {
    const std::string prefix = "Einsum (node 'e', opset 12): ";
    struct bad {
        einsum_case e;
        std::string message;
    };
    const std::vector<bad> cases{
        {{"ij,j%->i", {{2, 3}, {3}}},
         "equation 'ij,j%->i': the term of input 1 has the character '%' (labels are the letters "
         "a-z and A-Z)"},
        {{"...i...,i", {{2, 3}, {3}}},
         "equation '...i...,i': the term of input 0 has more than one '...'"},
        {{"ij,jk,kl->il", {{2, 3}, {3, 4}}},
         "equation 'ij,jk,kl->il': the equation has 3 input term(s) for 2 input(s)"},
        {{"ij,jk->iq", {{2, 3}, {3, 4}}},
         "equation 'ij,jk->iq': the output label 'q' is in no input term"},
        {{"ij,jk->ii", {{2, 3}, {3, 4}}},
         "equation 'ij,jk->ii': the output label 'i' appears more than once"},
        {{"ijk,jk->i", {{2, 3}, {3, 4}}},
         "equation 'ijk,jk->i': input 0 has rank 2 but its term 'ijk' has 3 label(s)"},
        {{"i...jk,jk->i", {{2, 3}, {3, 4}}},
         "equation 'i...jk,jk->i': input 0 has rank 2 but its term 'i...jk' has 3 label(s) and "
         "'...'"},
        {{"ij,jk->ik", {{2, 3}, {4, 5}}}, "label 'j' has size 3 in input 0 and 4 in input 1"},
        {{"ii->i", {{2, 3}}}, "label 'i' has size 2 in input 0 and 3 in input 0"},
        {{"...i,...i->...", {{2, 3}, {4, 3}}},
         "the '...' axes of input 0 and input 1 do not broadcast (2 vs 4)"},
        {{"...i,...i->i", {{2, 3}, {2, 3}}},
         "equation '...i,...i->i': the inputs' '...' stand for 1 axis but the output has no "
         "'...'"},
    };
    for (const auto& c : cases)
        EXPECT_EQ(import_error(einsum_model(c.e)), prefix + c.message) << c.e.equation;
}

TEST(einsum_import, missing_equation_and_mixed_types_are_user_errors) {
    model_builder b(12);
    b.input("x", TensorProto::FLOAT, {2});
    b.node("Einsum", {"x"}, {"y"}, "e");
    b.output("y");
    EXPECT_EQ(import_error(b), "Einsum (node 'e', opset 12): attribute 'equation' is required");

    model_builder m(12);
    m.input("x", TensorProto::FLOAT, {2});
    m.input("n", TensorProto::INT64, {2});
    set_string(m.node("Einsum", {"x", "n"}, {"y"}, "e"), "equation", "i,i");
    m.output("y");
    EXPECT_EQ(import_error(m), "Einsum (node 'e', opset 12): input 1 is i64 but input 0 is f32");
}

} // namespace einsum_test
