// The ops every module has: named parameters, literals (constant data) and the return.
#pragma once

#include "conflux/ir/operation.hpp"

namespace conflux::op {

struct param {
    std::string name_;
    shape shape_;
    std::string name() const { return "@param"; }
    nlohmann::json attributes() const { return {{"name", name_}}; }
    op_traits traits() const { return {.builtin = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape&, const std::vector<argument>&) const;
    bool operator==(const param&) const = default;
};

struct literal {
    argument value;
    std::string name() const { return "@literal"; }
    op_traits traits() const { return {.builtin = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape&, const std::vector<argument>&) const { return value; }
    bool operator==(const literal& other) const {
        return value.get_shape() == other.value.get_shape() && value.same_values(other.value);
    }
};

// Returns its inputs; `names` (optional) are the graph output names the user sees.
struct return_op {
    std::vector<std::string> names;
    std::string name() const { return "@return"; }
    nlohmann::json attributes() const {
        return names.empty() ? nlohmann::json::object() : nlohmann::json{{"names", names}};
    }
    op_traits traits() const { return {.builtin = true}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape&, const std::vector<argument>&) const;
    bool operator==(const return_op&) const = default;
};

// Element `index` of a tuple-shaped value (an op with several results).
struct get_tuple_elem {
    std::size_t index = 0;
    std::string name() const { return "get_tuple_elem"; }
    static get_tuple_elem from_attributes(const nlohmann::json& a);
    nlohmann::json attributes() const { return {{"index", index}}; }
    shape compute_shape(const std::vector<shape>& in) const;
    argument eval(const shape&, const std::vector<argument>& in) const;
    bool operator==(const get_tuple_elem&) const = default;
};

} // namespace conflux::op
