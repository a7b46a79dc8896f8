#include "conflux/ops/op_registry.hpp"

#include "conflux/ir/builtin_ops.hpp"
#include "conflux/ir/module.hpp"
#include "conflux/ops/attention.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/fused.hpp"
#include "conflux/ops/normalization.hpp"
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/reduce.hpp"
#include "conflux/ops/resize.hpp"
#include "conflux/ops/round_mantissa.hpp"
#include "conflux/ops/scan.hpp"
#include "conflux/ops/scatter.hpp"
#include "conflux/ops/top_k.hpp"
#include "conflux/ops/views.hpp"

#include <functional>
#include <map>

namespace conflux {

namespace {

using json = nlohmann::json;

struct registered_op {
    std::function<operation(const json&)> make;
    bool takes_submodules = false;
};

using op_table = std::map<std::string, registered_op, std::less<>>;

template <class Op>
constexpr bool computes_from_submodules = requires(const Op& op, const std::vector<shape>& in,
                                                   const std::vector<const module*>& m) {
    op.compute_shape(in, m);
};

// `sample` gives the name; `make` builds an op of that name from its attributes.
template <class Op, class Make> void add(op_table& table, const Op& sample, Make make) {
    const bool added =
        table.emplace(sample.name(), registered_op{std::move(make), computes_from_submodules<Op>})
            .second;
    CONFLUX_ASSERT(added, "two ops are named ", sample.name());
}

// An op of one name. One with attributes() must read them back (a compile error otherwise, so
// that no op can be added without it); one without has nothing to read.
template <class Op> void add(op_table& table) {
    add(table, Op{}, [](const json& a) -> operation {
        if constexpr (requires(const Op& op) { op.attributes(); })
            return Op::from_attributes(a);
        else
            return Op{};
    });
}

op_table make_table() {
    op_table t;
    add<op::attention>(t);
    add<op::convolution>(t);
    add<op::concat>(t);
    add<op::pad>(t);
    add<op::gather>(t);
    add<op::gather_elements>(t);
    add<op::trilu>(t);
    add<op::gather_nd>(t);
    add<op::dot>(t);
    add<op::pointwise>(t);
    add<op::fused_gemm>(t);
    add<op::batch_norm>(t);
    add<op::layer_norm>(t);
    add<op::resize>(t);
    add<op::round_mantissa>(t);
    add<op::cumsum>(t);
    add<op::scatter_nd>(t);
    add<op::scatter_elements>(t);
    add<op::top_k>(t);
    add<op::reshape>(t);
    add<op::transpose>(t);
    add<op::squeeze>(t);
    add<op::unsqueeze>(t);
    add<op::flatten>(t);
    add<op::broadcast>(t);
    add<op::slice>(t);
    add<op::contiguous>(t);
    add<op::get_tuple_elem>(t);

    // The ops whose name holds one of their fields: one name per value.
    for (auto k : op::all_elementwise_kinds)
        add(t, op::elementwise{.kind = k},
            [k](const json& a) { return op::elementwise::from_attributes(k, a); });
    for (auto k : op::all_reduce_kinds)
        add(t, op::reduce{.kind = k},
            [k](const json& a) { return op::reduce::from_attributes(k, a); });
    for (auto m : {op::pooling_mode::max, op::pooling_mode::average})
        add(t, op::pooling{.mode = m},
            [m](const json& a) { return op::pooling::from_attributes(m, a); });
    for (bool log : {false, true})
        add(t, op::softmax{.log = log},
            [log](const json& a) { return op::softmax::from_attributes(log, a); });
    for (bool max : {true, false})
        add(t, op::arg_reduce{.max = max},
            [max](const json& a) { return op::arg_reduce::from_attributes(max, a); });
    return t;
}

const op_table& ops() {
    static const op_table table = make_table();
    return table;
}

} // namespace

operation make_op(const std::string& name, const json& attributes) {
    const auto it = ops().find(name);
    CONFLUX_USER_CHECK(it != ops().end(), "unknown op '", name, "'");
    CONFLUX_USER_CHECK(attributes.is_object(), "attributes: expected an object, found ",
                       attributes.type_name());
    operation op = it->second.make(attributes);
    // A field the op does not read would be dropped without a word, and the op would not be the
    // one the file describes (a newer version's field, a misspelt name).
    const json written = op.attributes();
    for (const auto& field : attributes.items())
        CONFLUX_USER_CHECK(written.contains(field.key()), "attributes.", field.key(), ": ", name,
                           " has no such attribute (or leaves it out at its default value)");
    return op;
}

bool op_takes_submodules(const std::string& name) {
    const auto it = ops().find(name);
    return it != ops().end() && it->second.takes_submodules;
}

std::vector<std::string> registered_op_names() {
    std::vector<std::string> names;
    for (const auto& entry : ops())
        names.push_back(entry.first);
    return names;
}

} // namespace conflux
