#include "conflux/ir/operation.hpp"

namespace conflux {

std::string operation::to_string() const {
    auto attrs = attributes();
    if (attrs.is_null() || attrs.empty()) return name();
    // Replace, not throw: a listing must print whatever bytes a model or file gave a name.
    return name() + attrs.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void check_input_count(const std::string& op, const std::vector<shape>& inputs, std::size_t lo,
                       std::size_t hi) {
    if (inputs.size() < lo || inputs.size() > hi) {
        if (lo == hi) throw_user_error(op, ": expects ", lo, " input(s), got ", inputs.size());
        throw_user_error(op, ": expects ", lo, " to ", hi, " inputs, got ", inputs.size());
    }
}

} // namespace conflux
