// Helpers shared by the pass tests: build a module twice (modules are not copyable), transform
// one, and check that the reference evaluation of both agrees on random inputs.
#pragma once

#include "conflux/ir/program.hpp"
#include "conflux/ref/evaluate.hpp"

#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

namespace conflux::test {

using module_builder = std::function<void(module&)>;

// A literal of random values; deterministic for a given seed so both builds see the same one.
inline argument random_literal(const dims& lens, unsigned seed, float lo = -1, float hi = 1) {
    std::mt19937 rng(seed);
    return from_vector(dtype::f32, lens, random_values(product(lens), rng, lo, hi));
}

inline std::size_t count_named(const module& m, const std::string& name) {
    std::size_t n = 0;
    for (const auto& ins : m)
        n += ins.name() == name;
    return n;
}

// Builds the module twice, applies `transform` to the second copy, validates it, compares the
// results on random f32 inputs and returns the transformed module's text.
inline std::string transform_and_compare(const module_builder& build,
                                         const std::function<void(module&)>& transform,
                                         double tol = 1e-5) {
    program before, after;
    build(before.main());
    build(after.main());
    transform(after.main());
    after.validate();

    std::mt19937 rng(42);
    ref::parameter_map params;
    for (auto* p : before.main().parameters()) {
        const auto* op = p->get_operator().get_if<op::param>();
        params[op->name_] =
            from_vector(dtype::f32, op->shape_.lens(), random_values(op->shape_.elements(), rng));
    }
    auto want = ref::evaluate(before, params);
    auto got = ref::evaluate(after, params);
    EXPECT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
        EXPECT_EQ(got[i].get_shape().lens(), want[i].get_shape().lens()) << "result " << i;
        EXPECT_EQ(got[i].get_shape().type(), want[i].get_shape().type()) << "result " << i;
        auto g = to_vector<double>(got[i]);
        auto w = to_vector<double>(want[i]);
        if (g.size() != w.size()) continue;
        for (std::size_t e = 0; e < g.size(); ++e)
            EXPECT_NEAR(g[e], w[e], tol * (1 + std::abs(w[e])))
                << "result " << i << " element " << e;
    }
    return after.main().to_string();
}

} // namespace conflux::test
