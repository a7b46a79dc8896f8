// The attention op (its shape rules and reference evaluation against the unfused chain) and the
// fuse_attention pass on the chains PyTorch's exporters write (tests/zoo runs it on every zoo
// transformer through `onnx_conformance --optimize`).
#include "conflux/ops/attention.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"
#include "conflux/passes/fuse_attention.hpp"
#include "unit/pass_test_helpers.hpp"

#include <cmath>
#include <limits>

namespace attention_test {

using namespace conflux;
using namespace conflux::test;
using op::elementwise_kind;

namespace {

auto ew(elementwise_kind k) {
    return op::make_elementwise(k);
}

void run_fuse(module& m) {
    fuse_attention{}.apply(m);
    dce{}.apply(m);
}

const shape q_shape{dtype::f32, {2, 3, 5, 8}};  // [batch, heads, Sq, D]
const shape kt_shape{dtype::f32, {2, 3, 8, 7}}; // [batch, heads, D, Sk]
const shape v_shape{dtype::f32, {2, 3, 7, 4}};  // [batch, heads, Sk, Dv]
const dims scores{2, 3, 5, 7};

instruction_ref scalar(module& m, float value, const dims& lens) {
    auto c = m.add_literal(from_vector(dtype::f32, {}, std::vector<float>{value}));
    return m.add_instruction(op::broadcast{lens}, {c});
}

// torch's SDPA as the dynamo exporter writes it: q and kt each scaled by sqrt(scale), a mask
// added, softmax, the safe-softmax guard, then the product with v.
void sdpa_chain(module& m) {
    auto q = m.add_parameter("q", q_shape);
    auto kt = m.add_parameter("kt", kt_shape);
    auto v = m.add_parameter("v", v_shape);
    auto mask = m.add_parameter("mask", shape{dtype::f32, {2, 1, 1, 7}});
    const float root = std::sqrt(1.0f / std::sqrt(8.0f));
    auto qs = m.add_instruction(ew(elementwise_kind::mul), {q, scalar(m, root, q_shape.lens())});
    auto ks = m.add_instruction(ew(elementwise_kind::mul), {kt, scalar(m, root, kt_shape.lens())});
    auto s = m.add_instruction(op::dot{}, {qs, ks});
    auto mb = m.add_instruction(op::broadcast{scores}, {mask});
    auto biased = m.add_instruction(ew(elementwise_kind::add), {s, mb});
    auto p = m.add_instruction(op::softmax{3}, {biased});
    auto nan = m.add_instruction(ew(elementwise_kind::isnan), {p});
    auto safe = m.add_instruction(ew(elementwise_kind::where), {nan, scalar(m, 0, scores), p});
    m.add_return({m.add_instruction(op::dot{}, {safe, v})});
}

TEST(attention, fuses_sdpa_with_mask_and_safe_softmax) {
    auto p = transform_and_compare(sdpa_chain, run_fuse, 1e-5);
    EXPECT_EQ(count_named(p.main(), "attention"), 1u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "softmax"), 0u);
    EXPECT_EQ(count_named(p.main(), "dot"), 0u);
    for (const auto& ins : p.main())
        if (const auto* a = ins.get_operator().get_if<op::attention>()) {
            EXPECT_NEAR(a->scale, 1.0 / std::sqrt(8.0), 1e-6);
            EXPECT_TRUE(a->zero_nan_rows);
            EXPECT_EQ(ins.inputs().size(), 4u); // with the mask as bias
        }
}

// Hugging Face's mask for unpadded inputs folds to zeros (simplify): the attention takes no bias.
TEST(attention, an_all_zero_constant_bias_is_dropped) {
    auto zero_mask = [](module& m) {
        auto q = m.add_parameter("q", q_shape);
        auto kt = m.add_parameter("kt", kt_shape);
        auto v = m.add_parameter("v", v_shape);
        auto zeros = m.add_literal(from_vector(dtype::f32, {1, 1, 5, 1}, std::vector<float>(5, 0)));
        auto s = m.add_instruction(op::dot{}, {q, kt});
        auto b = m.add_instruction(ew(elementwise_kind::add),
                                   {s, m.add_instruction(op::broadcast{scores}, {zeros})});
        auto p = m.add_instruction(op::softmax{3}, {b});
        m.add_return({m.add_instruction(op::dot{}, {p, v})});
    };
    auto p = transform_and_compare(zero_mask, run_fuse, 1e-5);
    EXPECT_EQ(count_named(p.main(), "attention"), 1u) << p.to_string();
    for (const auto& ins : p.main())
        if (ins.name() == "attention") {
            EXPECT_EQ(ins.inputs().size(), 3u) << p.to_string();
        }
}

// Hugging Face's eager attention: dot, divide by sqrt(d), add the mask, softmax, dot; and
// ViT's: no mask at all.
TEST(attention, fuses_eager_attention_with_a_divisor_and_without_a_mask) {
    auto eager = [](module& m) {
        auto q = m.add_parameter("q", q_shape);
        auto kt = m.add_parameter("kt", kt_shape);
        auto v = m.add_parameter("v", v_shape);
        auto bias = m.add_parameter("bias", shape{dtype::f32, scores});
        auto s = m.add_instruction(op::dot{}, {q, kt});
        auto d = m.add_instruction(ew(elementwise_kind::div), {s, scalar(m, 2.5f, scores)});
        auto b = m.add_instruction(ew(elementwise_kind::add), {bias, d}); // bias first
        m.add_return({m.add_instruction(op::dot{}, {m.add_instruction(op::softmax{3}, {b}), v})});
    };
    auto p = transform_and_compare(eager, run_fuse, 1e-5);
    EXPECT_EQ(count_named(p.main(), "attention"), 1u) << p.to_string();
    auto plain = [](module& m) {
        auto q = m.add_parameter("q", q_shape);
        auto kt = m.add_parameter("kt", kt_shape);
        auto v = m.add_parameter("v", v_shape);
        auto s = m.add_instruction(op::dot{}, {q, kt});
        m.add_return({m.add_instruction(op::dot{}, {m.add_instruction(op::softmax{3}, {s}), v})});
    };
    auto p2 = transform_and_compare(plain, run_fuse, 1e-5);
    EXPECT_EQ(count_named(p2.main(), "attention"), 1u) << p2.to_string();
}

TEST(attention, leaves_chains_it_cannot_represent) {
    // A factor applied after the bias scales the bias too.
    auto scaled_bias = [](module& m) {
        auto q = m.add_parameter("q", q_shape);
        auto kt = m.add_parameter("kt", kt_shape);
        auto v = m.add_parameter("v", v_shape);
        auto bias = m.add_parameter("bias", shape{dtype::f32, scores});
        auto s = m.add_instruction(op::dot{}, {q, kt});
        auto b = m.add_instruction(ew(elementwise_kind::add), {s, bias});
        auto f = m.add_instruction(ew(elementwise_kind::mul), {b, scalar(m, 0.5f, scores)});
        m.add_return({m.add_instruction(op::dot{}, {m.add_instruction(op::softmax{3}, {f}), v})});
    };
    // The probabilities also returned; softmax over another axis; a non-scalar factor.
    auto probabilities_returned = [](module& m) {
        auto q = m.add_parameter("q", q_shape);
        auto kt = m.add_parameter("kt", kt_shape);
        auto v = m.add_parameter("v", v_shape);
        auto pr = m.add_instruction(op::softmax{3}, {m.add_instruction(op::dot{}, {q, kt})});
        m.add_return({m.add_instruction(op::dot{}, {pr, v}), pr});
    };
    auto other_axis = [](module& m) {
        auto q = m.add_parameter("q", q_shape);
        auto kt = m.add_parameter("kt", kt_shape);
        auto v = m.add_parameter("v", shape{dtype::f32, {2, 3, 7, 4}});
        auto pr = m.add_instruction(op::softmax{2}, {m.add_instruction(op::dot{}, {q, kt})});
        m.add_return({m.add_instruction(op::dot{}, {pr, v})});
    };
    auto tensor_factor = [](module& m) {
        auto q = m.add_parameter("q", q_shape);
        auto kt = m.add_parameter("kt", kt_shape);
        auto v = m.add_parameter("v", v_shape);
        auto f = m.add_parameter("f", shape{dtype::f32, scores});
        auto s = m.add_instruction(ew(elementwise_kind::mul),
                                   {m.add_instruction(op::dot{}, {q, kt}), f});
        m.add_return({m.add_instruction(op::dot{}, {m.add_instruction(op::softmax{3}, {s}), v})});
    };
    for (const auto& build : {module_builder(scaled_bias), module_builder(probabilities_returned),
                              module_builder(other_axis), module_builder(tensor_factor)}) {
        auto p = transform_and_compare(build, run_fuse);
        EXPECT_EQ(count_named(p.main(), "attention"), 0u) << p.to_string();
    }
}

// --fp16 keeps softmax in f32 between converts: the chain is still one op, in f16.
TEST(attention, fuses_through_the_converts_of_reduced_precision) {
    auto build = [](module& m) {
        const shape q{dtype::f16, {1, 2, 4, 8}}, kt{dtype::f16, {1, 2, 8, 6}},
            v{dtype::f16, {1, 2, 6, 8}};
        auto qi = m.add_parameter("q", q);
        auto ki = m.add_parameter("kt", kt);
        auto vi = m.add_parameter("v", v);
        auto s = m.add_instruction(op::dot{}, {qi, ki});
        auto up = m.add_instruction(op::make_convert(dtype::f32), {s});
        auto pr = m.add_instruction(op::softmax{3}, {up});
        auto down = m.add_instruction(op::make_convert(dtype::f16), {pr});
        m.add_return({m.add_instruction(op::dot{}, {down, vi})});
    };
    // f16 rounds the scores and probabilities of the unfused chain; the op keeps them in f32.
    auto p = transform_and_compare(build, run_fuse, 5e-3);
    EXPECT_EQ(count_named(p.main(), "attention"), 1u) << p.to_string();
}

argument evaluate_attention(const op::attention& a, const std::vector<argument>& in) {
    std::vector<shape> shapes;
    for (const auto& x : in)
        shapes.push_back(x.get_shape());
    return a.eval(a.compute_shape(shapes), in);
}

TEST(attention, a_fully_masked_row_is_zero_with_the_safe_softmax_and_nan_without) {
    const shape q{dtype::f32, {1, 2, 3}}, kt{dtype::f32, {1, 3, 2}}, v{dtype::f32, {1, 2, 2}};
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<argument> in{
        from_vector(dtype::f32, q.lens(), std::vector<float>{1, 2, 3, 4, 5, 6}),
        from_vector(dtype::f32, kt.lens(), std::vector<float>{1, 0, 0, 1, 1, 1}),
        from_vector(dtype::f32, v.lens(), std::vector<float>{1, 2, 3, 4}),
        // Row 0 sees both keys (no mask), row 1 none.
        from_vector(dtype::f32, {1, 2, 2}, std::vector<float>{0, 0, -inf, -inf})};
    const auto safe = to_vector<double>(evaluate_attention({1.0f, true}, in));
    // Row 0: scores q0 . k = [1 + 3, 2 + 3] = [4, 5]; p = softmax; out = p . v.
    const double e4 = std::exp(4.0), e5 = std::exp(5.0), sum = e4 + e5;
    EXPECT_NEAR(safe[0], (e4 * 1 + e5 * 3) / sum, 1e-5);
    EXPECT_NEAR(safe[1], (e4 * 2 + e5 * 4) / sum, 1e-5);
    EXPECT_EQ(safe[2], 0.0);
    EXPECT_EQ(safe[3], 0.0);
    const auto plain = to_vector<double>(evaluate_attention({1.0f, false}, in));
    EXPECT_TRUE(std::isnan(plain[2]) && std::isnan(plain[3]));
}

TEST(attention, shape_errors_name_the_operands) {
    const op::attention a;
    auto message = [&](const std::vector<shape>& in) {
        try {
            a.compute_shape(in);
        } catch (const user_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message({q_shape, shape{dtype::f32, {2, 3, 6, 7}}, v_shape}).find("do not chain"),
              std::string::npos);
    EXPECT_NE(message({q_shape, shape{dtype::f32, {2, 4, 8, 7}}, shape{dtype::f32, {2, 4, 7, 4}}})
                  .find("batch axes differ"),
              std::string::npos);
    EXPECT_NE(message({q_shape, kt_shape, v_shape, shape{dtype::f32, {2, 3, 5, 6}}}).find("bias"),
              std::string::npos);
    EXPECT_NE(message({q_shape, kt_shape, shape{dtype::f16, {2, 3, 7, 4}}}).find("types differ"),
              std::string::npos);
    EXPECT_EQ(a.compute_shape({q_shape, kt_shape, v_shape}).lens(), (dims{2, 3, 5, 4}));
    const op::attention merged{1.0f, false, {0, 2, 1, 3}};
    EXPECT_EQ(merged.compute_shape({q_shape, kt_shape, v_shape}).lens(), (dims{2, 5, 3, 4}));
    for (const auto& bad : {std::vector<std::int64_t>{0, 2, 1}, {0, 2, 2, 3}, {0, 1, 2, 4}}) {
        try {
            op::attention{1.0f, false, bad}.compute_shape({q_shape, kt_shape, v_shape});
            ADD_FAILURE() << "out_perm of " << bad.size() << " axes accepted";
        } catch (const user_error& e) {
            EXPECT_NE(std::string(e.what()).find("out_perm"), std::string::npos) << e.what();
        }
    }
}

// The heads merged back before the output projection: transpose(attention) -> reshape. The
// transpose becomes the op's out_perm (the kernel writes the merged layout), so the reshape is
// a view; a transpose that would move Dv from the innermost axis stays.
TEST(attention, absorbs_the_transpose_that_merges_the_heads) {
    auto merge_heads = [](std::vector<std::int64_t> perm) {
        return [perm](module& m) {
            auto q = m.add_parameter("q", q_shape);
            auto kt = m.add_parameter("kt", kt_shape);
            auto v = m.add_parameter("v", v_shape);
            auto s = m.add_instruction(op::dot{}, {q, kt});
            auto o = m.add_instruction(op::dot{}, {m.add_instruction(op::softmax{3}, {s}), v});
            auto t = m.add_instruction(op::transpose{perm}, {o});
            m.add_return({m.add_instruction(op::reshape{{2, 5, 12}}, {t})});
        };
    };
    auto p = transform_and_compare(merge_heads({0, 2, 1, 3}), run_fuse, 1e-5);
    EXPECT_EQ(count_named(p.main(), "transpose"), 0u) << p.to_string();
    std::size_t absorbed = 0;
    for (const auto& ins : p.main())
        if (const auto* a = ins.get_operator().get_if<op::attention>()) {
            EXPECT_EQ(a->out_perm, (std::vector<std::int64_t>{0, 2, 1, 3}));
            EXPECT_EQ(ins.get_shape(), (shape{dtype::f32, {2, 5, 3, 4}}));
            ++absorbed;
        }
    EXPECT_EQ(absorbed, 1u);
    auto sequence_first = transform_and_compare(merge_heads({2, 0, 1, 3}), run_fuse, 1e-5);
    EXPECT_EQ(count_named(sequence_first.main(), "transpose"), 0u) << sequence_first.to_string();
    auto kept = transform_and_compare(merge_heads({0, 1, 3, 2}), run_fuse, 1e-5);
    EXPECT_EQ(count_named(kept.main(), "attention"), 1u) << kept.to_string();
    EXPECT_EQ(count_named(kept.main(), "transpose"), 1u) << kept.to_string();
}

} // namespace

// A target that cannot run some attention (the CUDA kernel: f32, head dims over 128) keeps the
// chain and says why; one that can gets the op.
TEST(attention, a_target_obstacle_keeps_the_chain_and_names_the_reason) {
    std::vector<std::string> notes;
    std::vector<std::vector<shape>> asked;
    auto refuse = [&](module& m) {
        fuse_attention{.obstacle =
                           [&](const std::vector<shape>& in) {
                               asked.push_back(in);
                               return std::string("head dim 8 is too small for this test");
                           },
                       .note = [&](const std::string& n) { notes.push_back(n); }}
            .apply(m);
        dce{}.apply(m);
    };
    auto p = transform_and_compare(sdpa_chain, refuse, 0);
    EXPECT_EQ(count_named(p.main(), "attention"), 0u) << p.to_string();
    EXPECT_EQ(count_named(p.main(), "softmax"), 1u);
    ASSERT_EQ(asked.size(), 1u);
    ASSERT_EQ(asked[0].size(), 4u); // q, kt, v and the mask
    EXPECT_EQ(asked[0][0].lens(), q_shape.lens());
    EXPECT_EQ(asked[0][1].lens(), kt_shape.lens());
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("head dim 8 is too small for this test"), std::string::npos)
        << notes[0];
    EXPECT_NE(notes[0].find("unfused"), std::string::npos) << notes[0];

