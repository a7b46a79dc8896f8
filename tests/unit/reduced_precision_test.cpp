// The reduced_precision pass (--fp16 / --bf16): an f32 model run in 16 bits keeps f32 inputs
// and outputs, folds its weights to 16 bits, keeps softmax in f32, and its results stay within
// the 16-bit tolerance of the f32 model's, both evaluated by the reference target.
#include "conflux/ir/random_argument.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/ref/evaluate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace conflux {
namespace reduced_precision_test {

// conv (literal weights) + bias + relu, then softmax over the channels.
program model() {
    program p;
    module& m = p.main();
    std::mt19937_64 rng(3);
    auto x = m.add_parameter("x", shape{dtype::f32, {2, 8, 10, 10}});
    auto w = m.add_literal(random_argument(shape{dtype::f32, {16, 8, 3, 3}}, rng));
    auto b = m.add_literal(random_argument(shape{dtype::f32, {1, 16, 1, 1}}, rng));
    auto c = m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1, false}, {x, w});
    auto bb = m.add_instruction(op::broadcast{{2, 16, 10, 10}}, {b});
    auto r = m.add_instruction(
        op::make_elementwise(op::elementwise_kind::relu),
        {m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {c, bb})});
    m.add_return({r, m.add_instruction(op::softmax{1, false}, {r})});
    return p;
}

double relative_rms(const argument& got, const argument& want) {
    const auto g = to_vector<double>(got), w = to_vector<double>(want);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        num += (g[i] - w[i]) * (g[i] - w[i]);
        den += w[i] * w[i];
    }
    return std::sqrt(num / den);
}

// Both programs' first outputs on the reference target, element by element.
void expect_same_bits(const program& got_program, const program& want_program,
                      const ref::parameter_map& params) {
    const auto got = to_vector<double>(ref::evaluate(got_program, params).at(0));
    const auto want = to_vector<double>(ref::evaluate(want_program, params).at(0));
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << "element " << i;
}

class ReducedPrecision : public ::testing::TestWithParam<dtype> {};

TEST_P(ReducedPrecision, StaysWithinTheToleranceOfTheF32Model) {
    const dtype t = GetParam();
    program reduced = model();
    run_passes(reduced.main(), target_independent_passes(reduced_precision{t}));
    std::mt19937_64 rng(5);
    const ref::parameter_map params{{"x", random_argument(shape{dtype::f32, {2, 8, 10, 10}}, rng)}};
    const auto want = ref::evaluate(model(), params);
    const auto got = ref::evaluate(reduced, params);
    ASSERT_EQ(got.size(), want.size());
    const double tolerance = t == dtype::f16 ? 1e-2 : 2e-2;
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].get_shape().type(), dtype::f32) << "output " << i;
        const double err = relative_rms(got[i], want[i]);
        EXPECT_LT(err, tolerance) << "output " << i;
        EXPECT_GT(err, 0.0) << "output " << i << " was not computed in 16 bits";
    }
    // The parameter stays f32; the weights became 16-bit constants; softmax reads the 16-bit
    // value (computing in f32 inside) and gives 16 bits.
    bool softmax_16 = false, weights_16 = false;
    for (const instruction& ins : reduced.main()) {
        if (ins.is_param()) {
            EXPECT_EQ(ins.get_shape().type(), dtype::f32);
        }
        if (ins.name() == "softmax")
            softmax_16 =
                ins.inputs().front()->get_shape().type() == t && ins.get_shape().type() == t;
        if (ins.is_literal() && ins.get_shape().elements() == 16 * 8 * 9)
            weights_16 = ins.get_shape().type() == t;
    }
    EXPECT_TRUE(softmax_16);
    EXPECT_TRUE(weights_16);
}

