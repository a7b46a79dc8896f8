// module::split and the split-point finders (docs/ARCHITECTURE.md, "Compiling a fused gemm op"):
// every split is checked by evaluating its parts in sequence against the whole module.
#include "conflux/ir/program.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/ref/evaluate.hpp"
#include "cuda/lower/fused_op_splits.hpp"
#include "split_eval.hpp"
#include "test_helpers.hpp"
#include "unit/split_points.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace module_split_test {

using namespace conflux;
using conflux::cuda::find_tail_splits;
using conflux::test::check_pointwise_only;
using conflux::test::find_gemm_split;

namespace {

std::vector<argument> random_args(const module& m, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<argument> args;
    for (auto* p : m.parameters()) {
        const auto& lens = p->get_shape().lens();
        args.push_back(
            from_vector(dtype::f32, lens, test::random_values(test::product(lens), rng)));
    }
    return args;
}

void expect_close(const std::vector<argument>& got, const std::vector<argument>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].get_shape().lens(), want[i].get_shape().lens()) << "return " << i;
        auto g = to_vector<float>(got[i]);
        auto w = to_vector<float>(want[i]);
        for (std::size_t j = 0; j < g.size(); ++j)
            ASSERT_NEAR(g[j], w[j], 1e-6f * (1 + std::abs(w[j]))) << "return " << i << " at " << j;
    }
}

// Splits `m` (its own parameters standing for the call's arguments) and checks the parts
// against the whole on random inputs; the original module must come out unchanged.
std::vector<split_part> check_split(const module& m, const std::vector<instruction_ref>& s1,
                                    const std::vector<instruction_ref>& s2 = {}) {
    auto before = m.to_string();
    auto params = m.parameters();
    auto parts = s2.empty() ? m.split(params, s1) : m.split(params, s1, s2);
    EXPECT_EQ(m.to_string(), before);
    for (const auto& part : parts) {
        EXPECT_NO_THROW(part.mod->validate()) << part.mod->to_string();
        EXPECT_EQ(part.inputs.size(), part.mod->parameters().size());
    }
    auto args = random_args(m, 7);
    expect_close(test::evaluate_split(parts, test::bind_parameters(m, args)),
                 ref::evaluate(m, args));
    return parts;
}

// conv(x, w) + broadcast(bias) -> relu: the fused gemm op of every CNN.
struct conv_add_relu {
    program p;
    instruction_ref x, w, bias, conv, add, relu;
    conv_add_relu() {
        auto& m = p.main();
        x = m.add_parameter("x", shape{dtype::f32, {1, 3, 6, 6}});
        w = m.add_parameter("w", shape{dtype::f32, {4, 3, 3, 3}});
        bias = m.add_parameter("bias", shape{dtype::f32, {4, 1, 1}});
        conv = m.add_instruction(op::convolution{}, {x, w});
        auto b = m.add_instruction(op::broadcast{{1, 4, 4, 4}}, {bias});
        add = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {conv, b});
        relu = m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {add});
    }
};

} // namespace

TEST(module_split, two_way_at_the_convolution) {
    conv_add_relu g;
    auto& m = g.p.main();
    m.add_return({g.relu}, {"y"});
    auto parts = check_split(m, {g.conv});
    ASSERT_EQ(parts.size(), 2u);
    // Part 1 reads x and w and returns the convolution.
    ASSERT_EQ(parts[0].inputs.size(), 2u);
    EXPECT_EQ(parts[0].inputs[0].arg, g.x);
    EXPECT_EQ(parts[0].inputs[1].arg, g.w);
    EXPECT_EQ(parts[0].mod->get_return()->inputs().at(0)->name(), "convolution");
    // Part 2: the split parameter (standard shape) first, then the bias.
    auto p2 = parts[1].mod->parameters();
    ASSERT_EQ(p2.size(), 2u);
    EXPECT_EQ(p2[0]->get_operator().get_if<op::param>()->name_, "split0");
    EXPECT_TRUE(p2[0]->get_shape().standard());
    EXPECT_TRUE(parts[1].inputs[0].is_placeholder());
    EXPECT_EQ(parts[1].inputs[0].part, 0);
    EXPECT_EQ(parts[1].inputs[0].output, 0u);
    EXPECT_EQ(parts[1].inputs[1].arg, g.bias);
    EXPECT_EQ(parts[1].mod->output_names(), std::vector<std::string>{"y"});
    EXPECT_NO_THROW(check_pointwise_only(*parts[1].mod));
    // The parts are modules of the program.
    EXPECT_EQ(g.p.get_module(parts[0].mod->name()), parts[0].mod);
    EXPECT_EQ(g.p.get_module(parts[1].mod->name()), parts[1].mod);
}

