// Random fused-gemm-like graphs for the property tests: an anchor (conv with random dims,
// strides, pads and groups, or a dot), a random DAG of 1-5 elementwise ops with extra inputs
// (some broadcast from smaller lens), a layout tail of 0-3 views and sometimes an extra return.
// A seed fully determines the graph, so a failure reproduces from the seed it prints.
#pragma once

#include "conflux/ir/program.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <string>

namespace conflux::test {

using rng_t = std::mt19937;

inline std::size_t pick(rng_t& rng, std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
}
inline bool chance(rng_t& rng, double p) {
    return std::bernoulli_distribution(p)(rng);
}

struct generated {
    program p;
    instruction_ref anchor = nullptr;
    std::string description;
};

// conv with random dims, strides, pads and groups; sometimes its input arrives NHWC through a
// transpose view, as after layout propagation.
inline instruction_ref add_conv(module& m, rng_t& rng, std::string& what) {
    std::size_t nd = pick(rng, 1, 2);
    std::size_t group = pick(rng, 1, 2);
    std::size_t c = group * pick(rng, 1, 3);
    std::size_t k = group * pick(rng, 1, 3);
    dims in{pick(rng, 1, 2), c};
    dims w{k, c / group};
    op::convolution conv;
    conv.group = group;
    conv.padding.assign(2 * nd, 0);
    for (std::size_t d = 0; d < nd; ++d) {
        std::size_t kernel = pick(rng, 1, 3);
        std::size_t pad = pick(rng, 0, 1);
        conv.padding[d] = pad;
        conv.padding[nd + d] = pick(rng, 0, 1);
        in.push_back(pick(rng, kernel, kernel + 4));
        w.push_back(kernel);
        conv.stride.push_back(pick(rng, 1, 2));
    }
    conv.dilation.assign(nd, 1);
    instruction_ref x;
    if (chance(rng, 0.3)) {
        // NHWC parameter -> NCHW view.
        dims nhwc{in[0]};
        nhwc.insert(nhwc.end(), in.begin() + 2, in.end());
        nhwc.push_back(in[1]);
        auto px = m.add_parameter("x", shape{dtype::f32, nhwc});
        std::vector<std::int64_t> perm{0, static_cast<std::int64_t>(nd + 1)};
        for (std::size_t d = 0; d < nd; ++d)
            perm.push_back(static_cast<std::int64_t>(d + 1));
        x = m.add_instruction(op::transpose{perm}, {px});
    } else {
        x = m.add_parameter("x", shape{dtype::f32, in});
    }
    auto pw = m.add_parameter("w", shape{dtype::f32, w});
    what += "conv" + to_string(in) + "x" + to_string(w) + "g" + std::to_string(group);
    return m.add_instruction(conv, {x, pw});
}

inline instruction_ref add_dot(module& m, rng_t& rng, std::string& what) {
    std::size_t mm = pick(rng, 1, 6), kk = pick(rng, 1, 6), nn = pick(rng, 1, 6);
    dims a{mm, kk}, b{kk, nn};
    if (chance(rng, 0.4)) {
        auto batch = pick(rng, 1, 3);
        a.insert(a.begin(), batch);
        b.insert(b.begin(), batch);
    }
    auto pa = m.add_parameter("a", shape{dtype::f32, a});
    instruction_ref pb;
    if (chance(rng, 0.3)) {
        // B given transposed, read through a view.
        dims bt = b;
        std::swap(bt[bt.size() - 1], bt[bt.size() - 2]);
        auto raw = m.add_parameter("b", shape{dtype::f32, bt});
        std::vector<std::int64_t> perm(b.size());
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
        pb = m.add_instruction(op::transpose{perm}, {raw});
    } else {
        pb = m.add_parameter("b", shape{dtype::f32, b});
    }
    what += "dot" + to_string(a) + "x" + to_string(b);
    return m.add_instruction(op::dot{}, {pa, pb});
}

// An extra elementwise input with the anchor's lens: a parameter of those lens, or a smaller one
// broadcast (some axes 1, leading axes dropped), or a literal.
inline instruction_ref add_extra_input(module& m, rng_t& rng, const dims& lens,
                                       std::size_t& n_params) {
    auto name = "e" + std::to_string(n_params++);
    auto r = pick(rng, 0, 9);
    if (r < 4) return m.add_parameter(name, shape{dtype::f32, lens});
    if (r < 9) {
        dims small = lens;
        for (auto& l : small)
            if (chance(rng, 0.5)) l = 1;
        auto drop = pick(rng, 0, small.size());
        small.erase(small.begin(), small.begin() + static_cast<std::ptrdiff_t>(drop));
        auto param = m.add_parameter(name, shape{dtype::f32, small});
        return m.add_instruction(op::broadcast{lens}, {param});
    }
    std::vector<float> v(test::product(lens));
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
    return m.add_literal(from_vector(dtype::f32, lens, v));
}

// One random view of `v` (transpose, reshape, squeeze, unsqueeze or flatten).
inline instruction_ref add_layout_op(module& m, rng_t& rng, instruction_ref v) {
    const auto& lens = v->get_shape().lens();
    std::size_t rank = lens.size();
    for (;;) {
        switch (pick(rng, 0, 4)) {
        case 0: {
            if (rank < 2) break;
            std::vector<std::int64_t> perm(rank);
            std::iota(perm.begin(), perm.end(), 0);
            std::shuffle(perm.begin(), perm.end(), rng);
            return m.add_instruction(op::transpose{perm}, {v});
        }
        case 1: {
            dims out = lens;
            if (rank >= 2 && chance(rng, 0.5)) {
                auto i = pick(rng, 0, rank - 2);
                out[i] *= out[i + 1];
                out.erase(out.begin() + static_cast<std::ptrdiff_t>(i) + 1);
            } else {
                auto i = pick(rng, 0, rank - 1);
                if (out[i] % 2 != 0) break;
                out[i] /= 2;
                out.insert(out.begin() + static_cast<std::ptrdiff_t>(i), 2);
            }
            return m.add_instruction(op::reshape{out}, {v});
        }
        case 2: {
            std::vector<std::int64_t> axes;
            for (std::size_t i = 0; i < rank; ++i)
                if (lens[i] == 1) axes.push_back(static_cast<std::int64_t>(i));
            if (axes.empty()) break;
            return m.add_instruction(op::squeeze{{axes.front()}}, {v});
        }
        case 3:
            return m.add_instruction(op::unsqueeze{{static_cast<std::int64_t>(pick(rng, 0, rank))}},
                                     {v});
        default:
            return m.add_instruction(op::flatten{static_cast<std::int64_t>(pick(rng, 0, rank))},
                                     {v});
        }
    }
}

inline generated generate(unsigned seed) {
    rng_t rng(seed);
    generated g;
    auto& m = g.p.main();
    g.anchor = chance(rng, 0.5) ? add_conv(m, rng, g.description) : add_dot(m, rng, g.description);
    const auto lens = g.anchor->get_shape().lens();

    using op::elementwise_kind;
    static const std::vector<elementwise_kind> unary{
        elementwise_kind::relu, elementwise_kind::neg, elementwise_kind::tanh,
        elementwise_kind::sigmoid, elementwise_kind::abs};
    static const std::vector<elementwise_kind> binary{elementwise_kind::add, elementwise_kind::sub,
                                                      elementwise_kind::mul, elementwise_kind::max,
                                                      elementwise_kind::min};
    std::vector<instruction_ref> values{g.anchor};
    std::size_t n_params = 0;
    auto n_ops = pick(rng, 1, 5);
    for (std::size_t i = 0; i < n_ops; ++i) {
        // Mostly extend the chain; sometimes branch from an earlier value to make a DAG.
        auto first = chance(rng, 0.7) ? values.back() : values[pick(rng, 0, values.size() - 1)];
        if (chance(rng, 0.4)) {
            auto k = unary[pick(rng, 0, unary.size() - 1)];
            values.push_back(m.add_instruction(op::make_elementwise(k), {first}));
            g.description += " " + std::string(op::to_string(k));
        } else {
            auto k = binary[pick(rng, 0, binary.size() - 1)];
            auto second = chance(rng, 0.7) ? add_extra_input(m, rng, lens, n_params)
                                           : values[pick(rng, 0, values.size() - 1)];
            values.push_back(m.add_instruction(op::make_elementwise(k), {first, second}));
            g.description += " " + std::string(op::to_string(k));
        }
    }
    auto out = values.back();
    auto tail = pick(rng, 0, 3);
    for (std::size_t i = 0; i < tail; ++i)
        out = add_layout_op(m, rng, out);
    g.description += " tail" + std::to_string(tail);
    std::vector<instruction_ref> rets{out};
    if (chance(rng, 0.3)) {
        auto extra = chance(rng, 0.5) ? g.anchor : values[pick(rng, 0, values.size() - 1)];
        if (chance(rng, 0.5)) extra = add_layout_op(m, rng, extra);
        rets.push_back(extra);
        g.description += " +return";
    }
    m.add_return(rets);
    m.validate();
    return g;
}

inline std::vector<argument> random_args(const module& m, rng_t& rng) {
    std::vector<argument> args;
    for (auto* p : m.parameters()) {
        const auto& lens = p->get_shape().lens();
        args.push_back(
            from_vector(dtype::f32, lens, test::random_values(test::product(lens), rng)));
    }
    return args;
}

inline ::testing::AssertionResult close(const std::vector<argument>& got,
                                        const std::vector<argument>& want) {
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << got.size() << " results, want " << want.size();
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i].get_shape().lens() != want[i].get_shape().lens())
            return ::testing::AssertionFailure()
                   << "result " << i << " has lens " << to_string(got[i].get_shape().lens());
        auto g = to_vector<float>(got[i]);
        auto w = to_vector<float>(want[i]);
        for (std::size_t j = 0; j < g.size(); ++j)
            if (!(std::abs(g[j] - w[j]) <= 1e-5f * std::max(1.0f, std::abs(w[j]))))
                return ::testing::AssertionFailure()
                       << "result " << i << " element " << j << ": " << g[j] << " vs " << w[j];
    }
    return ::testing::AssertionSuccess();
}

} // namespace conflux::test
