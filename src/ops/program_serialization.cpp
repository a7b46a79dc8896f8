#include "conflux/ops/program_serialization.hpp"

#include "conflux/ir/serialize.hpp"
#include "conflux/ops/op_registry.hpp"

#include <map>
#include <set>
#include <utility>

namespace conflux {

namespace {

using json = nlohmann::json;

constexpr std::size_t format_version = 1;

json instruction_to_json(const instruction& ins,
                         const std::map<const instruction*, std::size_t>& position,
                         blob_list* blobs) {
    const operation& o = ins.get_operator();
    json j{{"op", o.name()}};
    if (const auto* p = o.get_if<op::param>()) {
        j["name"] = p->name_;
        j["shape"] = shape_to_json(p->shape_);
        return j;
    }
    if (const auto* l = o.get_if<op::literal>()) {
        j["value"] = argument_to_json(l->value, blobs);
        return j;
    }
    json inputs = json::array();
    for (const auto* in : ins.inputs())
        inputs.push_back(position.at(in));
    j["inputs"] = std::move(inputs);
    if (const auto* r = o.get_if<op::return_op>()) {
        if (!r->names.empty()) j["names"] = r->names;
        return j;
    }
    j["attributes"] = o.attributes();
    if (!ins.module_inputs().empty()) {
        json names = json::array();
        for (const module* m : ins.module_inputs())
            names.push_back(m->name());
        j["modules"] = std::move(names);
    }
    return j;
}

// Every module of the program, each after the modules its instructions use (so that reading
// them in order builds a submodule before the op that needs its result shape), main last.
std::vector<const module*> dependency_order(const program& p) {
    std::vector<const module*> order;
    std::set<const module*> entered;
    std::set<const module*> placed;
    auto visit = [&](const module* root) {
        // (module, whether its submodules are placed already)
        std::vector<std::pair<const module*, bool>> stack{{root, false}};
        while (!stack.empty()) {
            const auto [m, subs_placed] = stack.back();
            stack.pop_back();
            if (placed.count(m) != 0) continue;
            if (subs_placed) {
                placed.insert(m);
                order.push_back(m);
                continue;
            }
            CONFLUX_ASSERT(entered.insert(m).second, "module ", m->name(), " uses itself");
            stack.emplace_back(m, true);
            for (const auto& ins : *m)
                for (const module* sub : ins.module_inputs())
                    if (placed.count(sub) == 0) stack.emplace_back(sub, false);
        }
    };
    for (const auto& [name, m] : p.modules())
        if (name != "main") visit(m.get());
    visit(&p.main());
    return order;
}

// `f()`, with `where` put in front of the message of a user_error it throws: the op and the
// module API say what is wrong, not in which instruction of the file.
template <class F> auto located(const std::string& where, F f) {
    try {
        return f();
    } catch (const user_error& e) {
        throw_user_error(where, ": ", e.what());
    }
}

struct module_reader {
    module& m;
    // The modules read so far: the only ones an instruction may use, which rules out cycles.
    const std::map<std::string, module*>& earlier_modules;
    std::vector<instruction_ref> built;
    const blob_table* blobs = nullptr;

    std::vector<instruction_ref> inputs(const json& j, const std::string& where) const {
        std::vector<instruction_ref> refs;
        for (std::size_t k : json_sizes(j, "inputs", where)) {
            CONFLUX_USER_CHECK(k < built.size(), where, ": input ", refs.size(), " is instruction ",
                               k, ", not an earlier one of module ", m.name());
            refs.push_back(built[k]);
        }
        return refs;
    }

    std::vector<module*> submodules(const json& j, const std::string& where) const {
        std::vector<module*> subs;
        if (!j.contains("modules")) return subs;
        for (const auto& name : json_strings(j, "modules", where)) {
            const auto it = earlier_modules.find(name);
            CONFLUX_USER_CHECK(it != earlier_modules.end(), where, ": submodule '", name,
                               "' is not one of the modules before module ", m.name());
            subs.push_back(it->second);
        }
        return subs;
    }

    instruction_ref read(const json& j, const std::string& name, const std::string& where,
                         bool last) const {
        if (name == "@param") {
            const std::string param = json_string(j, "name", where);
            const shape s = shape_from_json(json_field(j, "shape", where), where + ".shape");
            return located(where, [&] { return m.add_parameter(param, s); });
        }
        if (name == "@literal")
            return m.add_literal(
                argument_from_json(json_field(j, "value", where), where + ".value", blobs));
        auto values = inputs(j, where);
        if (name == "@return") {
            CONFLUX_USER_CHECK(last, where, ": the return must be the last instruction of module ",
                               m.name());
            std::vector<std::string> names;
            if (j.contains("names")) names = json_strings(j, "names", where);
            CONFLUX_USER_CHECK(names.empty() || names.size() == values.size(), where, ": ",
                               names.size(), " names for ", values.size(), " values");
            return m.add_return(std::move(values), std::move(names));
        }
        auto subs = submodules(j, where);
        CONFLUX_USER_CHECK(subs.empty() || op_takes_submodules(name), where, ": ", name,
                           " takes no submodules");
        const json& attributes = json_field(j, "attributes", where);
        return located(where, [&] {
            return m.add_instruction(make_op(name, attributes), std::move(values), std::move(subs));
        });
    }

    void read_all(const json& instructions) {
        for (std::size_t i = 0; i < instructions.size(); ++i) {
            const std::string at = "module " + m.name() + ", instruction " + std::to_string(i);
            const std::string name = json_string(instructions[i], "op", at);
            built.push_back(
                read(instructions[i], name, at + " (" + name + ")", i + 1 == instructions.size()));
        }
    }
};

} // namespace

json program_to_json(const program& p, blob_list* blobs) {
    json modules = json::array();
    for (const module* m : dependency_order(p)) {
        std::map<const instruction*, std::size_t> position;
        json instructions = json::array();
        for (const auto& ins : *m) {
            instructions.push_back(instruction_to_json(ins, position, blobs));
            position.emplace(&ins, position.size());
        }
        modules.push_back(json{{"name", m->name()}, {"instructions", std::move(instructions)}});
    }
    return json{{"version", format_version}, {"modules", std::move(modules)}};
}

program program_from_json(const json& j, const blob_table* blobs) {
    const std::size_t version = json_size(j, "version", "program");
    CONFLUX_USER_CHECK(version == format_version, "program: version ", version,
                       ", but this Conflux reads version ", format_version);
    program p;
    std::map<std::string, module*> read_modules;
    const json& modules = json_array(j, "modules", "program");
    for (std::size_t i = 0; i < modules.size(); ++i) {
        const std::string where = "program.modules[" + std::to_string(i) + "]";
        const std::string name = json_string(modules[i], "name", where);
        CONFLUX_USER_CHECK(!name.empty(), where, ": a module needs a name");
        CONFLUX_USER_CHECK(read_modules.count(name) == 0, where, ": a second module named '", name,
                           "'");
        module& m = name == "main" ? p.main() : p.create_module(name);
        module_reader reader{m, read_modules, {}, blobs};
        reader.read_all(json_array(modules[i], "instructions", "module " + name));
        read_modules.emplace(name, &m);
    }
    CONFLUX_USER_CHECK(read_modules.count("main") != 0, "program: there is no module main");
    p.validate();
    return p;
}

} // namespace conflux
