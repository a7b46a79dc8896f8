// From:
//   @2 = convolution(%x, %w)   @3 = pointwise(@2, %b) [pointwise0]   @4 = transpose{..}(@3)
// To:
//   @2 = fused_gemm(%x, %w, %b) [fused_gemm0]
//   module fused_gemm0 { x0, x1, x2 -> convolution -> <pointwise0's body inlined> -> transpose
//                        -> return }
//
// The chain is anchor -> [views] -> pointwise -> ([layout ops] -> pointwise)* -> [layout tail].
// Parameters are the anchor's inputs (x0, x1) then the pointwise ops' other inputs (x2, ...), so
// equal patterns give equal submodule text. A chain value also used outside becomes an extra
// return; the fused op's result is then a tuple and those users read it with get_tuple_elem.
#include "conflux/passes/fuse_gemm.hpp"

#include "conflux/ir/copy_instructions.hpp"
#include "conflux/ir/program.hpp"
#include "conflux/ops/fused.hpp"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace conflux {

namespace {

// Views allowed between the anchor and its epilogue: those that keep or select elements. A
// broadcast (which replicates) is not: the gemm kernel would have to recompute or replicate its
// result.
bool is_anchor_view(instruction_ref ins) {
    const op_traits t = ins->get_operator().traits();
    return (t.layout_only || t.selects) && t.view;
}

// A pointwise op after the epilogue and the single-use layout ops that lead to it: a residual
// added after the projection's output is reshaped and transposed back (nn.MultiheadAttention's
// out_proj), which fuse_pointwise keeps out of the first pointwise op.
struct later_pointwise {
    std::vector<instruction_ref> layout;
    instruction_ref op = nullptr;
};

struct chain {
    instruction_ref anchor = nullptr;
    std::vector<instruction_ref> views; // anchor -> ... -> the input of `epilogue`
    instruction_ref epilogue = nullptr; // the pointwise op, or nullptr
    std::vector<later_pointwise> later; // after the epilogue, in order
    std::vector<instruction_ref> tail;  // single-use layout ops after the last pointwise op (or
                                        // the anchor)
};

// Depth-first along the anchor's users (in module order) through views to the first pointwise
// op; `path` holds the views walked. An explicit stack of (instruction, next user to try): the
// views after an anchor can be as many as the model has nodes.
bool find_epilogue(instruction_ref anchor, std::vector<instruction_ref>& path, chain& c) {
    std::vector<std::pair<instruction_ref, std::size_t>> stack{{anchor, 0}};
    while (!stack.empty()) {
        auto [ins, next] = stack.back();
        const auto& users = ins->outputs();
        if (next == 0) {
            for (auto* user : users) {
                if (user->name() == "pointwise") {
                    c.epilogue = user;
                    c.views = path;
                    return true;
                }
            }
        }
        while (next < users.size() && !is_anchor_view(users[next]))
            ++next;
        if (next == users.size()) {
            stack.pop_back();
            if (!stack.empty()) path.pop_back(); // the view this frame was reached through
            continue;
        }
        stack.back().second = next + 1;
        path.push_back(users[next]);
        stack.emplace_back(users[next], 0);
    }
    return false;
}

std::vector<instruction_ref> layout_tail(instruction_ref from) {
    std::vector<instruction_ref> tail;
    auto* cur = from;
    // Ops that only change how the result is indexed and stored.
    while (cur->outputs().size() == 1 &&
           cur->outputs().front()->get_operator().traits().layout_only) {
        cur = cur->outputs().front();
        tail.push_back(cur);
    }
    return tail;
}

// The pointwise body may broadcast one of its parameters; when that parameter is the anchor's
// (viewed) result the broadcast would sit after the anchor, which the gemm kernel cannot hold.
// Nor can it hold a concat of the anchor's result: the kernel has only its own tile's elements.
bool broadcasts_chain_input(instruction_ref epilogue,
                            const std::unordered_set<instruction_ref>& chain_values) {
    const module& body = *epilogue->module_inputs().front();
    auto params = body.parameters();
    std::unordered_set<instruction_ref> reached;
    for (std::size_t i = 0; i < params.size(); ++i)
        if (chain_values.contains(epilogue->inputs()[i])) reached.insert(params[i]);
    for (auto& ins : body) {
        bool from_chain = std::any_of(ins.inputs().begin(), ins.inputs().end(),
                                      [&](instruction_ref in) { return reached.contains(in); });
        if (!from_chain) continue;
        if (ins.get_operator().traits().replicates || ins.name() == "concat") return true;
        reached.insert(const_cast<instruction_ref>(&ins));
    }
    return false;
}

std::vector<instruction_ref> chain_members(const chain& c) {
    std::vector<instruction_ref> all{c.anchor};
    all.insert(all.end(), c.views.begin(), c.views.end());
    if (c.epilogue) all.push_back(c.epilogue);
    for (const auto& p : c.later) {
        all.insert(all.end(), p.layout.begin(), p.layout.end());
        all.push_back(p.op);
    }
    all.insert(all.end(), c.tail.begin(), c.tail.end());
    return all;
}

// Parameters in their deterministic order: the anchor's inputs, then the epilogue's inputs that
// are not chain values. Each distinct value once.
std::vector<instruction_ref> outside_inputs(const chain& c) {
    std::unordered_set<instruction_ref> members;
    for (auto* ins : chain_members(c))
        members.insert(ins);
    std::vector<instruction_ref> out;
    auto add = [&](instruction_ref in) {
        if (!members.contains(in) && std::find(out.begin(), out.end(), in) == out.end())
            out.push_back(in);
    };
    for (auto* in : c.anchor->inputs())
        add(in);
    if (c.epilogue)
        for (auto* in : c.epilogue->inputs())
            add(in);
    for (const auto& p : c.later)
        for (auto* in : p.op->inputs())
            add(in);
    return out;
}

// Where the fused op goes: after the anchor and after its latest outside input. Valid when every
// outside user of a chain value comes later (else fusing would need a reorder, or would make a
// cycle when an epilogue input depends on the anchor); nullopt when not.
std::optional<instruction_ref> insertion_point(module& m, const chain& c) {
    auto members = chain_members(c);
    std::unordered_set<instruction_ref> member_set(members.begin(), members.end());
    auto inputs = outside_inputs(c);
    std::unordered_set<instruction_ref> input_set(inputs.begin(), inputs.end());
    instruction_ref pos = nullptr;
    bool passed_anchor = false;
    std::size_t inputs_left = inputs.size();
    for (auto& ins : m) {
        auto* p = &ins;
        if (p == c.anchor) passed_anchor = true;
        if (input_set.contains(p)) --inputs_left;
        if (passed_anchor && inputs_left == 0) {
            pos = p;
            break;
        }
    }
    // Every outside user of a chain value must come after `pos`.
    std::unordered_set<instruction_ref> before;
    for (auto& ins : m) {
        before.insert(&ins);
        if (&ins == pos) break;
    }
    for (auto* ins : members)
        for (auto* user : ins->outputs())
            if (!member_set.contains(user) && before.contains(user)) return std::nullopt;
    return pos;
}

// The instruction after `ins`, or nullptr (the end) when it is the last.
instruction_ref next_instruction(module& m, instruction_ref ins) {
    auto it = std::find_if(m.begin(), m.end(), [&](auto& i) { return &i == ins; });
    if (it == m.end() || std::next(it) == m.end()) return nullptr;
    return &*std::next(it);
}

void rewrite_chain(module& m, const chain& c, instruction_ref pos) {
    auto inputs = outside_inputs(c);
    module& sub = m.create_submodule("fused_gemm");
    instruction_map map;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        map[inputs[i]] = sub.add_parameter("x" + std::to_string(i), inputs[i]->get_shape());

    copy_instruction(sub, c.anchor, map);
    copy_instructions(sub, c.views, map);
    instruction_ref last = c.views.empty() ? c.anchor : c.views.back();
    // Inline a pointwise body: its parameters stand for the op's inputs.
    auto inline_pointwise = [&](instruction_ref pointwise) {
        const module& body = *pointwise->module_inputs().front();
        auto params = body.parameters();
        instruction_map body_map;
        for (std::size_t i = 0; i < params.size(); ++i)
            body_map[params[i]] = map.at(pointwise->inputs()[i]);
        std::vector<instruction_ref> ops;
        for (auto& ins : body)
            if (!ins.is_param() && !ins.is_return())
                ops.push_back(const_cast<instruction_ref>(&ins));
        copy_instructions(sub, ops, body_map);
        map[pointwise] = body_map.at(body.get_return()->inputs().front());
    };
    if (c.epilogue) {
        inline_pointwise(c.epilogue);
        last = c.epilogue;
    }
    for (const auto& p : c.later) {
        copy_instructions(sub, p.layout, map);
        inline_pointwise(p.op);
        last = p.op;
    }
    copy_instructions(sub, c.tail, map);
    instruction_ref main_out = c.tail.empty() ? last : c.tail.back();

    // Extra returns: chain values (before the tail) also used outside the chain, in chain order.
    auto members = chain_members(c);
    std::unordered_set<instruction_ref> member_set(members.begin(), members.end());
    std::vector<instruction_ref> returned{main_out};
    for (auto* ins : members) {
        if (ins == main_out) continue;
        bool used_outside = std::any_of(ins->outputs().begin(), ins->outputs().end(),
                                        [&](instruction_ref u) { return !member_set.contains(u); });
        if (used_outside) returned.push_back(ins);
    }
    std::vector<instruction_ref> sub_returns;
    for (auto* r : returned)
        sub_returns.push_back(map.at(r));
    sub.add_return(sub_returns);

    // Insert after `pos`: the next instruction is the position to insert in front of.
    auto fused = m.insert_instruction(next_instruction(m, pos), op::fused_gemm{}, inputs, {&sub});
    if (returned.size() == 1) {
        m.replace_all_uses(main_out, fused);
    } else {
        auto* at = next_instruction(m, fused);
        for (std::size_t i = 0; i < returned.size(); ++i) {
            auto elem = m.insert_instruction(at, op::get_tuple_elem{i}, {fused});
            // Only users outside the chain: the chain itself is removed below.
            auto users = returned[i]->outputs();
            for (auto* u : users)
                if (!member_set.contains(u)) {
                    auto ins_inputs = u->inputs();
                    std::replace(ins_inputs.begin(), ins_inputs.end(), returned[i], elem);
                    m.replace_instruction(u, u->get_operator(), ins_inputs, u->module_inputs());
                }
        }
    }
    for (auto it = members.rbegin(); it != members.rend(); ++it)
        m.remove_instruction(*it);
}

// Extends the chain with the pointwise ops that take its last value, through its layout tail,
// as their only chain input; stops where the chain could not be placed or an op would
// broadcast the chain's value.
void absorb_later_pointwise(module& m, chain& c) {
    for (;;) {
        instruction_ref last =
            c.tail.empty() ? (c.later.empty() ? c.epilogue : c.later.back().op) : c.tail.back();
        if (last->outputs().size() != 1) return;
        instruction_ref next = last->outputs().front();
        if (next->name() != "pointwise") return;
        auto members = chain_members(c);
        std::size_t chain_inputs = 0;
        for (auto* in : next->inputs())
            if (std::find(members.begin(), members.end(), in) != members.end()) ++chain_inputs;
        if (chain_inputs != 1 || broadcasts_chain_input(next, {last})) return;
        chain longer = c;
        longer.later.push_back({c.tail, next});
        longer.tail = layout_tail(next);
        if (!insertion_point(m, longer)) return;
        c = std::move(longer);
    }
}

} // namespace

void fuse_gemm::apply(module& m) const {
    std::vector<instruction_ref> anchors;
    for (auto& ins : m)
        if (ins.get_operator().traits().anchor) anchors.push_back(&ins);
    for (auto* anchor : anchors) {
        chain c{.anchor = anchor};
        std::vector<instruction_ref> path;
        if (find_epilogue(anchor, path, c)) {
            std::unordered_set<instruction_ref> values{anchor};
            values.insert(c.views.begin(), c.views.end());
            c.tail = layout_tail(c.epilogue);
            if (broadcasts_chain_input(c.epilogue, values) || !insertion_point(m, c)) c = {};
            if (c.epilogue) absorb_later_pointwise(m, c);
        }
        if (!c.epilogue) {
            // No fusible epilogue: the anchor and its layout tail still take the gemm path.
            c = chain{.anchor = anchor};
            c.tail = layout_tail(anchor);
        }
        auto pos = insertion_point(m, c);
        if (!pos) continue;
        rewrite_chain(m, c, *pos);
    }
}

} // namespace conflux
