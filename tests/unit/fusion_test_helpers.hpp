// Helpers shared by the fusion pass tests: build a program twice from one builder (modules are
// not copyable), run the passes on one copy and compare reference results on random inputs.
#pragma once

#include "conflux/ir/program.hpp"
#include "conflux/ref/evaluate.hpp"
#include "test_helpers.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <sstream>

namespace conflux::test {

using module_builder = std::function<void(module&)>;

// Random f32 values for every parameter of `m`.
inline ref::parameter_map random_parameters(const module& m, unsigned seed = 7) {
    std::mt19937 rng(seed);
    ref::parameter_map params;
    for (auto* p : m.parameters()) {
        const auto& lens = p->get_shape().lens();
        auto values = random_values(product(lens), rng);
        params[p->get_operator().get_if<op::param>()->name_] =
            from_vector(p->get_shape().type(), lens, values);
    }
    return params;
}

// Builds `build` twice, applies `passes` to the second copy, checks it validates and gives the
// reference results of the first. Returns the transformed program for structural checks.
inline program transform_and_compare(const module_builder& build,
                                     const std::function<void(module&)>& passes) {
    program before;
    build(before.main());
    program after;
    build(after.main());
    passes(after.main());
    EXPECT_NO_THROW(after.validate()) << after.to_string();
    auto params = random_parameters(before.main());
    auto want = ref::evaluate(before, params);
    auto got = ref::evaluate(after, params);
    EXPECT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
        EXPECT_EQ(want[i].get_shape().lens(), got[i].get_shape().lens()) << "output " << i;
        auto a = to_vector<float>(want[i]);
        auto b = to_vector<float>(got[i]);
        EXPECT_EQ(a.size(), b.size());
        // First mismatch only: one wrong fusion would otherwise print thousands of lines.
        for (std::size_t j = 0; j < std::min(a.size(), b.size()); ++j)
            if (std::abs(a[j] - b[j]) > 1e-5f * std::max(1.0f, std::abs(a[j]))) {
                ADD_FAILURE() << "output " << i << " element " << j << ": " << a[j] << " vs "
                              << b[j] << "\n"
                              << after.to_string();
                break;
            }
    }
    return after;
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