// Layer norm reads the 16-bit value as it is, with its f32 scale and bias, and gives a 16-bit
// result: no f32 copy and no conversion back, and the same bits as the f32 layer norm between
// those conversions (written out by hand here).
TEST_P(ReducedPrecision, LayerNormReadsTheSixteenBitValueWithF32Parameters) {
    const dtype t = GetParam();
    const shape xs{dtype::f32, {4, 10, 48}};
    std::mt19937_64 rng(9);
    const argument scale = random_argument(shape{dtype::f32, {48}}, rng);
    const argument bias = random_argument(shape{dtype::f32, {48}}, rng);
    auto ew = [](op::elementwise_kind k) { return op::make_elementwise(k); };
    auto convert = [](dtype to) { return op::make_convert(to); };
    program reduced;
    {
        module& m = reduced.main();
        auto x = m.add_parameter("x", xs);
        auto sum = m.add_instruction(ew(op::elementwise_kind::add), {x, x});
        auto n = m.add_instruction(op::layer_norm{2, 1e-5f},
                                   {sum, m.add_literal(scale), m.add_literal(bias)});
        m.add_return({m.add_instruction(ew(op::elementwise_kind::relu), {n})});
    }
    run_passes(reduced.main(), target_independent_passes(reduced_precision{t}));
    program by_hand;
    {
        module& m = by_hand.main();
        auto x = m.add_instruction(convert(t), {m.add_parameter("x", xs)});
        auto sum = m.add_instruction(ew(op::elementwise_kind::add), {x, x});
        auto n = m.add_instruction(op::layer_norm{2, 1e-5f},
                                   {m.add_instruction(convert(dtype::f32), {sum}),
                                    m.add_literal(scale), m.add_literal(bias)});
        auto r =
            m.add_instruction(ew(op::elementwise_kind::relu), {m.add_instruction(convert(t), {n})});
        m.add_return({m.add_instruction(convert(dtype::f32), {r})});
    }
    std::size_t norms = 0;
    for (const instruction& ins : reduced.main()) {
        if (ins.name() != "layer_normalization") continue;
        ++norms;
        EXPECT_EQ(ins.get_shape().type(), t);
        EXPECT_EQ(ins.inputs()[0]->get_shape().type(), t);
        EXPECT_EQ(ins.inputs()[1]->get_shape().type(), dtype::f32);
        EXPECT_EQ(ins.inputs()[2]->get_shape().type(), dtype::f32);
    }
    EXPECT_EQ(norms, 1u) << reduced.to_string();
    const ref::parameter_map params{{"x", random_argument(xs, rng)}};
    expect_same_bits(reduced, by_hand, params);
}

// Softmax and the summing reductions read the 16-bit value and give 16 bits, with the same bits
// as the f32 op between the conversions (written out by hand); max keeps its f32 copy (an empty
// max is its storage type's lowest value).
TEST_P(ReducedPrecision, SoftmaxAndSumsReadTheSixteenBitValue) {
    const dtype t = GetParam();
    const shape xs{dtype::f32, {3, 6, 40}};
    auto ew = [](op::elementwise_kind k) { return op::make_elementwise(k); };
    auto convert = [](dtype to) { return op::make_convert(to); };
    const std::vector<operation> ops{op::softmax{2, false}, op::softmax{1, true},
                                     op::reduce{op::reduce_kind::mean, {2}, true, false},
                                     op::reduce{op::reduce_kind::sum_square, {1, 2}, false, false},
                                     op::reduce{op::reduce_kind::max, {2}, true, false}};
    for (const operation& o : ops) {
        SCOPED_TRACE(o.name());
        program reduced;
        {
            module& m = reduced.main();
            auto x = m.add_parameter("x", xs);
            auto sum = m.add_instruction(ew(op::elementwise_kind::add), {x, x});
            m.add_return(
                {m.add_instruction(ew(op::elementwise_kind::neg), {m.add_instruction(o, {sum})})});
        }
        run_passes(reduced.main(), target_independent_passes(reduced_precision{t}));
        program by_hand;
        {
            module& m = by_hand.main();
            auto x = m.add_instruction(convert(t), {m.add_parameter("x", xs)});
            auto sum = m.add_instruction(ew(op::elementwise_kind::add), {x, x});
            auto r = m.add_instruction(o, {m.add_instruction(convert(dtype::f32), {sum})});
            auto n = m.add_instruction(ew(op::elementwise_kind::neg),
                                       {m.add_instruction(convert(t), {r})});
            m.add_return({m.add_instruction(convert(dtype::f32), {n})});
        }
        const bool sixteen = o.traits().reads_16bit_input;
        EXPECT_EQ(sixteen, o.name() != "reduce_max");
        std::size_t seen = 0;
        for (const instruction& ins : reduced.main()) {
            if (ins.name() != o.name()) continue;
            ++seen;
            const dtype want = sixteen ? t : dtype::f32;
            EXPECT_EQ(ins.inputs()[0]->get_shape().type(), want);
            EXPECT_EQ(ins.get_shape().type(), want);
        }
        EXPECT_EQ(seen, 1u) << reduced.to_string();
        std::mt19937_64 rng(11);
        const ref::parameter_map params{{"x", random_argument(xs, rng)}};
        expect_same_bits(reduced, by_hand, params);
    }
}

