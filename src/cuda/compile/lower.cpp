#include "cuda/compile/lower.hpp"

#include "conflux/ir/errors.hpp"
#include "conflux/ops/fused.hpp"
#include "conflux/ops/views.hpp"
#include "cuda/codegen/generator.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

namespace conflux::cuda {

namespace {

// Generators name their kernel with this, replaced by a name derived from the code's hash so
// equal kernels get equal names (and the kernel cache hits across compiles).
constexpr const char* entry_placeholder = "cx_entry_placeholder";

std::uint64_t fnv1a(const std::string& s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (std::size_t pos = s.find(from); pos != std::string::npos;
         pos = s.find(from, pos + to.size()))
        s.replace(pos, from.size(), to);
    return s;
}

std::string identifier(const std::string& name) {
    std::string out;
    for (char c : name)
        out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out;
}

class lowering {
public:
    explicit lowering(program& p) : prog_(p) {}

    lowered_program run() {
        const module& m = prog_.main();
        std::vector<operand> args;
        for (instruction_ref param : m.parameters()) {
            const auto* op = param->get_operator().get_if<op::param>();
            out_.parameter_names.push_back(op->name_);
            out_.parameter_shapes.push_back(param->get_shape());
            args.push_back(
                {memory_source::parameter, out_.parameter_names.size() - 1, 0, param->get_shape()});
        }
        const std::vector<operand> results = lower_module(m, args);
        bind_outputs(m, results);
        plan();
        return std::move(out_);
    }

private:
    // Lowers the instructions of `m` with its parameters bound to `args`; returns the operands
    // of its return values.
    std::vector<operand> lower_module(const module& m, const std::vector<operand>& args) {
        std::unordered_map<const instruction*, std::vector<operand>> values;
        const auto names = m.print_names();
        std::size_t next_param = 0;
        std::vector<operand> results;
        for (const instruction& ins_ref : m) {
            const instruction* ins = &ins_ref;
            std::vector<operand> inputs;
            for (instruction_ref in : ins->inputs()) {
                const auto& v = values.at(in);
                CONFLUX_ASSERT(v.size() == 1 || in->get_shape().is_tuple(),
                               "tuple value used directly");
                inputs.insert(inputs.end(), v.begin(), v.end());
            }
            const std::string origin = m.name() + ": " + names.at(ins) + " = " + ins->name();
            const operation& op = ins->get_operator();
            if (ins->is_param()) {
                CONFLUX_ASSERT(next_param < args.size(), "too few arguments for ", m.name());
                values[ins] = {args[next_param++]};
            } else if (const auto* lit = op.get_if<op::literal>()) {
                out_.literals.push_back(lit->value);
                values[ins] = {
                    {memory_source::literal, out_.literals.size() - 1, 0, lit->value.get_shape()}};
            } else if (ins->is_return()) {
                results = inputs;
            } else if (const auto* elem = op.get_if<op::get_tuple_elem>()) {
                values[ins] = {values.at(ins->inputs()[0]).at(elem->index)};
            } else if (auto alias = as_alias(*ins, inputs)) {
                values[ins] = {*alias};
            } else if (op.get_if<op::fused_gemm>()) {
                values[ins] = lower_fused_gemm(*ins, inputs, origin);
            } else {
                std::vector<shape> out_shapes = result_shapes(*ins);
                std::vector<operand> outputs;
                for (const shape& s : out_shapes)
                    outputs.push_back(new_buffer(s));
                kernel_request req{&op,
                                   shapes_of(inputs),
                                   out_shapes,
                                   {ins->module_inputs().begin(), ins->module_inputs().end()},
                                   entry_placeholder};
                add_step(generate_in_context(req, origin), ins->name(), inputs, outputs, origin);
                values[ins] = outputs;
            }
        }
        return results;
    }

    // A view op whose input's strides allow it aliases its input's memory.
    std::optional<operand> as_alias(const instruction& ins, const std::vector<operand>& inputs) {
        if (!ins.get_operator().traits().view || inputs.size() != 1) return std::nullopt;
        auto offset = op::view_offset(ins.get_operator(), inputs[0].view);
        if (!offset) return std::nullopt;
        operand o = inputs[0];
        o.byte_offset += *offset * size_of(ins.get_shape().type());
        // The view's strides were computed from the instruction's own input shape; the operand
        // may carry other strides (a parameter bound with different strides), so recompute.
        o.view = ins.get_operator().compute_shape({inputs[0].view});
        return o;
    }

    // Until the gemm generator holds epilogues, a fused gemm op is its anchor's kernel into a
    // temporary and one kernel for everything after it, written straight into the op's outputs
    // through the layout tail.
    std::vector<operand> lower_fused_gemm(const instruction& ins,
                                          const std::vector<operand>& inputs,
                                          const std::string& origin) {
        const module& sm = *ins.module_inputs().at(0);
        instruction_ref anchor = nullptr;
        for (const instruction& i : sm)
            if (i.get_operator().traits().anchor) anchor = const_cast<instruction*>(&i);
        CONFLUX_ASSERT(anchor != nullptr, origin, ": fused gemm module without an anchor");
        const instruction_ref ret = sm.get_return();
        if (ret->inputs().size() == 1 && ret->inputs()[0] == anchor)
            return lower_module(sm, inputs); // nothing after the anchor

        const auto parts = sm.split(ins.inputs(), {anchor});
        CONFLUX_ASSERT(parts.size() == 2, origin, ": a 2-way split gave ", parts.size(), " parts");
        auto bind = [&](const split_part& part, const std::vector<operand>& earlier) {
            std::vector<operand> args;
            for (const split_input& in : part.inputs) {
                if (in.is_placeholder()) {
                    args.push_back(earlier.at(in.output));
                } else {
                    auto it = std::find(ins.inputs().begin(), ins.inputs().end(), in.arg);
                    CONFLUX_ASSERT(it != ins.inputs().end(), origin, ": split argument unknown");
                    args.push_back(inputs.at(std::size_t(it - ins.inputs().begin())));
                }
            }
            return args;
        };
        const std::vector<operand> anchor_out = lower_module(*parts[0].mod, bind(parts[0], {}));
        const std::vector<operand> rest_in = bind(parts[1], anchor_out);
        std::vector<shape> out_shapes = result_shapes(ins);
        std::vector<operand> outputs;
        for (const shape& s : out_shapes)
            outputs.push_back(new_buffer(s));
        kernel_source k;
        try {
            k = generate_module_kernel(*parts[1].mod, shapes_of(rest_in), out_shapes,
                                       entry_placeholder);
        } catch (const user_error& e) {
            throw user_error(origin + " (epilogue): " + e.what());
        }
        add_step(std::move(k), "epilogue", rest_in, outputs, origin + " (epilogue)");
        return outputs;
    }

