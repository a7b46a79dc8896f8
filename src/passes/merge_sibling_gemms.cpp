#include "conflux/passes/merge_sibling_gemms.hpp"

#include "conflux/ir/literal_value.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "passes/scalar_factors.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace conflux {

namespace {

using passes_detail::elementwise_kind_of;
using passes_detail::returned;
using passes_detail::scaled_by_scalar;
using passes_detail::single_use;

struct sibling {
    instruction_ref dot;
    const argument* weights = nullptr;       // [K, N]
    std::optional<std::vector<double>> bias; // N values
    double scale = 1;
    instruction_ref result; // the chain's last value, which a slice of the merged one replaces
};

bool floating(dtype t) {
    return t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::f64;
}

// The n values of b when it is a broadcast of a literal that varies along the last axis only.
std::optional<std::vector<double>> column_values(instruction_ref b, std::size_t n) {
    if (b->name() != "broadcast" || b->inputs().size() != 1) return std::nullopt;
    const argument* v = literal_value(b->inputs()[0]);
    if (v == nullptr) return std::nullopt;
    const auto& lens = v->get_shape().lens();
    if (lens.empty() || lens.back() != n || v->get_shape().elements() != n) return std::nullopt;
    return to_vector<double>(*v);
}

std::optional<sibling> as_sibling(instruction_ref d) {
    if (d->name() != "dot" || d->inputs().size() != 2 || returned(d)) return std::nullopt;
    sibling s{d, literal_value(d->inputs()[1]), std::nullopt, 1, d};
    if (s.weights == nullptr || s.weights->get_shape().lens().size() != 2 ||
        !floating(d->get_shape().type()))
        return std::nullopt;
    const std::size_t n = s.weights->get_shape().lens()[1];
    if (single_use(d)) {
        const instruction_ref user = d->outputs()[0];
        if (elementwise_kind_of(user) == op::elementwise_kind::add && !returned(user) &&
            user->inputs().size() == 2 && user->get_shape() == d->get_shape()) {
            const instruction_ref other =
                user->inputs()[0] == d ? user->inputs()[1] : user->inputs()[0];
            if (other != d)
                if (auto b = column_values(other, n)) {
                    s.bias = std::move(b);
                    s.result = user;
                }
        }
    }
    if (single_use(s.result)) {
        const instruction_ref user = s.result->outputs()[0];
        if (const auto f = scaled_by_scalar(user);
            f && f->first == s.result && !returned(user) && user->get_shape() == d->get_shape()) {
            s.scale = f->second;
            s.result = user;
        }
    }
    return s;
}

// Whether fuse_gemm would give this product an epilogue of its own: an elementwise op reading
// its result, directly or through views (a bounded search). LLaMA's rotary positions on q and
// k, silu(gate) * up. Merged, that work would read slices of the wider result in a kernel of
// its own instead; the launch saved does not pay for the extra pass over the result (LLaMA at
// batch 32 on an H100: 0.045 ms slower with its q, k and v merged).
bool has_epilogue(const sibling& s) {
    std::vector<std::pair<instruction_ref, int>> todo{{s.result, 0}};
    while (!todo.empty()) {
        const auto [at, depth] = todo.back();
        todo.pop_back();
        for (instruction_ref user : at->outputs()) {
            const op_traits t = user->get_operator().traits();
            if (t.pointwise) return true;
            if (t.view && depth < 16) todo.emplace_back(user, depth + 1);
        }
    }
    return false;
}

void merge(module& m, instruction_ref x, const std::vector<sibling>& group) {
    const dtype t = group.front().dot->get_shape().type();
    const std::size_t k = group.front().weights->get_shape().lens()[0];
    std::size_t total = 0;
    for (const sibling& s : group)
        total += s.weights->get_shape().lens()[1];
    // Weights side by side, each scaled by its chain's factor (rounded once, to their type).
    std::vector<double> w(k * total), b(total, 0.0);
    bool any_bias = false;
    std::size_t at = 0;
    for (const sibling& s : group) {
        const std::size_t n = s.weights->get_shape().lens()[1];
        const auto v = to_vector<double>(*s.weights);
        for (std::size_t r = 0; r < k; ++r)
            for (std::size_t c = 0; c < n; ++c)
                w[r * total + at + c] = v[r * n + c] * s.scale;
        if (s.bias) {
            any_bias = true;
            for (std::size_t c = 0; c < n; ++c)
                b[at + c] = (*s.bias)[c] * s.scale;
        }
        at += n;
    }
    // Before the first sibling (the group is in program order): x is defined there, and every
    // former result's user after it.
    const instruction_ref first = group.front().dot;
    const auto weights =
        m.insert_instruction(first, op::literal{from_vector<double>(t, {k, total}, w)}, {});
    instruction_ref merged = m.insert_instruction(first, op::dot{}, {x, weights});
    if (any_bias) {
        const auto bias =
            m.insert_instruction(first, op::literal{from_vector<double>(t, {total}, b)}, {});
        const auto wide =
            m.insert_instruction(first, op::broadcast{merged->get_shape().lens()}, {bias});
        merged = m.insert_instruction(first, op::make_elementwise(op::elementwise_kind::add),
                                      {merged, wide});
    }
    const auto last = static_cast<std::int64_t>(merged->get_shape().lens().size() - 1);
    at = 0;
    for (const sibling& s : group) {
        const auto n = static_cast<std::int64_t>(s.weights->get_shape().lens()[1]);
        const auto part = m.insert_instruction(
            first, op::slice{{last}, {std::int64_t(at)}, {std::int64_t(at) + n}, {}}, {merged});
        m.replace_all_uses(s.result, part);
        at += std::size_t(n);
    }
}

} // namespace

void merge_sibling_gemms::apply(module& m) const {
    std::vector<instruction_ref> inputs;
    // Program order of the instructions there before any merge.
    std::unordered_map<instruction_ref, std::size_t> position;
    for (auto& ins : m) {
        position[&ins] = inputs.size();
        inputs.push_back(&ins);
    }
    for (instruction_ref x : inputs) {
        // x's products by constant weights, grouped by what must agree to merge: the weights'
        // rows and type.
        std::map<std::tuple<std::size_t, dtype>, std::vector<sibling>> groups;
        for (instruction_ref user : x->outputs())
            if (!user->inputs().empty() && user->inputs()[0] == x)
                if (auto s = as_sibling(user))
                    groups[{s->weights->get_shape().lens()[0], s->weights->get_shape().type()}]
                        .push_back(*s);
        for (auto& [key, group] : groups) {
            // A product listed twice (x used as both operands) or one seen before: once each.
            std::sort(group.begin(), group.end(), [&](const sibling& a, const sibling& b) {
                return position.at(a.dot) < position.at(b.dot);
            });
            group.erase(
                std::unique(group.begin(), group.end(),
                            [](const sibling& a, const sibling& b) { return a.dot == b.dot; }),
                group.end());
            std::erase_if(group, has_epilogue);
            if (group.size() >= 2) merge(m, x, group);
        }
    }
}

} // namespace conflux