TEST(module_split, three_way_gemm_pointwise_layout) {
    conv_add_relu g;
    auto& m = g.p.main();
    auto t = m.add_instruction(op::transpose{{0, 2, 3, 1}}, {g.relu});
    auto r = m.add_instruction(op::reshape{{16, 4}}, {t});
    m.add_return({r});
    auto tails = find_tail_splits(m);
    ASSERT_EQ(tails, std::vector<instruction_ref>{g.relu});
    auto parts = check_split(m, {g.conv}, tails);
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(g.p.modules().size(), 4u) << "no stray module may be left behind";
    // Middle: pointwise only, reading the gemm result and the bias.
    EXPECT_NO_THROW(check_pointwise_only(*parts[1].mod));
    ASSERT_EQ(parts[1].inputs.size(), 2u);
    EXPECT_EQ(parts[1].inputs[0].part, 0);
    EXPECT_EQ(parts[1].inputs[1].arg, g.bias);
    // Last: only the layout tail on the pointwise result.
    ASSERT_EQ(parts[2].inputs.size(), 1u);
    EXPECT_EQ(parts[2].inputs[0].part, 1);
    EXPECT_EQ(parts[2].inputs[0].output, 0u);
    for (const auto& ins : *parts[2].mod)
        EXPECT_TRUE(ins.is_param() || ins.is_return() || ins.get_operator().traits().layout_only)
            << ins.name();
}

TEST(module_split, several_returns) {
    conv_add_relu g;
    auto& m = g.p.main();
    auto r = m.add_instruction(op::reshape{{4, 16}}, {g.relu});
    auto t = m.add_instruction(op::transpose{{0, 2, 3, 1}}, {g.add});
    m.add_return({r, t, g.relu}, {"a", "b", "c"});
    auto two = check_split(m, {g.conv});
    EXPECT_EQ(two[1].mod->output_names(), (std::vector<std::string>{"a", "b", "c"}));
    auto tails = find_tail_splits(m);
    ASSERT_EQ(tails, (std::vector<instruction_ref>{g.relu, g.add, g.relu}));
    auto three = check_split(m, {g.conv}, tails);
    ASSERT_EQ(three.size(), 3u);
    EXPECT_EQ(three[1].mod->get_return()->inputs().size(), 3u);
}

TEST(module_split, parameter_read_by_several_parts) {
    program p;
    auto& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {1, 2, 5, 5}});
    auto w = m.add_parameter("w", shape{dtype::f32, {2, 2, 3, 3}});
    auto conv = m.add_instruction(op::convolution{{1, 1, 1, 1}, {}, {}, 1}, {x, w});
    auto add = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {conv, x});
    auto t = m.add_instruction(op::transpose{{0, 3, 1, 2}}, {add});
    auto t2 = m.add_instruction(op::transpose{{0, 2, 1, 3}}, {x});
    m.add_return({t, t2});
    auto parts = check_split(m, {conv});
    ASSERT_EQ(parts[1].inputs.size(), 2u);
    EXPECT_EQ(parts[0].inputs[0].arg, x);
    EXPECT_EQ(parts[1].inputs[1].arg, x);
    EXPECT_EQ(parts[1].mod->parameters()[1]->get_operator().get_if<op::param>()->name_, "x");
    // The tail of the second return starts at x itself: the middle part passes x on (one new
    // parameter per split value), so x is an argument of the first two parts only.
    auto tails = find_tail_splits(m);
    ASSERT_EQ(tails, (std::vector<instruction_ref>{add, x}));
    auto three = check_split(m, {conv}, tails);
    for (std::size_t i = 0; i < three.size(); ++i) {
        bool reads_x = false;
        for (const auto& in : three[i].inputs)
            reads_x = reads_x || (!in.is_placeholder() && in.arg == x);
        EXPECT_EQ(reads_x, i < 2) << three[i].mod->to_string();
    }
}

TEST(module_split, split_value_also_returned) {
    conv_add_relu g;
    auto& m = g.p.main();
    auto r = m.add_instruction(op::reshape{{4, 4, 4}}, {g.relu});
    m.add_return({r, g.conv});
    auto parts = check_split(m, {g.conv});
    // The second return of part 2 is the split parameter itself.
    EXPECT_TRUE(parts[1].mod->get_return()->inputs().at(1)->is_param());
    auto tails = find_tail_splits(m);
    ASSERT_EQ(tails, (std::vector<instruction_ref>{g.relu, g.conv}));
    auto three = check_split(m, {g.conv}, tails);
    // The middle part passes the gemm result on as its second output.
    EXPECT_TRUE(three[1].mod->get_return()->inputs().at(1)->is_param());
    for (const auto& in : three[2].inputs)
        EXPECT_EQ(in.part, 1);
    // Its parameter names stay unique although it sees both splits' parameters.
    std::set<std::string> names;
    for (auto* prm : three[2].mod->parameters())
        EXPECT_TRUE(names.insert(prm->get_operator().get_if<op::param>()->name_).second);
}

