// --output-dir of `conflux run` and `conflux perf`: each output of a run written as
// DIR/<output name>.npy.
#pragma once

#include "conflux/ir/argument.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace conflux::tool {

// Writes results[i] to dir/<names[i]>.npy and prints "wrote PATH" per file on `out`. Names that
// are not usable file names as they are ('/', control characters, ".", "..", too long) and names
// that sanitise alike are changed, and said so on the same line.
void write_output_files(const std::string& dir, const std::vector<std::string>& names,
                        const std::vector<argument>& results, std::ostream& out);

} // namespace conflux::tool
