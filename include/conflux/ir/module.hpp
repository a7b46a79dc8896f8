// A module is an ordered list of instructions: named parameters, literals, operations and one
// return (which may return several values). Order is a valid topological order at all times;
// validate() checks that and recomputes every shape.
#pragma once

#include "conflux/ir/builtin_ops.hpp"
#include "conflux/ir/instruction.hpp"

#include <iosfwd>
#include <list>
#include <map>
#include <string>
#include <vector>

namespace conflux {

class program;
class module;

// What one parameter of a split part is bound to: an argument of the original call (`arg`), or,
// for a split placeholder, output `output` of the earlier part `part` (the caller rewires it).
struct split_input {
    instruction_ref arg = nullptr;
    int part = -1;
    std::size_t output = 0;
    bool is_placeholder() const { return part >= 0; }
};

// One part of a split module: a new module of the same program and what each of its parameters
// (in order) is bound to.
struct split_part {
    module* mod = nullptr;
    std::vector<split_input> inputs;
};

class module {
public:
    explicit module(std::string name = "main") : name_(std::move(name)) {}
    module(const module&) = delete;
    module& operator=(const module&) = delete;

    const std::string& name() const { return name_; }

    // Creates a new module in the program that owns this one, named `prefix` plus a number that
    // makes it unique. Fusion passes put the submodules of fused ops there.
    module& create_submodule(const std::string& prefix);
    program* owner() const { return owner_; }

    instruction_ref add_parameter(const std::string& name, const shape& s);
    instruction_ref add_literal(argument value);
    instruction_ref add_instruction(const operation& op, std::vector<instruction_ref> inputs,
                                    std::vector<module*> modules = {});
    // Inserts before `pos` (which must belong to this module).
    instruction_ref insert_instruction(instruction_ref pos, const operation& op,
                                       std::vector<instruction_ref> inputs,
                                       std::vector<module*> modules = {});
    instruction_ref add_return(std::vector<instruction_ref> values,
                               std::vector<std::string> names = {});

    // Changes `ins` in place to a new op and inputs; its users keep pointing at it. The new shape
    // must equal the old one unless `allow_shape_change`.
    void replace_instruction(instruction_ref ins, const operation& op,
                             std::vector<instruction_ref> inputs, std::vector<module*> modules = {},
                             bool allow_shape_change = false);
    // Points every user of `old_ins` at `new_ins` instead. Lens and dtype must match; when only
    // strides differ, the users' shapes are recomputed (transitively, while they change).
    void replace_all_uses(instruction_ref old_ins, instruction_ref new_ins);
    // Removes an instruction nobody uses.
    void remove_instruction(instruction_ref ins);
    // Moves `ins` to just before `pos`.
    void move_instruction(instruction_ref ins, instruction_ref pos);

    auto begin() { return instructions_.begin(); }
    auto end() { return instructions_.end(); }
    auto begin() const { return instructions_.begin(); }
    auto end() const { return instructions_.end(); }
    std::size_t size() const { return instructions_.size(); }
    bool contains(instruction_ref ins) const;

    std::vector<instruction_ref> parameters() const;              // in order of appearance
    instruction_ref get_parameter(const std::string& name) const; // nullptr when absent
    instruction_ref get_return() const;                           // nullptr when absent
    std::vector<std::string> output_names() const;                // from the return, or "output<i>"

    // Splits this module (called with `args`, one per parameter in order) into two parts at the
    // values `splits`: part 1 is the closure feeding them and returns them; part 2 takes one new
    // parameter per split (standard shape) plus the original parameters it still reads and
    // returns the original returns. The 3-way form splits part 2 again at `splits2`. Evaluating
    // the parts in sequence equals evaluating the whole. The parts are new modules of `into`
    // (by default the owning program); this module is unchanged.
    std::vector<split_part> split(const std::vector<instruction_ref>& args,
                                  const std::vector<instruction_ref>& splits) const;
    std::vector<split_part> split(const std::vector<instruction_ref>& args,
                                  const std::vector<instruction_ref>& splits1,
                                  const std::vector<instruction_ref>& splits2) const;
    std::vector<split_part> split(program& into, const std::vector<instruction_ref>& args,
                                  const std::vector<instruction_ref>& splits) const;
    std::vector<split_part> split(program& into, const std::vector<instruction_ref>& args,
                                  const std::vector<instruction_ref>& splits1,
                                  const std::vector<instruction_ref>& splits2) const;

    // Throws internal_error naming the instruction when the module is inconsistent.
    void validate() const;

    void print(std::ostream& os) const;
    std::string to_string() const;
    // Stable names used by the printer: parameters by name, everything else "@<position>".
    std::map<const instruction*, std::string> print_names() const;

private:
    std::list<instruction>::iterator find(instruction_ref ins);
    shape compute_shape(const operation& op, const std::vector<instruction_ref>& inputs,
                        const std::vector<module*>& modules) const;
    static void link(instruction_ref ins);
    static void unlink(instruction_ref ins);

    friend class program;
    std::string name_;
    std::list<instruction> instructions_;
    program* owner_ = nullptr;
};

} // namespace conflux
