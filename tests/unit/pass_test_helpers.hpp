// Helpers shared by the pass tests: build a program twice from one builder (modules are not
// copyable), transform one copy, and check that both give the same reference results on random
// inputs.
#pragma once

#include "conflux/ir/program.hpp"
#include "conflux/ref/evaluate.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <sstream>
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

// Random values for every parameter of `m`.
inline ref::parameter_map random_parameters(const module& m, unsigned seed = 7) {
    std::mt19937 rng(seed);
    ref::parameter_map params;
    for (auto* p : m.parameters()) {
        const auto& lens = p->get_shape().lens();
        params[p->get_operator().get_if<op::param>()->name_] =
            from_vector(p->get_shape().type(), lens, random_values(product(lens), rng));
    }
    return params;
}

// Builds `build` twice, applies `transform` to the second copy, checks that it validates and
// gives the first copy's reference results (relative tolerance `tol`). Returns the transformed
// program for structural checks.
inline program transform_and_compare(const module_builder& build,
                                     const std::function<void(module&)>& transform,
                                     double tol = 1e-5) {
    program before, after;
    build(before.main());
    build(after.main());
    transform(after.main());
    EXPECT_NO_THROW(after.validate()) << after.to_string();
    auto params = random_parameters(before.main());
    auto want = ref::evaluate(before, params);
    auto got = ref::evaluate(after, params);
    EXPECT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
        EXPECT_EQ(want[i].get_shape().lens(), got[i].get_shape().lens()) << "output " << i;
        EXPECT_EQ(want[i].get_shape().type(), got[i].get_shape().type()) << "output " << i;
        auto a = to_vector<double>(want[i]);
        auto b = to_vector<double>(got[i]);
        EXPECT_EQ(a.size(), b.size());
        // First mismatch only: one wrong rewrite would otherwise print thousands of lines.
        for (std::size_t j = 0; j < std::min(a.size(), b.size()); ++j) {
            // Equal infinities (a mask's -inf) and NaN against NaN match too.
            const bool same = a[j] == b[j] || (std::isnan(a[j]) && std::isnan(b[j]));
            if (!same && !(std::abs(a[j] - b[j]) <= tol * (1 + std::abs(a[j])))) {
                ADD_FAILURE() << "output " << i << " element " << j << ": " << a[j] << " vs "
                              << b[j] << "\n"
                              << after.to_string();
                break;
            }
        }
    }
    return after;
}

// The same, returning the transformed main module's text.
inline std::string transform_and_print(const module_builder& build,
                                       const std::function<void(module&)>& transform,
                                       double tol = 1e-5) {
    return transform_and_compare(build, transform, tol).main().to_string();
}

// The submodule's text without its first line, which carries the (numbered) module name.
inline std::string body_text(const module& m) {
    auto text = m.to_string();
    return text.substr(text.find('\n') + 1);
}

// The non-parameter instructions' op names, space separated: a compact structural check.
inline std::string op_names(const module& m) {
    std::ostringstream os;
    for (const auto& ins : m)
        if (!ins.is_param()) os << (os.tellp() > 0 ? " " : "") << ins.name();
    return os.str();
}

} // namespace conflux::test
