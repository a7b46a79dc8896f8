#include "conflux/passes/eliminate_common_subexpressions.hpp"

#include "conflux/ir/literal_value.hpp"
#include "passes/scalar_factors.hpp"

#include <algorithm>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace conflux {

namespace {

using passes_detail::returned;

// Equal keys for values that may be equal; the candidates are then compared exactly.
std::size_t candidate_key(instruction_ref ins) {
    std::size_t h = std::hash<std::string>{}(ins->name());
    const auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    if (const argument* value = literal_value(ins)) {
        // Over the bytes (a literal from a fold or the importer owns them in standard layout).
        mix(std::hash<std::string_view>{}(
            std::string_view(reinterpret_cast<const char*>(value->data()),
                             value->data() ? value->get_shape().bytes() : 0)));
        return h;
    }
    for (instruction_ref in : ins->inputs())
        mix(std::hash<const void*>{}(in));
    return h;
}

bool same_value(instruction_ref a, instruction_ref b) {
    return a->inputs() == b->inputs() && a->get_shape() == b->get_shape() &&
           a->get_operator() == b->get_operator();
}

} // namespace

void eliminate_common_subexpressions::apply(module& m) const {
    std::unordered_map<std::size_t, std::vector<instruction_ref>> seen;
    std::vector<instruction_ref> order;
    for (auto& ins : m)
        order.push_back(&ins);
    // In order, so the value kept is defined before every user of the ones it replaces, and a
    // replaced value's users (compared after it) find their inputs already merged.
    for (instruction_ref ins : order) {
        if (ins->is_param() || ins->is_return() || !ins->module_inputs().empty() ||
            ins->outputs().empty() || ins->get_shape().is_tuple())
            continue;
        auto& candidates = seen[candidate_key(ins)];
        const auto same = std::find_if(candidates.begin(), candidates.end(),
                                       [&](instruction_ref c) { return same_value(c, ins); });
        if (same != candidates.end() && !returned(ins)) {
            m.replace_all_uses(ins, *same);
            continue;
        }
        candidates.push_back(ins);
    }
}

} // namespace conflux