TEST(module_split, dot_with_two_split_values) {
    program p;
    auto& m = p.main();
    auto a = m.add_parameter("a", shape{dtype::f32, {3, 5}});
    auto b = m.add_parameter("b", shape{dtype::f32, {5, 4}});
    auto c = m.add_parameter("c", shape{dtype::f32, {3, 4}});
    auto d = m.add_instruction(op::dot{}, {a, b});
    auto e = m.add_instruction(op::make_elementwise(op::elementwise_kind::exp), {c});
    auto mul = m.add_instruction(op::make_elementwise(op::elementwise_kind::mul), {d, e});
    auto u = m.add_instruction(op::unsqueeze{{0}}, {mul});
    m.add_return({u});
    auto parts = check_split(m, {d, e});
    EXPECT_EQ(parts[0].mod->get_return()->inputs().size(), 2u);
    EXPECT_EQ(parts[1].inputs.size(), 2u) << "c is read only by part 1";
    check_split(m, {d}, find_tail_splits(m));
}

TEST(split_points, tail_splits_over_zero_to_two_layout_ops) {
    program p;
    auto& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {2, 3, 4}});
    auto relu = m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {x});
    auto neg = m.add_instruction(op::make_elementwise(op::elementwise_kind::neg), {x});
    auto sq = m.add_instruction(op::unsqueeze{{0}}, {neg});
    auto t = m.add_instruction(op::transpose{{1, 0, 2}}, {relu});
    auto f = m.add_instruction(op::flatten{1}, {t});
    m.add_return({relu, f, sq});
    EXPECT_EQ(find_tail_splits(m), (std::vector<instruction_ref>{relu, relu, neg}));
}

TEST(split_points, gemm_split_walks_single_use_users_the_predicate_accepts) {
    conv_add_relu g;
    auto& m = g.p.main();
    auto t = m.add_instruction(op::transpose{{0, 2, 3, 1}}, {g.relu});
    m.add_return({t});
    auto pointwise = [](instruction_ref i) { return i->get_operator().traits().pointwise; };
    auto nothing = [](instruction_ref) { return false; };
    auto everything = [](instruction_ref) { return true; };
    EXPECT_EQ(find_gemm_split(g.conv, pointwise), g.relu);
    EXPECT_EQ(find_gemm_split(g.conv, nothing), g.conv);
    EXPECT_EQ(find_gemm_split(g.conv, everything), t) << "never past the return";
    auto only_add = [](instruction_ref i) { return i->name() == "add"; };
    EXPECT_EQ(find_gemm_split(g.conv, only_add), g.add);
}

TEST(split_points, gemm_split_stops_at_a_value_with_several_users) {
    conv_add_relu g;
    auto& m = g.p.main();
    m.add_return({g.relu, g.add});
    auto everything = [](instruction_ref) { return true; };
    EXPECT_EQ(find_gemm_split(g.conv, everything), g.add);
    check_split(m, {find_gemm_split(g.conv, everything)});
}

TEST(split_points, pointwise_only_check) {
    program p;
    auto& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {2, 3}});
    auto y = m.add_parameter("y", shape{dtype::f32, {3}});
    auto b = m.add_instruction(op::broadcast{{2, 3}}, {y});
    auto add = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {x, b});
    m.add_return({add});
    EXPECT_NO_THROW(check_pointwise_only(m));

    program q;
    auto& n = q.main();
    auto xi = n.add_parameter("x", shape{dtype::f32, {1, 2, 4, 4}});
    auto wi = n.add_parameter("w", shape{dtype::f32, {2, 2, 1, 1}});
    auto c = n.add_instruction(op::convolution{}, {xi, wi});
    auto r = n.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {c});
    n.add_return({r});
    try {
        check_pointwise_only(n);
        FAIL() << "a convolution passed the pointwise check";
    } catch (const internal_error& e) {
        std::string what = e.what();
        EXPECT_NE(what.find("@2"), std::string::npos) << what;
        EXPECT_NE(what.find("convolution"), std::string::npos) << what;
    }
}

TEST(split_points, pointwise_only_accepts_a_layout_change_of_a_computed_value) {
    program p;
    auto& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {2, 3}});
    auto e = m.add_instruction(op::make_elementwise(op::elementwise_kind::exp), {x});
    auto t = m.add_instruction(op::transpose{{1, 0}}, {e});
    m.add_return({t});
    EXPECT_NO_THROW(check_pointwise_only(m));
}

TEST(split_points, pointwise_only_rejects_a_replicating_view_of_a_computed_value) {
    program p;
    auto& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {3}});
    auto e = m.add_instruction(op::make_elementwise(op::elementwise_kind::exp), {x});
    auto b = m.add_instruction(op::broadcast{{2, 3}}, {e});
    m.add_return({b});
    EXPECT_THROW(check_pointwise_only(m), internal_error);
    EXPECT_TRUE(b->get_operator().traits().view);
    EXPECT_FALSE(b->get_operator().traits().layout_only);
}

} // namespace module_split_test
