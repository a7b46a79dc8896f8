// An instruction applies an operation to earlier instructions (and optionally submodules). Its
// shape is computed when it is created and whenever it is replaced; users are tracked so passes
// can walk the graph both ways.
#pragma once

#include "conflux/ir/operation.hpp"

#include <list>
#include <vector>

namespace conflux {

class instruction;
class module;
using instruction_ref = instruction*;

class instruction {
public:
    instruction(operation op, std::vector<instruction_ref> inputs, std::vector<module*> modules,
                shape s)
        : op_(std::move(op)), inputs_(std::move(inputs)), modules_(std::move(modules)),
          shape_(std::move(s)) {}

    const operation& get_operator() const { return op_; }
    std::string name() const { return op_.name(); }
    const std::vector<instruction_ref>& inputs() const { return inputs_; }
    const std::vector<instruction_ref>& outputs() const { return outputs_; }
    const std::vector<module*>& module_inputs() const { return modules_; }
    const shape& get_shape() const { return shape_; }

    bool is_param() const { return name() == "@param"; }
    bool is_literal() const { return name() == "@literal"; }
    bool is_return() const { return name() == "@return"; }

private:
    friend class module;
    operation op_;
    std::vector<instruction_ref> inputs_;
    std::vector<module*> modules_;
    shape shape_;
    std::vector<instruction_ref> outputs_;
    module* parent_ = nullptr;
    std::list<instruction>::iterator self_;
};

} // namespace conflux
