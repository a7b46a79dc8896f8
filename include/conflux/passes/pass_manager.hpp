// Runs a list of passes over a module, validating the whole program after each one and tracing
// on request. A pass that throws or leaves an invalid module is reported by name.
#pragma once

#include "conflux/passes/pass.hpp"

#include <iosfwd>
#include <string>
#include <vector>

namespace conflux {

struct pass_trace {
    std::ostream* out = nullptr;  // where traces go (nothing is printed when null)
    bool print_passes = false;    // the name of each pass as it runs
    std::string print_after;      // print the program after every pass of this name
    bool print_after_all = false; // print the program after every pass
};

void run_passes(module& m, const std::vector<pass>& passes, const pass_trace& trace = {});

} // namespace conflux
