// simplify's global-pool rewrite: a pooling window over the whole image becomes a mean / max
// reduction with the same values; other windows stay pools.
#include "conflux/ops/pooling.hpp"
#include "conflux/passes/simplify.hpp"
#include "unit/pass_test_helpers.hpp"

namespace simplify_pool_test {

using namespace conflux;
using namespace conflux::test;

namespace {

void run_simplify(module& m) {
    simplify{}.apply(m);
}

module_builder pool(op::pooling_mode mode, std::vector<std::size_t> window,
                    std::vector<std::size_t> padding = {0, 0, 0, 0}, bool channels_last = false) {
    return [=](module& m) {
        const dims lens = channels_last ? dims{2, 5, 7, 3} : dims{2, 3, 5, 7};
        auto x = m.add_parameter("x", shape{dtype::f32, lens});
        op::pooling p;
        p.mode = mode;
        p.lengths = window;
        p.stride = {1, 1};
        p.dilation = {1, 1};
        p.padding = padding;
        p.channels_last = channels_last;
        m.add_return({m.add_instruction(p, {x})});
    };
}

TEST(simplify_pool, global_average_and_max_pools_become_reductions) {
    auto avg = transform_and_compare(pool(op::pooling_mode::average, {5, 7}), run_simplify);
    EXPECT_EQ(count_named(avg.main(), "reduce_mean"), 1u) << avg.to_string();
    EXPECT_EQ(count_named(avg.main(), "average_pool"), 0u);
    auto mx = transform_and_compare(pool(op::pooling_mode::max, {5, 7}), run_simplify);
    EXPECT_EQ(count_named(mx.main(), "reduce_max"), 1u) << mx.to_string();
    auto nhwc = transform_and_compare(pool(op::pooling_mode::average, {5, 7}, {0, 0, 0, 0}, true),
                                      run_simplify);
    EXPECT_EQ(count_named(nhwc.main(), "reduce_mean"), 1u) << nhwc.to_string();
}

TEST(simplify_pool, windows_smaller_than_the_image_or_padded_stay_pools) {
    auto part = transform_and_compare(pool(op::pooling_mode::average, {5, 6}), run_simplify);
    EXPECT_EQ(count_named(part.main(), "average_pool"), 1u) << part.to_string();
    // Padding changes the mean's divisor (or the window count): not a plain reduction.
    auto padded =
        transform_and_compare(pool(op::pooling_mode::average, {5, 7}, {1, 1, 1, 1}), run_simplify);
    EXPECT_EQ(count_named(padded.main(), "average_pool"), 1u) << padded.to_string();
}

} // namespace

} // namespace simplify_pool_test
