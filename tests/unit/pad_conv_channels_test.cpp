// pad_conv_channels: a channels-last convolution over a few channels reads a copy of its input
// padded with zero channels, and weights padded to match; the result is unchanged (checked on
// the reference target against the unpadded convolution).
#include "conflux/passes/pad_conv_channels.hpp"

#include "conflux/ir/literal_value.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/passes/dce.hpp"
#include "conflux/passes/layout.hpp"
#include "conflux/passes/simplify.hpp"
#include "unit/pass_test_helpers.hpp"

namespace pad_conv_channels_test {

using namespace conflux;
using namespace conflux::test;

namespace {

// As the pipeline runs it: channels-last convolutions with folded weights first. The test
// inputs are small: every size is padded.
void layout_and_pad(module& m) {
    layout_nhwc{}.apply(m);
    simplify{}.apply(m);
    pad_conv_channels{.min_input_bytes = 0}.apply(m);
    dce{}.apply(m);
}

// A stem-like convolution of an NCHW graph input: x [2, C, 11, 11], w [8, C / group, 3, 3].
module_builder stem(std::size_t channels, std::size_t group = 1) {
    return [=](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {2, channels, 11, 11}});
        auto w = m.add_literal(random_literal({8, channels / group, 3, 3}, 5));
        m.add_return(
            {m.add_instruction(op::convolution{{1, 1, 1, 1}, {2, 2}, {1, 1}, group}, {x, w})});
    };
}

const instruction* the_convolution(const program& p) {
    for (const auto& ins : p.main())
        if (ins.name() == "convolution") return &ins;
    return nullptr;
}

} // namespace

TEST(pad_conv_channels, three_channels_read_as_four_with_zero_weights_past_them) {
    auto p = transform_and_compare(stem(3), layout_and_pad);
    EXPECT_EQ(count_named(p.main(), "pad"), 1u) << p.to_string();
    const instruction* conv = the_convolution(p);
    ASSERT_NE(conv, nullptr);
    // The input: [N, H, W, 4], the fourth channel zero.
    const auto* pad = conv->inputs()[0]->get_operator().get_if<op::pad>();
    ASSERT_NE(pad, nullptr) << p.to_string();
    EXPECT_EQ(pad->pads, (std::vector<std::int64_t>{0, 0, 0, 0, 0, 0, 0, 1}));
    EXPECT_EQ(conv->inputs()[0]->get_shape().lens(), (dims{2, 11, 11, 4}));
    // The weights: KRSC with C = 4, the original values first and a zero after them.
    const argument* w = literal_value(conv->inputs()[1]);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->get_shape().lens(), (dims{8, 3, 3, 4}));
    const auto padded = to_vector<float>(w->contiguous());
    const auto kcrs = to_vector<float>(random_literal({8, 3, 3, 3}, 5));
    for (std::size_t k = 0; k < 8; ++k)
        for (std::size_t r = 0; r < 3; ++r)
            for (std::size_t s = 0; s < 3; ++s)
                for (std::size_t c = 0; c < 4; ++c)
                    EXPECT_EQ(padded[((k * 3 + r) * 3 + s) * 4 + c],
                              c < 3 ? kcrs[((k * 3 + c) * 3 + r) * 3 + s] : 0.0f)
                        << k << " " << r << " " << s << " " << c;
}

TEST(pad_conv_channels, one_channel_is_padded_to_eight_bytes) {
    // f32: one channel (4 bytes) becomes two.
    auto p = transform_and_compare(stem(1), layout_and_pad);
    const instruction* conv = the_convolution(p);
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->inputs()[0]->get_shape().lens(), (dims{2, 11, 11, 2}));
    EXPECT_EQ(conv->inputs()[1]->get_shape().lens(), (dims{8, 3, 3, 2}));
}

TEST(pad_conv_channels, aligned_wide_and_grouped_convolutions_stay) {
    // f32: 2 channels are 8 bytes, 4 are 16, 6 are 24 (wider than one vector); 4 channels in
    // two groups would need zeros inside each group.
    for (auto [channels, group] :
         {std::pair<std::size_t, std::size_t>{2, 1}, {4, 1}, {6, 1}, {4, 2}}) {
        auto p = transform_and_compare(stem(channels, group), layout_and_pad);
        EXPECT_EQ(count_named(p.main(), "pad"), 0u) << channels << " channels, group " << group;
    }
}

TEST(pad_conv_channels, inputs_below_the_size_threshold_stay) {
    // [2, 3, 11, 11] f32 is 2,904 bytes.
    auto threshold = [](std::size_t bytes) {
        return [=](module& m) {
            layout_nhwc{}.apply(m);
            simplify{}.apply(m);
            pad_conv_channels{.min_input_bytes = bytes}.apply(m);
            dce{}.apply(m);
        };
    };
    EXPECT_EQ(count_named(transform_and_compare(stem(3), threshold(2905)).main(), "pad"), 0u);
    EXPECT_EQ(count_named(transform_and_compare(stem(3), threshold(2904)).main(), "pad"), 1u);
    // The default keeps a batch-1 ImageNet stem (588 KiB in f32) and pads batch 32.
    const auto image = [](std::size_t batch) {
        return [=](module& m) {
            auto x = m.add_parameter("x", shape{dtype::f32, {batch, 3, 224, 224}});
            auto w = m.add_literal(random_literal({4, 3, 7, 7}, 5));
            m.add_return(
                {m.add_instruction(op::convolution{{3, 3, 3, 3}, {2, 2}, {1, 1}, 1}, {x, w})});
        };
    };
    for (auto [batch, pads] : {std::pair<std::size_t, std::size_t>{1, 0}, {32, 1}}) {
        program p;
        image(batch)(p.main());
        layout_nhwc{}.apply(p.main());
        simplify{}.apply(p.main());
        pad_conv_channels{}.apply(p.main());
        EXPECT_EQ(count_named(p.main(), "pad"), pads) << "batch " << batch;
    }
}

TEST(pad_conv_channels, weights_computed_at_run_time_stay) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {1, 3, 6, 6}});
        auto w = m.add_parameter("w", shape{dtype::f32, {4, 3, 3, 3}});
        m.add_return({m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1}, {x, w})});
    };
    auto p = transform_and_compare(build, layout_and_pad);
    EXPECT_EQ(count_named(p.main(), "pad"), 0u) << p.to_string();
}

} // namespace pad_conv_channels_test
