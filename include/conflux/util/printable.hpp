// Names from a model or a cache (value names, node names, configs) reach terminals, logs and
// file names. A control character in one could move the cursor, rewrite what was printed before
// it, or split one message into two lines, so they are shown escaped.
#pragma once

#include <string>
#include <string_view>

namespace conflux {

// s with each control character (below 0x20, and 0x7f) written as \xNN, so that the text stays
// on one line and cannot drive a terminal.
std::string printable(std::string_view s);

// Whether s holds a control character (below 0x20, or 0x7f).
bool has_control_character(std::string_view s);

} // namespace conflux
