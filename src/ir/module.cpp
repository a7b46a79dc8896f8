#include "conflux/ir/module.hpp"
#include "conflux/ir/program.hpp"

#include <algorithm>
#include <ostream>
#include <set>
#include <sstream>
#include <unordered_set>
#include <utility>

namespace conflux {

shape module::compute_shape(const operation& op, const std::vector<instruction_ref>& inputs,
                            const std::vector<module*>& modules) const {
    std::vector<shape> shapes;
    shapes.reserve(inputs.size());
    for (auto* in : inputs) {
        CONFLUX_ASSERT(in != nullptr, "null input to ", op.name());
        shapes.push_back(in->get_shape());
    }
    std::vector<const module*> mods(modules.begin(), modules.end());
    return op.compute_shape(shapes, mods);
}

void module::link(instruction_ref ins) {
    // `ins` is new or was just unlinked, so it is in no input's users yet: only an input it reads
    // twice must not be added twice. Checking that against ins's own inputs, not the input's
    // users, keeps a value with thousands of users from making every new user cost thousands.
    std::unordered_set<instruction_ref> seen;
    for (auto* in : ins->inputs_)
        if (seen.insert(in).second) in->outputs_.push_back(ins);
}

void module::unlink(instruction_ref ins) {
    for (auto* in : ins->inputs_) {
        auto& outs = in->outputs_;
        outs.erase(std::remove(outs.begin(), outs.end(), ins), outs.end());
    }
}

std::list<instruction>::iterator module::find(instruction_ref ins) {
    CONFLUX_ASSERT(ins->parent_ == this, "instruction ", ins->name(), " is not in module ", name_);
    return ins->self_;
}

module& module::create_submodule(const std::string& prefix) {
    CONFLUX_ASSERT(owner_ != nullptr, "module ", name_, " belongs to no program");
    return owner_->create_module(owner_->unique_module_name(prefix));
}

bool module::contains(instruction_ref ins) const {
    return ins && ins->parent_ == this;
}

instruction_ref module::insert_instruction(instruction_ref pos, const operation& op,
                                           std::vector<instruction_ref> inputs,
                                           std::vector<module*> modules) {
    for (auto* in : inputs)
        CONFLUX_ASSERT(contains(in), "input of ", op.name(), " is not in module ", name_);
    auto s = compute_shape(op, inputs, modules);
    auto where = pos ? find(pos) : instructions_.end();
    auto it = instructions_.emplace(where, op, std::move(inputs), std::move(modules), s);
    it->parent_ = this;
    it->self_ = it;
    link(&*it);
    return &*it;
}

instruction_ref module::add_instruction(const operation& op, std::vector<instruction_ref> inputs,
                                        std::vector<module*> modules) {
    // Keep the return last: new instructions go in front of it.
    return insert_instruction(get_return(), op, std::move(inputs), std::move(modules));
}

instruction_ref module::add_parameter(const std::string& name, const shape& s) {
    CONFLUX_USER_CHECK(get_parameter(name) == nullptr, "module ", name_,
                       ": duplicate parameter name '", name, "'");
    return add_instruction(op::param{name, s}, {});
}

instruction_ref module::add_literal(argument value) {
    return add_instruction(op::literal{std::move(value)}, {});
}

instruction_ref module::add_return(std::vector<instruction_ref> values,
                                   std::vector<std::string> names) {
    CONFLUX_ASSERT(get_return() == nullptr, "module ", name_, " already has a return");
    CONFLUX_ASSERT(names.empty() || names.size() == values.size(), "return names/values differ");
    return insert_instruction(nullptr, op::return_op{std::move(names)}, std::move(values));
}

void module::replace_instruction(instruction_ref ins, const operation& op,
                                 std::vector<instruction_ref> inputs, std::vector<module*> modules,
                                 bool allow_shape_change) {
    auto s = compute_shape(op, inputs, modules);
    CONFLUX_ASSERT(allow_shape_change || ins->is_return() || s == ins->get_shape(), "replacing ",
                   ins->name(), " with ", op.name(), " changes its shape from ",
                   conflux::to_string(ins->get_shape()), " to ", conflux::to_string(s));
    unlink(ins);
    ins->op_ = op;
    ins->inputs_ = std::move(inputs);
    ins->modules_ = std::move(modules);
    ins->shape_ = s;
    link(ins);
}

void module::replace_all_uses(instruction_ref old_ins, instruction_ref new_ins) {
    if (old_ins == new_ins) return;
    const auto& a = old_ins->get_shape();
    const auto& b = new_ins->get_shape();
    CONFLUX_ASSERT(a.lens() == b.lens() && a.type() == b.type() && a.is_tuple() == b.is_tuple() &&
                       (!a.is_tuple() || a.sub_shapes().size() == b.sub_shapes().size()),
                   "replace_all_uses: ", conflux::to_string(a), " vs ", conflux::to_string(b));
    // When only strides differ, users see new strides: their shapes (which may follow their
    // inputs' layout, as elementwise outputs and views do) are recomputed, transitively while
    // they change. Values and lens never change.
    auto unique_users = [](instruction_ref ins) {
        auto users = ins->outputs_;
        std::sort(users.begin(), users.end());
        users.erase(std::unique(users.begin(), users.end()), users.end());
        return users;
    };
    // Only the edges that change are touched, and a return's shape (its first value's, see
    // return_op) only when its first value changes: a return of thousands of values rebuilt on
    // every replacement made fusing many outputs quadratic.
    auto recompute = [&](instruction_ref user, instruction_ref from, instruction_ref to) {
        const shape before = user->get_shape();
        const bool first_changed = !user->inputs_.empty() && user->inputs_.front() == from;
        if (from != to) {
            std::replace(user->inputs_.begin(), user->inputs_.end(), from, to);
            auto& from_users = from->outputs_;
            from_users.erase(std::remove(from_users.begin(), from_users.end(), user),
                             from_users.end());
            if (std::find(to->outputs_.begin(), to->outputs_.end(), user) == to->outputs_.end())
                to->outputs_.push_back(user);
        }
        if (user->is_return()) {
            if (first_changed) user->shape_ = compute_shape(user->op_, user->inputs_, {});
            return false;
        }
        user->shape_ = compute_shape(user->op_, user->inputs_, user->modules_);
        const auto& after = user->get_shape();
        CONFLUX_ASSERT(after.lens() == before.lens() && after.type() == before.type(),
                       "replace_all_uses: recomputing ", user->name(), " changed it from ",
                       conflux::to_string(before), " to ", conflux::to_string(after));
        return after != before;
    };
    std::vector<instruction_ref> changed;
    for (auto* user : unique_users(old_ins))
        if (recompute(user, old_ins, new_ins)) changed.push_back(user);
    while (!changed.empty()) {
        auto* ins = changed.back();
        changed.pop_back();
        for (auto* user : unique_users(ins))
            if (recompute(user, ins, ins)) changed.push_back(user);
    }
}

void module::remove_instruction(instruction_ref ins) {
    CONFLUX_ASSERT(ins->outputs().empty(), "removing ", ins->name(), " which still has users");
    auto it = find(ins);
    unlink(ins);
    instructions_.erase(it);
}

void module::move_instruction(instruction_ref ins, instruction_ref pos) {
    auto it = find(ins);
    auto where = pos ? find(pos) : instructions_.end();
    instructions_.splice(where, instructions_, it);
}

std::vector<instruction_ref> module::parameters() const {
    std::vector<instruction_ref> out;
    for (auto& ins : instructions_)
        if (ins.is_param()) out.push_back(const_cast<instruction_ref>(&ins));
    return out;
}

instruction_ref module::get_parameter(const std::string& name) const {
    for (auto& ins : instructions_)
        if (auto* p = ins.get_operator().get_if<op::param>(); p && p->name_ == name)
            return const_cast<instruction_ref>(&ins);
    return nullptr;
}

instruction_ref module::get_return() const {
    if (instructions_.empty() || !instructions_.back().is_return()) return nullptr;
    return const_cast<instruction_ref>(&instructions_.back());
}

std::vector<std::string> module::output_names() const {
    std::vector<std::string> names;
    auto* ret = get_return();
    if (!ret) return names;
    names = ret->get_operator().get_if<op::return_op>()->names;
    if (names.empty())
        for (std::size_t i = 0; i < ret->inputs().size(); ++i)
            names.push_back("output" + std::to_string(i));
    return names;
}

void module::validate() const {
    std::set<const instruction*> seen;
    auto names = print_names();
    std::size_t returns = 0;
    // Each use edge (value, user) as the users' input lists name it and as the values' output
    // lists name it; the two must agree. Looked up in sets rather than by searching the other
    // list, so that a value with n users validates in O(n log n), not O(n^2).
    using edge = std::pair<const instruction*, const instruction*>;
    std::set<edge> from_inputs;
    std::set<edge> from_outputs;
    for (auto& ins : instructions_) {
        for (auto* in : ins.inputs())
            from_inputs.emplace(in, &ins);
        for (auto* out : ins.outputs())
            from_outputs.emplace(&ins, out);
    }
    for (auto& ins : instructions_) {
        auto where = [&] {
            return "module " + name_ + ": " + names.at(&ins) + " (" + ins.name() + ")";
        };
        CONFLUX_ASSERT(ins.parent_ == this, where(), " has the wrong parent");
        for (auto* in : ins.inputs()) {
            CONFLUX_ASSERT(seen.count(in) != 0, where(),
                           " uses an input defined later or elsewhere");
            CONFLUX_ASSERT(from_outputs.count({in, &ins}) != 0, where(),
                           " is missing from its input's users");
        }
        for (auto* out : ins.outputs())
            CONFLUX_ASSERT(from_inputs.count({&ins, out}) != 0, where(),
                           " lists a user that does not use it");
        if (ins.is_return()) {
            ++returns;
            CONFLUX_ASSERT(&ins == &instructions_.back(), where(), " is not last");
        }
        std::vector<shape> shapes;
        for (auto* in : ins.inputs())
            shapes.push_back(in->get_shape());
        std::vector<const module*> mods(ins.module_inputs().begin(), ins.module_inputs().end());
        shape recomputed;
        try {
            recomputed = ins.get_operator().compute_shape(shapes, mods);
        } catch (const std::exception& e) {
            throw_internal_error(where(), ": shape no longer computes: ", e.what());
        }
        CONFLUX_ASSERT(recomputed == ins.get_shape(), where(), " has shape ",
                       conflux::to_string(ins.get_shape()), " but computes ",
                       conflux::to_string(recomputed));
        seen.insert(&ins);
    }
    CONFLUX_ASSERT(returns <= 1, "module ", name_, " has ", returns, " returns");
}

std::map<const instruction*, std::string> module::print_names() const {
    std::map<const instruction*, std::string> names;
    std::size_t n = 0;
    for (auto& ins : instructions_) {
        if (auto* p = ins.get_operator().get_if<op::param>())
            names[&ins] = "%" + p->name_;
        else
            names[&ins] = "@" + std::to_string(n);
        ++n;
    }
    return names;
}

void module::print(std::ostream& os) const {
    auto names = print_names();
    os << "module " << name_ << " {\n";
    for (auto& ins : instructions_) {
        os << "  ";
        if (!ins.is_return()) os << names.at(&ins) << " = ";
        if (ins.is_param())
            os << "@param";
        else
            os << ins.get_operator().to_string();
        if (!ins.inputs().empty()) {
            os << "(";
            for (std::size_t i = 0; i < ins.inputs().size(); ++i)
                os << (i ? ", " : "") << names.at(ins.inputs()[i]);
            os << ")";
        }
        if (!ins.module_inputs().empty()) {
            os << " [";
            for (std::size_t i = 0; i < ins.module_inputs().size(); ++i)
                os << (i ? ", " : "") << ins.module_inputs()[i]->name();
            os << "]";
        }
        if (!ins.is_return()) os << " -> " << conflux::to_string(ins.get_shape());
        os << "\n";
    }
    os << "}\n";
}

std::string module::to_string() const {
    std::ostringstream os;
    print(os);
    return os.str();
}

} // namespace conflux