    static std::vector<shape> result_shapes(const instruction& ins) {
        if (ins.get_shape().is_tuple()) return ins.get_shape().sub_shapes();
        return {ins.get_shape()};
    }

    static std::vector<shape> shapes_of(const std::vector<operand>& ops) {
        std::vector<shape> s;
        for (const operand& o : ops)
            s.push_back(o.view);
        return s;
    }

    kernel_source generate_in_context(const kernel_request& req, const std::string& origin) {
        try {
            return generate_kernel(req);
        } catch (const user_error& e) {
            throw user_error(origin + ": " + e.what());
        }
    }

    operand new_buffer(const shape& s) {
        buffer b;
        b.bytes = s.bytes();
        b.first_step = b.last_step = out_.steps.size();
        out_.buffers.push_back(b);
        return {memory_source::buffer, out_.buffers.size() - 1, 0, s};
    }

    void add_step(kernel_source k, const std::string& kind, const std::vector<operand>& inputs,
                  const std::vector<operand>& outputs, const std::string& origin) {
        const std::size_t step = out_.steps.size();
        for (const operand& o : inputs)
            if (o.source == memory_source::buffer)
                out_.buffers[o.index].last_step = std::max(out_.buffers[o.index].last_step, step);
        for (const operand& o : outputs)
            if (o.source == memory_source::buffer) {
                buffer& b = out_.buffers[o.index];
                b.first_step = std::min(b.first_step, step);
                b.last_step = std::max(b.last_step, step);
            }
        if (k.empty()) return; // nothing to compute: every output is empty
        kernel_step s;
        s.kernel = intern(std::move(k), kind);
        s.args = inputs;
        s.args.insert(s.args.end(), outputs.begin(), outputs.end());
        s.origin = origin;
        out_.steps.push_back(std::move(s));
    }

    std::size_t intern(kernel_source k, const std::string& kind) {
        auto it = interned_.find(k.code);
        if (it != interned_.end()) return it->second;
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(k.code)));
        const std::string name = "cx_" + identifier(kind) + "_" + std::string(hex, 12);
        const std::string original = k.code;
        k.code = replace_all(std::move(k.code), entry_placeholder, name);
        k.entry = name;
        out_.kernels.push_back(std::move(k));
        interned_[original] = out_.kernels.size() - 1;
        return out_.kernels.size() - 1;
    }

    // Each returned value is written to an output buffer of its own: a kernel result is
    // adopted as it is; a parameter, literal, view or value returned twice is copied out.
    void bind_outputs(const module& m, const std::vector<operand>& results) {
        out_.output_names = m.output_names();
        static const operation copy = op::contiguous{};
        for (std::size_t i = 0; i < results.size(); ++i) {
            const operand& r = results[i];
            const bool adoptable = r.source == memory_source::buffer && r.byte_offset == 0 &&
                                   !out_.buffers[r.index].is_output &&
                                   out_.buffers[r.index].bytes == r.view.bytes();
            std::size_t buffer_index;
            shape layout = r.view;
            if (adoptable) {
                buffer_index = r.index;
            } else {
                layout = r.view.as_standard();
                operand dst = new_buffer(layout);
                kernel_request req{&copy, {r.view}, {layout}, {}, entry_placeholder};
                add_step(generate_in_context(req, "output " + out_.output_names.at(i)), "copy", {r},
                         {dst}, "copy of output " + out_.output_names.at(i));
                buffer_index = dst.index;
            }
            out_.buffers[buffer_index].is_output = true;
            out_.buffers[buffer_index].output_index = i;
            out_.output_buffers.push_back(buffer_index);
            out_.output_shapes.push_back(layout);
        }
    }

    void plan() {
        std::vector<buffer_lifetime> lifetimes;
        for (std::size_t i = 0; i < out_.buffers.size(); ++i) {
            const buffer& b = out_.buffers[i];
            if (b.is_output) continue;
            out_.temporaries.push_back(i);
            lifetimes.push_back({b.bytes, b.first_step, b.last_step});
        }
        out_.plan = plan_memory(lifetimes);
        out_.arena_offset.assign(out_.buffers.size(), 0);
        for (std::size_t t = 0; t < out_.temporaries.size(); ++t)
            out_.arena_offset[out_.temporaries[t]] = out_.plan.offsets[t];
    }

    program& prog_;
    lowered_program out_;
    std::map<std::string, std::size_t> interned_;
};

} // namespace

lowered_program lower_program(program& p) {
    return lowering(p).run();
}

} // namespace conflux::cuda
