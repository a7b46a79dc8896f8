// Property (docs/ARCHITECTURE.md, "IR"): for random fused-gemm-like modules, every legal split
// evaluates, part by part, to what the whole module evaluates to. Graphs come from a fixed list of
// seeds so a failure reproduces; the seed is in the failure message.
#include "conflux/ir/program.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/ref/evaluate.hpp"
#include "cuda/lower/fused_op_splits.hpp"
#include "property/random_graph.hpp"
#include "unit/split_eval.hpp"
#include "unit/split_points.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <set>

using namespace conflux;
using conflux::cuda::find_tail_splits;
using conflux::test::check_pointwise_only;
using conflux::test::find_gemm_split;

using test::close;
using test::generate;
using test::random_args;
using rng_t = test::rng_t;

TEST(split_property, parts_in_sequence_equal_the_whole) {
    auto start = std::chrono::steady_clock::now();
    std::size_t graphs = 0, two_way = 0, three_way = 0;
    for (unsigned seed = 1; seed <= 1000; ++seed) {
        auto g = generate(seed);
        const auto& m = g.p.main();
        rng_t rng(seed * 7919u);
        auto args = random_args(m, rng);
        auto values = test::bind_parameters(m, args);
        auto want = ref::evaluate(m, args);
        auto params = m.parameters();
        auto context = [&] {
            return "seed " + std::to_string(seed) + ": " + g.description + "\n" + m.to_string();
        };
        ++graphs;

        // Gemm split points: how far the kernel gets when it may hold up to `budget` pointwise
        // ops. Budget 0 is the predicate that accepts nothing: the anchor itself.
        std::vector<instruction_ref> gemm_points;
        for (std::size_t budget = 0;; ++budget) {
            std::size_t taken = 0;
            auto point = find_gemm_split(g.anchor, [&](instruction_ref ins) {
                return ins->get_operator().traits().pointwise && taken++ < budget;
            });
            if (!gemm_points.empty() && point == gemm_points.back()) break;
            gemm_points.push_back(point);
        }
        ASSERT_EQ(gemm_points.front(), g.anchor) << context();
        auto tails = find_tail_splits(m);

        for (auto* point : gemm_points) {
            auto parts = m.split(params, {point});
            ASSERT_TRUE(close(test::evaluate_split(parts, values), want))
                << "2-way at the gemm split, " << context();
            ++two_way;
            auto three = m.split(params, {point}, tails);
            ASSERT_EQ(three.size(), 3u);
            ASSERT_NO_THROW(check_pointwise_only(*three[1].mod)) << context();
            ASSERT_TRUE(close(test::evaluate_split(three, values), want)) << "3-way, " << context();
            ++three_way;
        }
        // The pointwise|layout boundary alone.
        auto at_tail = m.split(params, tails);
        ASSERT_TRUE(close(test::evaluate_split(at_tail, values), want))
            << "2-way at the tail, " << context();
        ++two_way;
    }
    if (std::getenv("SPLIT_PROPERTY_DUMP")) std::cout << generate(3).p.to_string();
    auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "split_property: " << graphs << " graphs, " << two_way << " 2-way and "
              << three_way << " 3-way splits checked in " << seconds << " s\n";
}
