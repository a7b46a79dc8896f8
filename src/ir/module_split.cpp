// module::split (docs/ARCHITECTURE.md, "IR"): cuts a module into parts that, evaluated in sequence,
// compute the same returns as the whole. Used when a fused gemm op does not fit one kernel.
#include "conflux/ir/copy_instructions.hpp"
#include "conflux/ir/module.hpp"
#include "conflux/ir/program.hpp"

#include <unordered_set>

namespace conflux {

namespace {

const std::string& param_name(const instruction& ins) {
    return ins.get_operator().get_if<op::param>()->name_;
}

// Everything `roots` depend on, stopping at (but including) the instructions in `stop`.
std::unordered_set<const instruction*> closure(const std::vector<instruction_ref>& roots,
                                               const std::unordered_set<const instruction*>& stop) {
    std::unordered_set<const instruction*> seen;
    std::vector<const instruction*> work(roots.begin(), roots.end());
    while (!work.empty()) {
        const auto* ins = work.back();
        work.pop_back();
        if (!seen.insert(ins).second || stop.count(ins) != 0) continue;
        for (auto* in : ins->inputs())
            work.push_back(in);
    }
    return seen;
}

// A parameter name "split<k>" not yet used in `m`; counting on from `next` keeps names
// deterministic while a second split of a part cannot collide with the first split's names.
std::string fresh_split_name(const module& m, std::size_t& next) {
    for (;; ++next) {
        auto name = "split" + std::to_string(next);
        if (m.get_parameter(name) == nullptr) {
            ++next;
            return name;
        }
    }
}

struct two_parts {
    split_part first;
    split_part second;
    instruction_map second_map; // instruction of `m` -> its counterpart in `second.mod`
};

// Splits `m`, whose parameters (in order) are bound to `bindings`, at `splits`, filling the empty
// modules `p1` and `p2`. `p1` becomes part number `first_index` of the caller's list, which is
// what the second part's placeholders point at.
two_parts split_in_two(const module& m, module& p1, module& p2,
                       const std::vector<split_input>& bindings,
                       const std::vector<instruction_ref>& splits, int first_index) {
    auto params = m.parameters();
    CONFLUX_ASSERT(params.size() == bindings.size(), "split: module ", m.name(), " takes ",
                   params.size(), " arguments, given ", bindings.size());
    auto* ret = m.get_return();
    CONFLUX_ASSERT(ret != nullptr, "split: module ", m.name(), " has no return");
    for (auto* s : splits)
        CONFLUX_ASSERT(m.contains(s) && !s->is_return(), "split: a split value is not a value of ",
                       m.name());
    std::unordered_map<const instruction*, std::size_t> param_index;
    for (std::size_t i = 0; i < params.size(); ++i)
        param_index[params[i]] = i;

    two_parts out;

    // Part 1: the closure feeding the split values, in the original order (which is topological).
    {
        auto needed = closure(splits, {});
        instruction_map map;
        for (auto* param : params) {
            if (needed.count(param) == 0) continue;
            map[param] = p1.add_parameter(param_name(*param), param->get_shape());
            out.first.inputs.push_back(bindings[param_index.at(param)]);
        }
        for (const auto& ins : m)
            if (!ins.is_param() && needed.count(&ins) != 0) copy_instruction(p1, &ins, map);
        std::vector<instruction_ref> rets;
        for (auto* s : splits)
            rets.push_back(map.at(s));
        p1.add_return(std::move(rets));
        out.first.mod = &p1;
    }

    // Part 2: what the returns need, cut at the split values, which become new parameters. A
    // value of part 1 that is no split but is still needed here (a shared literal, or an
    // intermediate the caller chose not to split at) is recomputed: ops are pure, so the result
    // stays the same; choosing split points that avoid it is the caller's job.
    {
        std::unordered_set<const instruction*> stop(splits.begin(), splits.end());
        auto needed = closure(ret->inputs(), stop);
        auto& map = out.second_map;
        std::size_t next_name = 0;
        for (std::size_t i = 0; i < splits.size(); ++i) {
            // A value split at twice is passed once per occurrence; the first parameter wins.
            auto* p = p2.add_parameter(fresh_split_name(m, next_name),
                                       splits[i]->get_shape().as_standard());
            map.emplace(splits[i], p);
            out.second.inputs.push_back({nullptr, first_index, i});
        }
        for (auto* param : params) {
            if (needed.count(param) == 0 || stop.count(param) != 0) continue;
            map[param] = p2.add_parameter(param_name(*param), param->get_shape());
            out.second.inputs.push_back(bindings[param_index.at(param)]);
        }
        for (const auto& ins : m)
            if (!ins.is_param() && !ins.is_return() && needed.count(&ins) != 0 &&
                stop.count(&ins) == 0)
                copy_instruction(p2, &ins, map);
        copy_instruction(p2, ret, map);
        out.second.mod = &p2;
    }
    return out;
}

std::vector<split_input> bind_args(const module& m, const std::vector<instruction_ref>& args) {
    CONFLUX_ASSERT(args.size() == m.parameters().size(), "split: module ", m.name(), " takes ",
                   m.parameters().size(), " arguments, given ", args.size());
    std::vector<split_input> bindings;
    bindings.reserve(args.size());
    for (auto* a : args)
        bindings.push_back({a, -1, 0});
    return bindings;
}

module& new_part(program& prog, const module& m) {
    return prog.create_module(prog.unique_module_name(m.name() + "_part"));
}

} // namespace

std::vector<split_part> module::split(const std::vector<instruction_ref>& args,
                                      const std::vector<instruction_ref>& splits) const {
    CONFLUX_ASSERT(owner_ != nullptr, "module ", name_, " belongs to no program");
    return split(*owner_, args, splits);
}

std::vector<split_part> module::split(const std::vector<instruction_ref>& args,
                                      const std::vector<instruction_ref>& splits1,
                                      const std::vector<instruction_ref>& splits2) const {
    CONFLUX_ASSERT(owner_ != nullptr, "module ", name_, " belongs to no program");
    return split(*owner_, args, splits1, splits2);
}

std::vector<split_part> module::split(program& into, const std::vector<instruction_ref>& args,
                                      const std::vector<instruction_ref>& splits) const {
    auto& p1 = new_part(into, *this);
    auto& p2 = new_part(into, *this);
    auto parts = split_in_two(*this, p1, p2, bind_args(*this, args), splits, 0);
    return {parts.first, parts.second};
}

std::vector<split_part> module::split(program& into, const std::vector<instruction_ref>& args,
                                      const std::vector<instruction_ref>& splits1,
                                      const std::vector<instruction_ref>& splits2) const {
    // The middle module is split again straight away, so it lives outside the program and
    // leaves no stray module behind.
    module rest(name_);
    auto& p1 = new_part(into, *this);
    auto outer = split_in_two(*this, p1, rest, bind_args(*this, args), splits1, 0);
    std::vector<instruction_ref> mapped;
    for (auto* s : splits2) {
        auto it = outer.second_map.find(s);
        CONFLUX_ASSERT(it != outer.second_map.end(), "split: a second split value of ", name_,
                       " is not used after the first split");
        mapped.push_back(it->second);
    }
    auto& p2 = new_part(into, *this);
    auto& p3 = new_part(into, *this);
    auto inner = split_in_two(rest, p2, p3, outer.second.inputs, mapped, 1);
    return {outer.first, inner.first, inner.second};
}

} // namespace conflux
