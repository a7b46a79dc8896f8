// A program owns its modules: "main" plus the submodules that fused ops refer to.
#pragma once

#include "conflux/ir/module.hpp"

#include <map>
#include <memory>
#include <string>

namespace conflux {

class program {
public:
    program() { create_module("main"); }
    program(const program&) = delete;
    program& operator=(const program&) = delete;
    // Modules keep a pointer to their owner, so moves re-point them.
    program(program&& other) noexcept;
    program& operator=(program&& other) noexcept;

    module& main() { return *modules_.at("main"); }
    const module& main() const { return *modules_.at("main"); }

    module& create_module(const std::string& name);
    module* get_module(const std::string& name) const;
    // `prefix` followed by the smallest number not yet used as a module name.
    std::string unique_module_name(const std::string& prefix) const;
    const std::map<std::string, std::unique_ptr<module>>& modules() const { return modules_; }

    // Removes every module that main does not reach through instructions' submodules (fusion
    // leaves some behind when it inlines one fused op into another).
    void remove_unreachable_modules();

    void validate() const;
    // Submodules first (sorted by name), then main.
    std::string to_string() const;

private:
    std::map<std::string, std::unique_ptr<module>> modules_;
    // Per prefix: every number below it is taken, so unique_module_name starts there instead of
    // at 0 (fusing n groups would otherwise cost n^2 lookups). Cleared when modules are removed.
    mutable std::map<std::string, std::size_t> first_free_;
};

} // namespace conflux
