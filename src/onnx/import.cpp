// The graph walk: initializers become literals, the remaining graph inputs parameters, every
// node goes through its builder in file order (ONNX requires topological order), and the graph
// outputs become the return. Each value name maps to the instruction that computes it.
#include "conflux/onnx/import.hpp"
#include "conflux/passes/dce.hpp"

#include "conflux/util/checked_size.hpp"
#include "conflux/util/printable.hpp"
#include "conflux/util/read_file.hpp"
#include "onnx/external_data.hpp"
#include "onnx/node_context.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <unordered_map>

namespace conflux::onnx {

namespace {

constexpr std::int64_t min_opset = 7;
constexpr std::int64_t max_opset = 21;

const char* const input_dim_hint = "give the input's lens with --input-dim ";

dims input_lens(const ::onnx::ValueInfoProto& vi, const import_options& options) {
    const auto& name = vi.name();
    const auto hint = [&] { return detail::concat(input_dim_hint, name, ":d0,d1,..."); };
    auto given = options.input_dims.find(name);
    const auto& tt = vi.type().tensor_type();
    if (!tt.has_shape()) {
        CONFLUX_USER_CHECK(given != options.input_dims.end(), "input '", name,
                           "' has no shape in the model; ", hint());
        return given->second;
    }
    const auto& model_dims = tt.shape().dim();
    if (given != options.input_dims.end()) {
        const auto& lens = given->second;
        CONFLUX_USER_CHECK(lens.size() == std::size_t(model_dims.size()), "--input-dim ", name,
                           ": gives ", lens.size(), " dims but the model's input has rank ",
                           model_dims.size());
        for (int i = 0; i < model_dims.size(); ++i) {
            const auto& d = model_dims.Get(i);
            CONFLUX_USER_CHECK(!d.has_dim_value() ||
                                   std::int64_t(lens[std::size_t(i)]) == d.dim_value(),
                               "--input-dim ", name, ": dim ", i, " is ", lens[std::size_t(i)],
                               " but the model fixes it to ", d.dim_value());
        }
        return lens;
    }
    dims lens;
    for (int i = 0; i < model_dims.size(); ++i) {
        const auto& d = model_dims.Get(i);
        if (d.has_dim_value()) {
            lens.push_back(
                checked_dim(d.dim_value(), detail::concat("input '", name, "': dim ", i)));
        } else if (i == 0) {
            const std::size_t batch = options.batch.value_or(1);
            CONFLUX_USER_CHECK(batch <= max_tensor_elements, "input '", name, "': dim 0 (--batch ",
                               batch, ") is larger than ", max_tensor_elements_text,
                               ", the most elements a tensor may have");
            lens.push_back(batch);
        } else {
            std::string what = d.has_dim_param() && !d.dim_param().empty()
                                   ? "'" + d.dim_param() + "'"
                                   : std::string("unnamed");
            throw_user_error("input '", name, "': dim ", i, " (", what,
                             ") is symbolic and cannot be resolved; ", hint());
        }
    }
    return lens;
}

shape input_shape(const ::onnx::ValueInfoProto& vi, const import_options& options) {
    CONFLUX_USER_CHECK(vi.has_type() && vi.type().has_tensor_type(), "input '", vi.name(),
                       "' is not a tensor, which is not supported");
    int elem = vi.type().tensor_type().elem_type();
    auto type = to_dtype(elem);
    CONFLUX_USER_CHECK(type.has_value(), "input '", vi.name(), "' has element type ",
                       onnx_type_name(elem), ", which is not supported");
    // Named here rather than by the shape constructor: the lens come from the model, --batch or
    // --input-dim, and f32[2^62+1, 4] must not pass as 4 elements.
    auto lens = input_lens(vi, options);
    checked_elements(lens, "input '" + vi.name() + "'");
    return {*type, lens};
}

std::int64_t default_opset(const ::onnx::ModelProto& model, const std::string& what) {
    std::optional<std::int64_t> opset;
    for (const auto& o : model.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    if (!opset.has_value()) {
        std::string domains;
        for (const auto& o : model.opset_import())
            domains += (domains.empty() ? "'" : ", '") + o.domain() + "'";
        throw_user_error("unsupported model: ", what,
                         " imports no opset of the default ONNX domain, only ", domains);
    }
    CONFLUX_USER_CHECK(*opset >= min_opset && *opset <= max_opset, what, ": opset ", *opset,
                       " of the default domain is not supported (Conflux supports opsets ",
                       min_opset, " to ", max_opset, ")");
    return *opset;
}

std::int64_t domain_opset(const ::onnx::ModelProto& model, const std::string& domain,
                          std::int64_t fallback) {
    for (const auto& o : model.opset_import())
        if (o.domain() == domain) return o.version();
    return fallback;
}

class graph_importer {
public:
    graph_importer(const ::onnx::ModelProto& model, const import_options& options,
                   const std::string& what)
        : model_(model), graph_(model.graph()), options_(options), what_(what),
          external_(options.external_data_dir) {}

    program run() {
        opset_ = default_opset(model_, what_);
        check_supported_ops();
        add_initializers();
        add_inputs();
        for (int i = 0; i < graph_.node_size(); ++i)
            add_node(graph_.node(i), std::size_t(i));
        add_outputs();
        // Folding leaves literals and shape arithmetic nobody reads; keep only what computes an
        // output.
        dce{}.apply(prog_.main());
        return std::move(prog_);
    }

private:
    module& main() { return prog_.main(); }

    void add_initializers() {
        CONFLUX_USER_CHECK(graph_.sparse_initializer_size() == 0,
                           "sparse initializers are not supported");
        for (const auto& t : graph_.initializer()) {
            CONFLUX_USER_CHECK(!t.name().empty(), what_, ": an initializer has no name");
            // Last writer would win, silently: the graph means one of them, we cannot tell which.
            CONFLUX_USER_CHECK(values_.count(t.name()) == 0, what_, ": initializer '", t.name(),
                               "' is listed twice");
            values_[t.name()] = main().add_literal(to_argument(t, &external_));
            producers_[t.name()] = "initializer";
        }
    }

    void add_inputs() {
        std::set<std::string> names;
        for (const auto& vi : graph_.input())
            names.insert(vi.name());
        for (const auto& [name, lens] : options_.input_dims)
            CONFLUX_USER_CHECK(names.count(name) != 0 && values_.count(name) == 0,
                               "--input-dim names '", name,
                               "', which is not an input of the model");
        std::set<std::string> seen;
        for (const auto& vi : graph_.input()) {
            CONFLUX_USER_CHECK(!vi.name().empty(), what_, ": a graph input has no name");
            CONFLUX_USER_CHECK(seen.insert(vi.name()).second, what_, ": graph input '", vi.name(),
                               "' is listed twice");
            // Before IR version 4 initializers were listed as inputs too; they stay constants.
            if (values_.count(vi.name()) != 0) continue;
            auto s = input_shape_or_frozen(vi);
            if (auto c = options_.constant_inputs.find(vi.name());
                c != options_.constant_inputs.end())
                values_[vi.name()] = main().add_literal(c->second);
            else
                values_[vi.name()] = main().add_parameter(vi.name(), s);
            producers_[vi.name()] = "graph input";
        }
        for (const auto& [name, value] : options_.constant_inputs)
            CONFLUX_USER_CHECK(names.count(name) != 0 && values_.count(name) != 0, what_,
                               ": constant input '", name, "' is not an input of the model");
    }

    // A frozen input's lens come from its value; they must agree with the model's fixed dims.
    shape input_shape_or_frozen(const ::onnx::ValueInfoProto& vi) {
        auto c = options_.constant_inputs.find(vi.name());
        if (c == options_.constant_inputs.end()) return input_shape(vi, options_);
        const auto& value = c->second.get_shape();
        import_options with_dims = options_;
        with_dims.input_dims[vi.name()] = value.lens();
        auto declared = input_shape(vi, with_dims);
        CONFLUX_USER_CHECK(declared.type() == value.type(), "input '", vi.name(), "' is ",
                           to_string(declared.type()), " but its constant value is ",
                           to_string(value.type()));
        return declared;
    }

    // Every op type the importer has no entry for, in one message: a model that needs several
    // would otherwise be reported one op per attempt.
    void check_supported_ops() { check_supported_ops(graph_); }
    void check_supported_ops(const ::onnx::GraphProto& graph) {
        struct unsupported {
            std::string type, first_node, domain;
            std::int64_t opset = 0;
            std::size_t nodes = 0;
            // Refused for a reason the message gives (value_shaped_ops).
            bool value_shaped = false;
        };
        std::vector<std::string> order;
        std::map<std::string, unsupported> found; // by domain and op type
        for (int i = 0; i < graph.node_size(); ++i) {
            const auto& node = graph.node(i);
            const bool default_domain = is_default_domain(node);
            if (default_domain && (onnx_op_table().count(node.op_type()) != 0 || is_if(node)))
                continue;
            const std::string key = node.domain() + "\n" + node.op_type();
            auto [it, inserted] = found.try_emplace(key);
            if (inserted) {
                order.push_back(key);
                const std::int64_t opset =
                    default_domain ? opset_ : domain_opset(model_, node.domain(), opset_);
                it->second = {node.op_type(),
                              node_context(node, std::size_t(i), opset, main(), {}).node_name(),
                              node.domain(),
                              opset,
                              0,
                              default_domain && value_shaped_ops().contains(node.op_type())};
            }
            ++it->second.nodes;
        }
        if (order.empty()) return;
        auto describe = [&](const std::string& key) {
            const unsupported& u = found.at(key);
            const std::string where = detail::concat("domain '", u.domain, "', opset ", u.opset);
            if (u.nodes == 1)
                return detail::concat("'", u.type, "' (node '", u.first_node, "', ", where, ")");
            return detail::concat("'", u.type, "' (", u.nodes, " nodes, the first '", u.first_node,
                                  "', ", where, ")");
        };
        // Ops Conflux will not take, with what the user can do instead: a one-line reason
        // saves the search for why (detectors' exports end in NonZero and NonMaxSuppression).
        std::string value_shaped;
        for (const auto& key : order)
            if (const unsupported& u = found.at(key); u.value_shaped)
                value_shaped += (value_shaped.empty() ? "'" : ", '") + u.type + "'";
        const std::string why =
            value_shaped.empty()
                ? ""
                : "; " + value_shaped +
                      ": output shapes that depend on the input's values, and Conflux compiles "
                      "fixed shapes: export the model without the step that needs them (a "
                      "detector's box selection, say) and run that step after it";
        if (order.size() == 1) throw node_error("unsupported operator " + describe(order[0]) + why);
        std::string list;
        for (const auto& key : order)
            list += (list.empty() ? "" : ", ") + describe(key);
        throw node_error("unsupported operators: " + list + why);
    }

    static const std::set<std::string>& value_shaped_ops() {
        static const std::set<std::string> ops = {"NonZero", "NonMaxSuppression", "Compress",
                                                  "Unique"};
        return ops;
    }

    static bool is_default_domain(const ::onnx::NodeProto& node) {
        return node.domain().empty() || node.domain() == "ai.onnx";
    }
    static bool is_if(const ::onnx::NodeProto& node) {
        return is_default_domain(node) && node.op_type() == "If";
    }

    void add_node(const ::onnx::NodeProto& node, std::size_t index) {
        const auto& table = onnx_op_table();
        const bool default_domain = is_default_domain(node);
        const std::int64_t opset =
            default_domain ? opset_ : domain_opset(model_, node.domain(), opset_);
        node_context probe(node, index, opset, main(), {});
        if (is_if(node)) return add_if(node, index, probe);
        auto it = default_domain ? table.find(node.op_type()) : table.end();
        // check_supported_ops has reported every op type the table lacks before any node.
        CONFLUX_ASSERT(it != table.end(), "no importer entry for ", node.op_type());
        check_unique_attributes(node, probe);
        check_new_outputs(node, probe);
        const auto& builder = it->second;
        auto count = std::size_t(node.input_size());
        if (count < builder.min_inputs || count > builder.max_inputs) {
            if (builder.max_inputs == any_count)
                probe.fail("expects at least ", builder.min_inputs, " input(s), got ", count);
            if (builder.min_inputs == builder.max_inputs)
                probe.fail("expects ", builder.min_inputs, " input(s), got ", count);
            probe.fail("expects ", builder.min_inputs, " to ", builder.max_inputs, " inputs, got ",
                       count);
        }
        std::vector<instruction_ref> inputs;
        for (const auto& name : node.input()) {
            if (name.empty()) {
                inputs.push_back(nullptr);
                continue;
            }
            inputs.push_back(defined_value(name, probe));
        }

        node_context ctx(node, index, opset, main(), std::move(inputs), &external_);
        std::vector<instruction_ref> outputs;
        try {
            outputs = builder.build(ctx);
        } catch (const node_error&) {
            throw;
        } catch (const user_error& e) {
            throw node_error(
                detail::concat("node '", ctx.node_name(), "' (", node.op_type(), "): ", e.what()));
        }
        for (int i = 0; i < node.output_size(); ++i) {
            const auto& name = node.output(i);
            if (name.empty()) continue;
            if (std::size_t(i) >= outputs.size() || outputs[std::size_t(i)] == nullptr)
                ctx.unsupported("output ", i, " ('", name, "') is not supported");
            values_[name] = outputs[std::size_t(i)];
            producers_[name] =
                detail::concat("node '", probe.node_name(), "' (", node.op_type(), ")");
        }
    }

    // An If whose condition is known at import (TorchScript exports test shapes this way, as
    // in Hugging Face's VitDet) is its taken branch's nodes, added in place; the other branch
    // is never read. A condition computed from the inputs' values is unsupported: the program
    // has no control flow.
    void add_if(const ::onnx::NodeProto& node, std::size_t index, const node_context& probe) {
        check_unique_attributes(node, probe);
        check_new_outputs(node, probe);
        if (node.input_size() != 1 || node.input(0).empty())
            probe.fail("expects 1 input (the condition), got ", node.input_size());
        auto cond = constant_value(defined_value(node.input(0), probe));
        if (!cond)
            probe.unsupported("the condition '", node.input(0),
                              "' depends on the model's inputs "
                              "(only conditions known at import, such as tests of shapes, are "
                              "supported)");
        if (cond->get_shape().elements() != 1)
            probe.fail("the condition must hold one value, got ", to_string(cond->get_shape()));
        const bool taken = to_vector<double>(*cond).front() != 0;
        const char* const name = taken ? "then_branch" : "else_branch";
        const ::onnx::GraphProto* branch = nullptr;
        for (const auto& a : node.attribute())
            if (a.name() == name && a.type() == ::onnx::AttributeProto::GRAPH) branch = &a.g();
        if (branch == nullptr) probe.fail("attribute '", name, "' (a graph) is missing");
        if (branch->input_size() != 0)
            probe.fail(name, " takes ", branch->input_size(),
                       " inputs; an If's branches take none");
        if (branch->output_size() != node.output_size())
            probe.fail(name, " has ", branch->output_size(), " outputs, the node ",
                       node.output_size());
        if (++if_depth_ > max_if_depth)
            probe.unsupported("Ifs nested more than ", max_if_depth, " deep");
        check_supported_ops(*branch);
        for (const auto& t : branch->initializer()) {
            CONFLUX_USER_CHECK(!t.name().empty(), what_, ": an initializer of ", name, " in node '",
                               probe.node_name(), "' has no name");
            if (producers_.count(t.name()) != 0)
                probe.fail(name, "'s initializer '", t.name(), "' is already defined by ",
                           producers_.at(t.name()));
            values_[t.name()] = main().add_literal(to_argument(t, &external_));
            producers_[t.name()] =
                detail::concat("an initializer of node '", probe.node_name(), "'");
        }
        for (const auto& inner : branch->node())
            add_node(inner, index);
        --if_depth_;
        for (int i = 0; i < node.output_size(); ++i) {
            const auto& out = branch->output(i).name();
            auto r = values_.find(out);
            if (r == values_.end())
                probe.fail(name, "'s output '", out, "' is not computed by any node");
            if (node.output(i).empty()) continue;
            values_[node.output(i)] = r->second;
            producers_[node.output(i)] = detail::concat("node '", probe.node_name(), "' (If)");
        }
    }

    instruction_ref defined_value(const std::string& name, const node_context& probe) const {
        auto v = values_.find(name);
        if (v == values_.end())
            probe.fail("input '", name,
                       "' is not defined (no initializer, graph input or earlier node output "
                       "has that name)");
        return v->second;
    }

    // Attribute lookup takes the first of a name; a second one would be ignored silently.
    static void check_unique_attributes(const ::onnx::NodeProto& node, const node_context& ctx) {
        std::set<std::string> names;
        for (const auto& a : node.attribute())
            if (!names.insert(a.name()).second)
                ctx.fail("attribute '", a.name(), "' is given twice");
    }

    // ONNX graphs are in SSA form: every value has one producer. A second one would silently
    // redirect every later reader (and an input or initializer would stop being used).
    void check_new_outputs(const ::onnx::NodeProto& node, const node_context& ctx) const {
        std::set<std::string> own;
        for (const auto& name : node.output()) {
            if (name.empty()) continue;
            if (!own.insert(name).second)
                ctx.fail("output '", name, "' is listed twice among its outputs");
            if (auto p = producers_.find(name); p != producers_.end())
                ctx.fail("output '", name, "' is already defined by ", p->second,
                         " (a value may have only one producer)");
        }
    }

    void add_outputs() {
        std::vector<instruction_ref> outs;
        std::vector<std::string> names;
        for (const auto& vi : graph_.output()) {
            auto v = values_.find(vi.name());
            CONFLUX_USER_CHECK(v != values_.end(), what_, ": graph output '", vi.name(),
                               "' is not computed by any node, input or initializer");
            outs.push_back(v->second);
            names.push_back(vi.name());
        }
        main().add_return(std::move(outs), std::move(names));
    }

    const ::onnx::ModelProto& model_;
    const ::onnx::GraphProto& graph_;
    const import_options& options_;
    const std::string& what_;
    std::int64_t opset_ = 0;
    // Protobuf's own nesting limit bounds this too; the message is clearer.
    static constexpr int max_if_depth = 16;
    int if_depth_ = 0;
    external_data external_;
    program prog_;
    std::unordered_map<std::string, instruction_ref> values_;
    // What defined each value, for messages: "initializer", "graph input", "node 'n' (Relu)".
    std::unordered_map<std::string, std::string> producers_;
};

} // namespace

std::string one_line(std::string s) {
    return printable(s);
}

const op_table& onnx_op_table() {
    static const op_table table = [] {
        op_table t;
        add_elementwise_ops(t);
        add_conv_pool_ops(t);
        add_conv_transpose_ops(t);
        add_gemm_ops(t);
        add_einsum_ops(t);
        add_normalization_ops(t);
        add_shape_ops(t);
        add_recurrent_ops(t);
        add_constant_ops(t);
        add_reduce_ops(t);
        add_resize_ops(t);
        add_quantize_ops(t);
        add_col2im_ops(t);
        add_dft_ops(t);
        add_grid_sample_ops(t);
        return t;
    }();
    return table;
}

program import_model_bytes(std::string_view bytes, const import_options& options,
                           const std::string& what) try {
    ::onnx::ModelProto model;
    CONFLUX_USER_CHECK(bytes.size() < std::size_t(std::numeric_limits<int>::max()) &&
                           model.ParseFromArray(bytes.data(), int(bytes.size())),
                       what, ": not a valid ONNX model (the protobuf data does not parse)");
    CONFLUX_USER_CHECK(model.has_graph(), what, ": not a valid ONNX model (it has no graph)");
    // ir_version is required; 0 (or missing) is what an empty or foreign protobuf parses to.
    CONFLUX_USER_CHECK(model.ir_version() > 0, what,
                       ": not a valid ONNX model (its ir_version is missing or 0)");
    CONFLUX_USER_CHECK(model.graph().output_size() != 0, what,
                       ": not a valid ONNX model (the graph has no outputs)");
    return graph_importer(model, options, what).run();
} catch (const user_error& e) {
    throw user_error(one_line(e.what()));
}

program import_model(const std::string& path, const import_options& options) {
    // Protobuf cannot parse a message of 2 GiB or more.
    constexpr std::uint64_t max_model_bytes = (std::uint64_t{1} << 31) - 1;
    const std::string bytes = read_regular_file(path, max_model_bytes, "model");
    import_options with_dir = options;
    if (!with_dir.external_data_dir) {
        with_dir.external_data_dir = std::filesystem::path(path).parent_path();
        if (with_dir.external_data_dir->empty()) with_dir.external_data_dir = ".";
    }
    return import_model_bytes(bytes, with_dir, path);
}

} // namespace conflux::onnx
