// Property (issue: graph passes): random anchor + pointwise DAG + layout tail graphs go through
// the full target-independent pipeline; then every legal 2-way and 3-way split of every fused
// gemm op replaces that op by its parts (as the CUDA target will when a perf config cannot hold
// the fused module) and the program still computes what the unoptimised graph computes.
#include "conflux/ops/fused.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/ref/evaluate.hpp"
#include "cuda/lower/fused_op_splits.hpp"
#include "property/random_graph.hpp"
#include "unit/split_points.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>

using namespace conflux;
using conflux::cuda::find_tail_splits;
using conflux::test::check_pointwise_only;
using conflux::test::find_gemm_split;

namespace {

std::vector<instruction_ref> fused_ops(const module& m) {
    std::vector<instruction_ref> out;
    for (const auto& ins : m)
        if (ins.name() == "fused_gemm") out.push_back(const_cast<instruction_ref>(&ins));
    return out;
}

instruction_ref anchor_of(const module& sub) {
    for (const auto& ins : sub)
        if (ins.get_operator().traits().anchor) return const_cast<instruction_ref>(&ins);
    throw_internal_error("fused module ", sub.name(), " has no anchor");
}

// The gemm split points a kernel reaches when it may hold views and up to `budget` pointwise
// ops, for every budget until the point stops moving.
std::vector<instruction_ref> gemm_split_points(instruction_ref anchor) {
    std::vector<instruction_ref> points;
    for (std::size_t budget = 0;; ++budget) {
        std::size_t taken = 0;
        auto point = find_gemm_split(anchor, [&](instruction_ref ins) {
            auto t = ins->get_operator().traits();
            return t.view || (t.pointwise && taken++ < budget);
        });
        if (!points.empty() && point == points.back()) break;
        points.push_back(point);
    }
    return points;
}

// Replaces `fused` in `m` by one fused_gemm instruction per part, wired as split_input says.
void replace_with_parts(module& m, instruction_ref fused, const std::vector<split_part>& parts,
                        const std::vector<instruction_ref>& sub_params) {
    std::vector<instruction_ref> calls;
    auto result_of = [&](int part, std::size_t output) {
        auto* call = calls.at(std::size_t(part));
        if (!call->get_shape().is_tuple()) return call;
        return m.insert_instruction(fused, op::get_tuple_elem{output}, {call});
    };
    for (const auto& part : parts) {
        std::vector<instruction_ref> inputs;
        for (const auto& in : part.inputs) {
            if (in.is_placeholder()) {
                inputs.push_back(result_of(in.part, in.output));
                continue;
            }
            auto it = std::find(sub_params.begin(), sub_params.end(), in.arg);
            CONFLUX_ASSERT(it != sub_params.end(), "split input is not a submodule parameter");
            inputs.push_back(fused->inputs().at(std::size_t(it - sub_params.begin())));
        }
        calls.push_back(m.insert_instruction(fused, op::fused_gemm{}, inputs, {part.mod}));
    }
    m.replace_all_uses(fused, calls.back());
}

// A 3-way split needs a pointwise part: every tail split point must come after the gemm split
// point (when the kernel already holds the whole chain up to the tail there is nothing between).
bool three_way_legal(const module& sub, instruction_ref point,
                     const std::vector<instruction_ref>& tails) {
    std::size_t position = 0, point_position = 0;
    std::map<instruction_ref, std::size_t> positions;
    for (const auto& ins : sub) {
        if (&ins == point) point_position = position;
        positions[const_cast<instruction_ref>(&ins)] = position++;
    }
    return std::all_of(tails.begin(), tails.end(),
                       [&](instruction_ref t) { return positions.at(t) > point_position; });
}

} // namespace

TEST(pipeline_property, passes_and_every_split_keep_results) {
    auto start = std::chrono::steady_clock::now();
    std::size_t graphs = 0, fused = 0, two_way = 0, three_way = 0;
    for (unsigned seed = 1; seed <= 2000; ++seed) {
        auto context = [&](const program& p) {
            return "seed " + std::to_string(seed) + ":\n" + p.to_string();
        };
        auto original = test::generate(seed);
        test::rng_t rng(seed * 104729u);
        auto args = test::random_args(original.p.main(), rng);
        auto want = ref::evaluate(original.p.main(), args);
        ++graphs;

        auto optimized = test::generate(seed);
        run_passes(optimized.p.main(), target_independent_passes());
        ASSERT_TRUE(test::close(ref::evaluate(optimized.p.main(), args), want))
            << "after the pipeline, " << context(optimized.p);

        auto fused_count = fused_ops(optimized.p.main()).size();
        fused += fused_count;
        for (std::size_t f = 0; f < fused_count; ++f) {
            // Splitting adds modules and rewrites main, so each split starts from a fresh copy.
            auto fresh = [&] {
                auto g = test::generate(seed);
                run_passes(g.p.main(), target_independent_passes());
                return g;
            };
            auto probe = fresh();
            const module& sub = *fused_ops(probe.p.main())[f]->module_inputs().front();
            auto points = gemm_split_points(anchor_of(sub)).size();
            for (std::size_t i = 0; i < points; ++i) {
                for (bool three : {false, true}) {
                    auto g = fresh();
                    auto* op = fused_ops(g.p.main())[f];
                    const module& s = *op->module_inputs().front();
                    auto params = s.parameters();
                    auto point = gemm_split_points(anchor_of(s))[i];
                    if (three && !three_way_legal(s, point, find_tail_splits(s))) continue;
                    auto parts = three ? s.split(params, {point}, find_tail_splits(s))
                                       : s.split(params, {point});
                    if (three) {
                        ASSERT_NO_THROW(check_pointwise_only(*parts[1].mod)) << context(g.p);
                    }
                    replace_with_parts(g.p.main(), op, parts, params);
                    g.p.validate();
                    ASSERT_TRUE(test::close(ref::evaluate(g.p.main(), args), want))
                        << (three ? "3-way" : "2-way") << " split " << i << " of fused op " << f
                        << ", " << context(g.p);
                    ++(three ? three_way : two_way);
                }
            }
        }
    }
    EXPECT_GE(fused, graphs); // every graph has an anchor, so at least one fused op
    auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "pipeline_property: " << graphs << " graphs, " << fused << " fused ops, "
              << two_way << " 2-way and " << three_way << " 3-way splits checked in " << seconds
              << " s\n";
}
