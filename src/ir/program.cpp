#include "conflux/ir/program.hpp"

#include <set>
#include <sstream>
#include <vector>

namespace conflux {

program::program(program&& other) noexcept : modules_(std::move(other.modules_)) {
    for (auto& [name, m] : modules_)
        m->owner_ = this;
}

program& program::operator=(program&& other) noexcept {
    modules_ = std::move(other.modules_);
    first_free_.clear();
    for (auto& [name, m] : modules_)
        m->owner_ = this;
    return *this;
}

module& program::create_module(const std::string& name) {
    CONFLUX_ASSERT(modules_.count(name) == 0, "module ", name, " already exists");
    auto& m = modules_[name];
    m = std::make_unique<module>(name);
    m->owner_ = this;
    return *m;
}

std::string program::unique_module_name(const std::string& prefix) const {
    std::size_t& i = first_free_[prefix];
    while (modules_.count(prefix + std::to_string(i)) != 0)
        ++i;
    return prefix + std::to_string(i);
}

module* program::get_module(const std::string& name) const {
    auto it = modules_.find(name);
    return it == modules_.end() ? nullptr : it->second.get();
}

void program::remove_unreachable_modules() {
    std::set<const module*> reached;
    std::vector<const module*> work{&main()};
    while (!work.empty()) {
        const module* m = work.back();
        work.pop_back();
        if (!reached.insert(m).second) continue;
        for (const auto& ins : *m)
            for (const auto* sub : ins.module_inputs())
                work.push_back(sub);
    }
    std::erase_if(modules_,
                  [&](const auto& entry) { return reached.count(entry.second.get()) == 0; });
    first_free_.clear();
}

void program::validate() const {
    for (const auto& [name, m] : modules_)
        m->validate();
}

std::string program::to_string() const {
    std::ostringstream os;
    for (const auto& [name, m] : modules_)
        if (name != "main") m->print(os);
    main().print(os);
    return os.str();
}

} // namespace conflux