    auto accept = [](module& m) {
        fuse_attention{.obstacle = [](const std::vector<shape>&) { return std::string(); }}.apply(
            m);
        dce{}.apply(m);
    };
    auto p2 = transform_and_compare(sdpa_chain, accept, 1e-5);
    EXPECT_EQ(count_named(p2.main(), "attention"), 1u) << p2.to_string();
}

namespace {

// LLaMA's grouped-query attention: 4 query heads, 2 key/value heads each repeated twice by
// unsqueeze -> broadcast -> reshape (a copy: the repeat axis has stride 0).
instruction_ref repeat_heads(module& m, instruction_ref kv) {
    auto u = m.add_instruction(op::unsqueeze{{2}}, {kv});
    auto b = m.add_instruction(op::broadcast{{2, 2, 2, 7, 8}}, {u});
    return m.add_instruction(op::reshape{{2, 4, 7, 8}}, {b});
}

void grouped_query_chain(module& m, bool repeat_keys, bool repeat_values) {
    auto q = m.add_parameter("q", shape{dtype::f32, {2, 4, 5, 8}});
    auto k = repeat_keys ? repeat_heads(m, m.add_parameter("k", shape{dtype::f32, {2, 2, 7, 8}}))
                         : m.add_parameter("k", shape{dtype::f32, {2, 4, 7, 8}});
    auto v = repeat_values ? repeat_heads(m, m.add_parameter("v", shape{dtype::f32, {2, 2, 7, 8}}))
                           : m.add_parameter("v", shape{dtype::f32, {2, 4, 7, 8}});
    auto kt = m.add_instruction(op::transpose{{0, 1, 3, 2}}, {k});
    auto s = m.add_instruction(op::dot{}, {q, kt});
    auto mask = m.add_parameter("mask", shape{dtype::f32, {1, 1, 5, 7}});
    auto biased = m.add_instruction(ew(elementwise_kind::add),
                                    {s, m.add_instruction(op::broadcast{{2, 4, 5, 7}}, {mask})});
    auto o = m.add_instruction(op::dot{}, {m.add_instruction(op::softmax{3}, {biased}), v});
    auto t = m.add_instruction(op::transpose{{0, 2, 1, 3}}, {o});
    m.add_return({m.add_instruction(op::reshape{{2, 5, 32}}, {t})});
}

// The reshapes that cannot be views (the copies) in a module.
std::size_t copying_reshapes(const module& m) {
    std::size_t n = 0;
    for (const auto& ins : m)
        if (ins.get_operator().get_if<op::reshape>() != nullptr &&
            !op::reshape_as_view(ins.inputs().front()->get_shape(), ins.get_shape().lens()))
            ++n;
    return n;
}

} // namespace