// RMSNorm as LLaMA and T5 write it: x * rsqrt(mean(x^2) + eps) * weight. Activations of a few
// hundred square past f16's largest value (65504), so x^2 and what follows it up to the
// reciprocal square root stay in f32 (PyTorch's models cast to f32 there; an f32 export drops
// the cast); the result, back near 1, is 16-bit again.
TEST_P(ReducedPrecision, RmsNormOfLargeActivationsDoesNotOverflow) {
    const dtype t = GetParam();
    const shape xs{dtype::f32, {4, 64}};
    auto ew = [](op::elementwise_kind k) { return op::make_elementwise(k); };
    auto build = [&](program& p) {
        module& m = p.main();
        auto x = m.add_parameter("x", xs);
        auto two = m.add_instruction(op::broadcast{{4, 64}},
                                     {m.add_literal(from_vector<float>(dtype::f32, {1}, {2.0f}))});
        auto square = m.add_instruction(ew(op::elementwise_kind::pow), {x, two});
        auto mean = m.add_instruction(op::reduce{op::reduce_kind::mean, {1}, true}, {square});
        auto eps = m.add_instruction(op::broadcast{{4, 1}},
                                     {m.add_literal(from_vector<float>(dtype::f32, {1}, {1e-6f}))});
        auto root =
            m.add_instruction(ew(op::elementwise_kind::sqrt),
                              {m.add_instruction(ew(op::elementwise_kind::add), {mean, eps})});
        auto inv = m.add_instruction(ew(op::elementwise_kind::reciprocal), {root});
        auto scaled = m.add_instruction(ew(op::elementwise_kind::mul),
                                        {x, m.add_instruction(op::broadcast{{4, 64}}, {inv})});
        m.add_return({scaled});
    };
    program f32_model, reduced;
    build(f32_model);
    build(reduced);
    run_passes(reduced.main(), target_independent_passes(reduced_precision{t}));
    // Rows of rms 300 to 3000.
    std::vector<float> values(4 * 64);
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = u(rng) * 520.0f * float(1 + i / 64 * 3);
    const ref::parameter_map params{{"x", from_vector<float>(dtype::f32, {4, 64}, values)}};
    const auto want = ref::evaluate(f32_model, params).at(0);
    const auto got = ref::evaluate(reduced, params).at(0);
    for (double v : to_vector<double>(got))
        ASSERT_TRUE(std::isfinite(v)) << reduced.to_string();
    EXPECT_LT(relative_rms(got, want), t == dtype::f16 ? 1e-2 : 2e-2) << reduced.to_string();
}

// --narrow-outputs: the returns stay in 16 bits, with the values the f32 returns would carry
// (those are the same 16-bit values converted back, so every one is exact).
TEST_P(ReducedPrecision, NarrowReturnsGiveTheSixteenBitValuesThemselves) {
    const dtype t = GetParam();
    program widened = model(), narrowed = model();
    run_passes(widened.main(), target_independent_passes(reduced_precision{t}));
    run_passes(narrowed.main(), target_independent_passes(reduced_precision{t, true}));
    std::mt19937_64 rng(9);
    const ref::parameter_map params{{"x", random_argument(shape{dtype::f32, {2, 8, 10, 10}}, rng)}};
    const auto wide = ref::evaluate(widened, params);
    const auto narrow = ref::evaluate(narrowed, params);
    ASSERT_EQ(wide.size(), narrow.size());
    for (std::size_t i = 0; i < wide.size(); ++i) {
        EXPECT_EQ(wide[i].get_shape().type(), dtype::f32);
        EXPECT_EQ(narrow[i].get_shape().type(), t) << narrowed.to_string();
        EXPECT_EQ(to_vector<double>(narrow[i]), to_vector<double>(wide[i]));
    }
    // The model's inputs keep their type.
    for (instruction_ref p : narrowed.main().parameters())
        EXPECT_EQ(p->get_shape().type(), dtype::f32);
}

// The model's own 16-bit output (a Cast at its end) keeps its type; only f32 outputs are
// converted back.
TEST_P(ReducedPrecision, AnOutputTheModelGivesInF16KeepsItsType) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {2, 3}});
    auto r = m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {x});
    m.add_return({m.add_instruction(op::make_convert(dtype::f16), {r}), r});
    run_passes(m, target_independent_passes(reduced_precision{GetParam()}));
    const auto returned = m.get_return()->inputs();
    ASSERT_EQ(returned.size(), 2u);
    EXPECT_EQ(returned[0]->get_shape().type(), dtype::f16) << p.to_string();
    EXPECT_EQ(returned[1]->get_shape().type(), dtype::f32) << p.to_string();
}

INSTANTIATE_TEST_SUITE_P(To, ReducedPrecision, ::testing::Values(dtype::f16, dtype::bf16));

} // namespace reduced_precision_test
} // namespace conflux
