// From:
//   @3 = broadcast{..}(%bias)          @4 = add(%x, @3)          @5 = relu(@4)
// To:
//   @3 = pointwise(%x, %bias) [pointwise0]
//   module pointwise0 { x0, x1 -> broadcast(x1) -> add(x0, .) -> relu -> return }
//
// Groups are found first (no mutation), then rewritten in module order, so each group reads the
// already-fused result of an earlier group as an ordinary outside input.
#include "conflux/passes/fuse_pointwise.hpp"

#include "conflux/ir/copy_instructions.hpp"
#include "conflux/ir/program.hpp"
#include "conflux/ops/fused.hpp"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace conflux {

namespace {

bool is_elementwise(instruction_ref ins) {
    return ins->get_operator().traits().pointwise;
}

bool is_view(instruction_ref ins) {
    return ins->get_operator().traits().view;
}

// A concat joins a group as an elementwise op does: each element of the group's result still
// reads one element of each input it needs, the concat only chooses which input. DenseNet's
// concat -> batch norm -> ReLU is then one kernel instead of a copy and a second pass over it.
bool joins_group(instruction_ref ins) {
    return is_elementwise(ins) || ins->name() == "concat";
}

struct group {
    instruction_ref output = nullptr;
    std::vector<instruction_ref> members; // in module order
};

// Grows the maximal group whose output is `output`. Candidates are decided latest-first: every
// user of a candidate comes later in the module, so by the time it is popped every user that
// will ever join the group has joined, and "all users are members" is final.
group grow_group(instruction_ref output,
                 const std::unordered_map<instruction_ref, std::size_t>& position,
                 std::unordered_set<instruction_ref>& assigned) {
    std::unordered_set<instruction_ref> members{output};
    auto later = [&](instruction_ref a, instruction_ref b) {
        return position.at(a) < position.at(b);
    };
    std::priority_queue<instruction_ref, std::vector<instruction_ref>, decltype(later)> todo(later);
    // A view joins only when its input stays outside (the submodule then views a parameter); a
    // view of an elementwise op would put a layout change in the middle of the group.
    auto push_inputs = [&](instruction_ref ins) {
        for (auto* in : ins->inputs()) {
            if (members.contains(in) || assigned.contains(in)) continue;
            if (joins_group(in) && !is_view(ins))
                todo.push(in);
            else if (is_view(in) && !joins_group(in->inputs().front()))
                todo.push(in);
        }
    };
    push_inputs(output);
    while (!todo.empty()) {
        auto* c = todo.top();
        todo.pop();
        if (members.contains(c)) continue;
        bool only_inside = std::all_of(c->outputs().begin(), c->outputs().end(),
                                       [&](instruction_ref u) { return members.contains(u); });
        if (!only_inside) continue;
        members.insert(c);
        push_inputs(c);
    }
    group g{output, {members.begin(), members.end()}};
    std::sort(g.members.begin(), g.members.end(), later);
    for (auto* ins : g.members)
        assigned.insert(ins);
    return g;
}

void rewrite_group(module& m, const group& g) {
    std::unordered_set<instruction_ref> members(g.members.begin(), g.members.end());
    // One parameter per distinct outside value, numbered in order of first use.
    std::vector<instruction_ref> outside;
    std::unordered_set<instruction_ref> seen;
    for (auto* ins : g.members)
        for (auto* in : ins->inputs())
            if (!members.contains(in) && seen.insert(in).second) outside.push_back(in);

    module& sub = m.create_submodule("pointwise");
    instruction_map map;
    for (std::size_t i = 0; i < outside.size(); ++i)
        map[outside[i]] = sub.add_parameter("x" + std::to_string(i), outside[i]->get_shape());
    copy_instructions(sub, g.members, map);
    sub.add_return({map.at(g.output)});

    auto fused = m.insert_instruction(g.output, op::pointwise{}, outside, {&sub});
    m.replace_all_uses(g.output, fused);
    // Reverse order: every member's users are later members, already removed.
    for (auto it = g.members.rbegin(); it != g.members.rend(); ++it)
        m.remove_instruction(*it);
}

} // namespace

void fuse_pointwise::apply(module& m) const {
    std::unordered_map<instruction_ref, std::size_t> position;
    std::vector<instruction_ref> order;
    for (auto& ins : m) {
        position[&ins] = order.size();
        order.push_back(&ins);
    }
    std::unordered_set<instruction_ref> assigned;
    std::vector<group> groups;
    for (auto it = order.rbegin(); it != order.rend(); ++it)
        if (is_elementwise(*it) && !assigned.contains(*it))
            groups.push_back(grow_group(*it, position, assigned));
    // Found last-output-first; rewrite first-output-first so earlier results are already fused.
    for (auto it = groups.rbegin(); it != groups.rend(); ++it)
        rewrite_group(m, *it);
}

} // namespace conflux