TEST(attention, grouped_query_heads_are_not_repeated) {
    for (const auto& repeated : {std::pair{true, true}, {true, false}, {false, true}}) {
        auto p = transform_and_compare(
            [repeated](module& m) { grouped_query_chain(m, repeated.first, repeated.second); },
            run_fuse, 1e-5);
        EXPECT_EQ(copying_reshapes(p.main()), 0u) << p.to_string();
        std::size_t grouped = 0;
        for (const auto& ins : p.main())
            if (const auto* a = ins.get_operator().get_if<op::attention>()) {
                // [batch, kv heads, repeat, Sq, Dv] stored as [batch, Sq, kv heads, repeat, Dv].
                EXPECT_EQ(a->out_perm, (std::vector<std::int64_t>{0, 3, 1, 2, 4}));
                EXPECT_EQ(ins.get_shape().lens(), (dims{2, 5, 2, 2, 8}));
                EXPECT_EQ(ins.inputs()[2]->get_shape().lens(), (dims{2, 2, 2, 7, 8}));
                ++grouped;
            }
        EXPECT_EQ(grouped, 1u) << p.to_string();
    }
}

TEST(attention, a_repeat_the_heads_axis_cannot_split_into_stays_a_copy) {
    // The repeat outside the kv heads ([batch, r, kv, ..]): head h is kv head h % 2, which a
    // split axis cannot express; the keys are copied as before.
    auto p = transform_and_compare(
        [](module& m) {
            auto q = m.add_parameter("q", shape{dtype::f32, {2, 4, 5, 8}});
            auto k = m.add_parameter("k", shape{dtype::f32, {2, 2, 7, 8}});
            auto u = m.add_instruction(op::unsqueeze{{1}}, {k});
            auto b = m.add_instruction(op::broadcast{{2, 2, 2, 7, 8}}, {u});
            auto kr = m.add_instruction(op::reshape{{2, 4, 7, 8}}, {b});
            auto kt = m.add_instruction(op::transpose{{0, 1, 3, 2}}, {kr});
            auto v = m.add_parameter("v", shape{dtype::f32, {2, 4, 7, 8}});
            auto s = m.add_instruction(op::dot{}, {q, kt});
            m.add_return(
                {m.add_instruction(op::dot{}, {m.add_instruction(op::softmax{3}, {s}), v})});
        },
        run_fuse, 1e-5);
    EXPECT_EQ(count_named(p.main(), "attention"), 1u) << p.to_string();
    EXPECT_EQ(copying_reshapes(p.main()), 1u) << p.to_string();
}

} // namespace attention_test
