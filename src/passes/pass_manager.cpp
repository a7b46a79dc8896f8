#include "conflux/passes/pass_manager.hpp"

#include "conflux/ir/program.hpp"

#include <ostream>

namespace conflux {

namespace {

void validate_owner(const module& m) {
    if (m.owner() != nullptr)
        m.owner()->validate();
    else
        m.validate();
}

std::string printed(const module& m) {
    return m.owner() != nullptr ? m.owner()->to_string() : m.to_string();
}

} // namespace

void run_passes(module& m, const std::vector<pass>& passes, const pass_trace& trace) {
    for (const auto& p : passes) {
        if (trace.out && trace.print_passes) *trace.out << "pass: " << p.name() << "\n";
        try {
            p.apply(m);
            if (m.owner() != nullptr && &m.owner()->main() == &m)
                m.owner()->remove_unreachable_modules();
            validate_owner(m);
        } catch (const user_error&) {
            throw;
        } catch (const std::exception& e) {
            throw internal_error("pass " + p.name() + ": " + e.what());
        }
        if (trace.out && (trace.print_after_all || trace.print_after == p.name()))
            *trace.out << "after " << p.name() << ":\n" << printed(m);
    }
}

} // namespace conflux
