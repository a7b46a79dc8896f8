#include "cuda/codegen/index_values.hpp"

#include "conflux/ops/elementwise.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/index_elementwise.hpp"
#include "cuda/codegen/index_views.hpp"

#include <cstdio>
#include <cstring>
#include <optional>

namespace conflux::cuda::index {

namespace {

// Literals larger than this would make the kernel's source (and NVRTC's work) unreasonable;
// such constants belong in a buffer passed as an input.
constexpr std::size_t max_literal_elements = std::size_t{1} << 16;

// The unsigned type of a dtype's width: literal tables hold bit patterns, so every value
// (NaN payloads, -0, INT64_MIN) is written exactly.
const char* bits_type(dtype t) {
    switch (size_of(t)) {
    case 1:
        return "unsigned char";
    case 2:
        return "unsigned short";
    case 4:
        return "unsigned";
    default:
        return "unsigned long long";
    }
}

std::string hex_bits(std::uint64_t bits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llxull", static_cast<unsigned long long>(bits));
    return buf;
}

// The storage value whose bit pattern is the expression `bits` (of bits_type(t)).
std::string from_bits(dtype t, const std::string& bits) {
    switch (t) {
    case dtype::f32:
        return "__uint_as_float(" + bits + ")";
    case dtype::f64:
        return "__longlong_as_double(static_cast<long long>(" + bits + "))";
    case dtype::f16:
    case dtype::bf16:
        return storage_type(t) + "{static_cast<unsigned short>(" + bits + ")}";
    case dtype::boolean:
        return "(" + bits + " != 0)";
    default:
        return "static_cast<" + storage_type(t) + ">(" + bits + ")";
    }
}

std::uint64_t element_bits(const argument& a, std::size_t offset) {
    const std::size_t w = size_of(a.get_shape().type());
    std::uint64_t bits = 0;
    std::memcpy(&bits, a.data() + offset * w, w); // little-endian host and device
    return bits;
}

} // namespace

std::string storage_constant(dtype t, std::uint64_t bits) {
    return from_bits(t, hex_bits(bits));
}

std::string storage_constant_of(dtype t, float v) {
    return visit_storage(t, [&](auto tag) {
        using S = typename decltype(tag)::type;
        const S s = convert_value<S>(v);
        std::uint64_t bits = 0;
        std::memcpy(&bits, &s, sizeof s);
        return storage_constant(t, bits);
    });
}

value_builder::value_builder(kernel_writer& w, const module& m, const std::vector<shape>& inputs,
                             std::string prefix)
    : w_(w), m_(m), inputs_(inputs), prefix_(std::move(prefix)) {
    const auto params = m.parameters();
    CONFLUX_ASSERT(params.size() == inputs.size(), "module ", m.name(), " takes ", params.size(),
                   " inputs, given ", inputs.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
        const shape& declared = params[i]->get_shape();
        CONFLUX_ASSERT(declared.lens() == inputs[i].lens() && declared.type() == inputs[i].type(),
                       "module ", m.name(), ": input ", i, " is ", to_string(inputs[i]),
                       " but its parameter is ", to_string(declared));
        parameter_slot_[params[i]] = i;
    }
}

std::string value_builder::value(instruction_ref ins, const index_expr& at) {
    // An explicit stack instead of recursion along the inputs: a pointwise module is as deep as
    // the chain of ops it fused (100,000 for a long chain of Relu), far more than a thread's
    // stack holds. A frame is expanded first (the operands it reads at positions known without
    // emitting anything it would not emit anyway: a view's source, an elementwise op's inputs
    // at its own position) and computed once those are, in the order the recursion had (inputs
    // left to right). The data-movement ops and batch normalisation still ask for their
    // operands from compute, inside the branches they open; they are single-op kernels, so that
    // nests once, not along a chain.
    struct frame {
        instruction_ref ins;
        index_expr at;
        std::optional<index_expr> from; // a view's position in its source
        bool expanded = false;
    };
    if (const std::string* known = w_.find_value(ins, at.key())) return *known;
    std::vector<frame> stack;
    stack.push_back({ins, at, std::nullopt});
    while (!stack.empty()) {
        frame& top = stack.back();
        if (w_.find_value(top.ins, top.at.key()) != nullptr) {
            stack.pop_back(); // reached by an earlier operand
            continue;
        }
        if (!top.expanded) {
            top.expanded = true;
            const instruction_ref cur = top.ins;
            CONFLUX_ASSERT(top.at.lens == cur->get_shape().lens(), "a position over [",
                           to_string(top.at.lens), "] for a value of shape ",
                           to_string(cur->get_shape()));
            std::vector<frame> operands;
            if (!cur->is_param() && !cur->is_literal() && !cur->inputs().empty()) {
                const instruction_ref source = cur->inputs().front();
                if (auto from =
                        view_source(cur->get_operator(), source->get_shape().lens(), top.at, w_)) {
                    top.from = from;
                    operands.push_back({source, std::move(*from), std::nullopt});
                } else if (cur->get_operator().get_if<op::elementwise>()) {
                    for (instruction_ref in : cur->inputs())
                        operands.push_back({in, top.at, std::nullopt});
                }
            }
            // `top` is not used past here: pushing may move the stack.
            for (auto it = operands.rbegin(); it != operands.rend(); ++it)
                if (w_.find_value(it->ins, it->at.key()) == nullptr)
                    stack.push_back(std::move(*it));
            continue;
        }
        const frame done = std::move(top);
        stack.pop_back();
        const std::string var = done.from
                                    ? *w_.find_value(done.ins->inputs().front(), done.from->key())
                                    : compute(done.ins, done.at);
        w_.remember_value(done.ins, done.at.key(), var);
    }
    return *w_.find_value(ins, at.key());
}

std::string value_builder::declare(dtype t, const std::string& expr) {
    std::string var = w_.fresh("v");
    w_.line("const " + storage_type(t) + " " + var + " = " + expr + ";");
    return var;
}

void value_builder::unsupported(instruction_ref ins) const {
    const auto names = m_.print_names();
    auto it = names.find(ins);
    throw_internal_error("kernel ", prefix_, ": the index kernel generator cannot compute ",
                         ins->get_operator().to_string(), " (instruction ",
                         it == names.end() ? std::string("?") : it->second, " of module ",
                         m_.name(), ")");
}

std::string value_builder::compute(instruction_ref ins, const index_expr& at) {
    CONFLUX_ASSERT(at.lens == ins->get_shape().lens(), "a position over [", to_string(at.lens),
                   "] for a value of shape ", to_string(ins->get_shape()));
    if (ins->is_param()) return load_parameter(ins, at);
    if (ins->is_literal()) return load_literal(ins, at);
    const operation& op = ins->get_operator();
    // Views never get here: value() follows them to their source.
    if (op.get_if<op::elementwise>()) return elementwise_value(ins, at);
    const std::string name = op.name();
    if (name == "concat") return concat_value(ins, at);
    if (name == "pad") return pad_value(ins, at);
    if (name == "gather") return gather_value(ins, at);
    if (name == "gather_elements") return gather_elements_value(ins, at);
    if (name == "gather_nd") return gather_nd_value(ins, at);
    if (name == "batch_normalization") return batch_norm_value(ins, at);
    if (name == "trilu") return trilu_value(ins, at);
    unsupported(ins);
}

std::string value_builder::load_parameter(instruction_ref ins, const index_expr& at) {
    const std::size_t slot = parameter_slot_.at(ins);
    const shape& actual = inputs_[slot];
    return declare(actual.type(), "in" + std::to_string(slot) + "[" + w_.offset(at, actual) + "]");
}

std::string value_builder::load_literal(instruction_ref ins, const index_expr& at) {
    const argument& a = ins->get_operator().get_if<op::literal>()->value;
    const shape& s = a.get_shape();
    // An empty literal is never read (no position exists); one element needs no table.
    if (s.element_space() == 0) return declare(s.type(), storage_constant(s.type(), 0));
    if (s.element_space() == 1)
        return declare(s.type(), storage_constant(s.type(), element_bits(a, 0)));
    auto [it, added] = literal_tables_.try_emplace(ins);
    if (added) {
        CONFLUX_ASSERT(s.element_space() <= max_literal_elements, "a literal of shape ",
                       to_string(s), " is too large to compile into a kernel (at most ",
                       max_literal_elements, " elements)");
        it->second = prefix_ + "_literal" + std::to_string(literal_tables_.size() - 1);
        std::string table = "__device__ const " + std::string(bits_type(s.type())) + " " +
                            it->second + "[" + std::to_string(s.element_space()) + "] = {";
        for (std::size_t k = 0; k < s.element_space(); ++k)
            table += (k % 8 == 0 ? "\n    " : " ") + hex_bits(element_bits(a, k)) + ",";
        globals_ += table + "\n};\n";
    }
    return declare(s.type(), from_bits(s.type(), it->second + "[" + w_.offset(at, s) + "]"));
}

std::string value_builder::elementwise_value(instruction_ref ins, const index_expr& at) {
    const auto& e = *ins->get_operator().get_if<op::elementwise>();
    const dtype out_type = ins->get_shape().type();
    const auto& inputs = ins->inputs();
    if (e.kind == op::elementwise_kind::where) {
        // A selection of storage values: nothing to compute, so nothing to round.
        const std::string cond = value(inputs[0], at);
        const std::string a = value(inputs[1], at);
        const std::string b = value(inputs[2], at);
        return declare(out_type, cond + " ? " + a + " : " + b);
    }
    std::vector<std::string> args;
    for (instruction_ref in : inputs)
        args.push_back("cx_widen(" + value(in, at) + ")");
    const dtype value_type = inputs.front()->get_shape().type();
    return declare(out_type, "cx_narrow<" + storage_type(out_type) + ">(" +
                                 elementwise_expression(e, value_type, args) + ")");
}

} // namespace conflux::cuda::index
