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
    program(program&&) = default;
    program& operator=(program&&) = default;

    module& main() { return *modules_.at("main"); }
    const module& main() const { return *modules_.at("main"); }

    module& create_module(const std::string& name);
    module* get_module(const std::string& name) const;
    const std::map<std::string, std::unique_ptr<module>>& modules() const { return modules_; }

    void validate() const;
    // Submodules first (sorted by name), then main.
    std::string to_string() const;

private:
    std::map<std::string, std::unique_ptr<module>> modules_;
};

} // namespace conflux
