#include "conflux/ref/evaluate.hpp"

#include <unordered_map>

namespace conflux::ref {

namespace {

std::vector<argument> evaluate_positional(const module& m, const std::vector<argument>& args);

const eval_context& reference_context() {
    static const eval_context ctx{[](const module& sub, const std::vector<argument>& args) {
        return evaluate_positional(sub, args);
    }};
    return ctx;
}

std::vector<argument> run(const module& m,
                          const std::function<argument(const instruction&)>& bind_param) {
    // Values die after their last use so peak memory follows the graph's width, not its length.
    // Counted per input slot: mul(x, x) uses x twice and must not free it after the first.
    std::unordered_map<const instruction*, std::size_t> remaining_uses;
    for (const auto& ins : m)
        for (auto* in : ins.inputs())
            ++remaining_uses[in];

    std::unordered_map<const instruction*, argument> values;
    for (const auto& ins : m) {
        if (ins.is_return()) {
            std::vector<argument> results;
            for (auto* in : ins.inputs())
                results.push_back(values.at(in));
            return results;
        }
        argument result;
        if (ins.is_param()) {
            result = bind_param(ins);
        } else {
            std::vector<argument> inputs;
            inputs.reserve(ins.inputs().size());
            for (auto* in : ins.inputs())
                inputs.push_back(values.at(in));
            std::vector<const module*> mods(ins.module_inputs().begin(), ins.module_inputs().end());
            result = ins.get_operator().eval(ins.get_shape(), inputs, mods, reference_context());
            CONFLUX_ASSERT(result.get_shape().lens() == ins.get_shape().lens() &&
                               result.get_shape().type() == ins.get_shape().type(),
                           ins.name(), " evaluated to ", to_string(result.get_shape()),
                           " but its shape is ", to_string(ins.get_shape()));
        }
        values[&ins] = std::move(result);
        for (auto* in : ins.inputs())
            if (--remaining_uses[in] == 0 && !in->is_return()) values.erase(in);
    }
    throw_internal_error("module ", m.name(), " has no return");
}

void check_bound(const instruction& ins, const argument& a) {
    const auto* p = ins.get_operator().get_if<op::param>();
    const auto& want = ins.get_shape();
    const auto& got = a.get_shape();
    CONFLUX_USER_CHECK(got.type() == want.type() && got.lens() == want.lens(), "input '", p->name_,
                       "': expected ", to_string(want.as_standard()), ", got ",
                       to_string(got.as_standard()));
}

std::vector<argument> evaluate_positional(const module& m, const std::vector<argument>& args) {
    auto params = m.parameters();
    CONFLUX_ASSERT(params.size() == args.size(), "module ", m.name(), " takes ", params.size(),
                   " arguments, given ", args.size());
    std::unordered_map<const instruction*, std::size_t> position;
    for (std::size_t i = 0; i < params.size(); ++i)
        position[params[i]] = i;
    return run(m, [&](const instruction& ins) {
        const auto& a = args.at(position.at(&ins));
        check_bound(ins, a);
        return a;
    });
}

} // namespace

std::vector<argument> evaluate(const module& m, const std::vector<argument>& args) {
    return evaluate_positional(m, args);
}

std::vector<argument> evaluate(const module& m, const parameter_map& params) {
    return run(m, [&](const instruction& ins) {
        const auto* p = ins.get_operator().get_if<op::param>();
        auto it = params.find(p->name_);
        CONFLUX_USER_CHECK(it != params.end(), "missing input '", p->name_, "' (",
                           to_string(ins.get_shape()), ")");
        check_bound(ins, it->second);
        return it->second;
    });
}

} // namespace conflux::ref
