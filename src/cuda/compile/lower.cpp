#include "cuda/compile/lower.hpp"

#include "conflux/ir/errors.hpp"
#include "conflux/ir/split_points.hpp"
#include "conflux/ops/fused.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/util/fnv1a.hpp"
#include "cuda/codegen/gemm/fused_epilogue.hpp"
#include "cuda/codegen/gemm/gemm_kernel.hpp"
#include "cuda/codegen/generator.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <utility>

namespace conflux::cuda {

namespace {

// Generators name their kernel with this, replaced by a name derived from the code's hash so
// equal kernels get equal names (and the kernel cache hits across compiles).
constexpr const char* entry_placeholder = "cx_entry_placeholder";

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
    lowering(program& p, const lowering_options& options) : prog_(p), options_(options) {}

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
            } else if (op.traits().anchor) {
                std::vector<operand> outputs{new_buffer(ins->get_shape())};
                const std::size_t first = out_.steps.size();
                lower_anchor(op, inputs, outputs, origin);
                if (fusion_depth_ == 0) annotate(first, "alone " + last_config_);
                values[ins] = outputs;
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

    // A fused op's epilogue waiting for its anchor: lower_anchor applies it inside the gemm
    // kernel when the chosen config can_fuse, writing `outputs` directly.
    struct pending_fusion {
        const module* epilogue = nullptr;
        std::size_t anchor_slot = 0;
        std::vector<operand> extra_inputs; // bound to the epilogue's other parameters, in order
        std::vector<operand> outputs;
        std::string origin;              // the fused op's, for the fused kernel's step
        const instruction* op = nullptr; // the fused op and its inputs' shapes, for tuning
        std::vector<shape> op_inputs;
        bool fused = false;
        std::string reason; // why not, when not
    };

    // The tensor-core kernel for an anchor writing `outputs[0]`, or the direct kernel when the
    // generator has no problem for it.
    void lower_anchor(const operation& op, const std::vector<operand>& inputs,
                      const std::vector<operand>& outputs, const std::string& origin) {
        pending_fusion* fusion = std::exchange(fusion_, nullptr);
        std::optional<gemm_problem> problem;
        if (options_.use_gemm_generator && inputs.size() == 2)
            problem = make_gemm_problem(op, shapes_of(inputs), outputs[0].view,
                                        {element_offset(inputs[0]), element_offset(inputs[1])});
        if (!problem) {
            kernel_request req{&op, shapes_of(inputs), {outputs[0].view}, {}, entry_placeholder};
            add_step(generate_in_context(req, origin), op.name(), inputs, outputs, origin);
            last_anchor_ = "direct kernel (no gemm problem for " + op.name() + ")";
            last_config_ = "direct";
            if (fusion) fusion->reason = "the generator has no gemm problem for " + op.name();
            return;
        }
        std::optional<epilogue_module> e;
        if (fusion) {
            e = epilogue_module{
                fusion->epilogue, fusion->anchor_slot, {}, shapes_of(fusion->outputs)};
            std::size_t next = 0;
            for (std::size_t i = 0; i < fusion->extra_inputs.size() + 1; ++i)
                e->inputs.push_back(i == fusion->anchor_slot
                                        ? outputs[0].view
                                        : fusion->extra_inputs.at(next++).view);
        }
        const std::vector<module*> no_modules;
        const std::vector<shape> anchor_inputs = shapes_of(inputs);
        const anchor_choice context{*problem,
                                    {},
                                    fusion ? fusion->op->get_operator() : op,
                                    fusion ? fusion->op->module_inputs() : no_modules,
                                    fusion ? fusion->op_inputs : anchor_inputs,
                                    e ? &*e : nullptr,
                                    fusion ? fusion->origin : origin};
        const perf_config config = choose_config(context);
        last_anchor_ = to_string(*problem) + " config " + to_string(config);
        last_config_ = to_string(config);
        if (e) {
            if (can_fuse(config, *problem, *e, &fusion->reason, options_.limits)) {
                std::vector<operand> args = inputs;
                args.insert(args.end(), fusion->extra_inputs.begin(), fusion->extra_inputs.end());
                add_step(generate_gemm_kernel(*problem, config, fused_epilogue(*problem, *e),
                                              entry_placeholder, options_.limits),
                         "gemm_fused", args, fusion->outputs, fusion->origin);
                fusion->fused = true;
                // The anchor's own value never exists in memory.
                if (outputs[0].source == memory_source::buffer)
                    out_.buffers[outputs[0].index].bytes = 0;
                return;
            }
        }
        const gemm_epilogue epilogue = default_epilogue(*problem, outputs[0].view);
        if (config.split_k <= 1) {
            add_step(generate_gemm_kernel(*problem, config, epilogue, entry_placeholder,
                                          options_.limits),
                     "gemm", inputs, outputs, origin);
            return;
        }
        const std::size_t bytes = split_k_workspace_bytes(*problem, config);
        const operand workspace = new_buffer(shape{dtype::u8, {bytes}});
        add_step(
            generate_gemm_kernel(*problem, config, epilogue, entry_placeholder, options_.limits),
            "gemm_split_k", inputs, {workspace}, origin);
        add_step(generate_split_k_finish_kernel(*problem, config, epilogue, entry_placeholder),
                 "gemm_split_k_finish", {workspace}, outputs, origin + " (split-K sum)");
    }

    static std::size_t element_offset(const operand& o) {
        return o.byte_offset / size_of(o.view.type());
    }

    // With exact_fp32 an f32 problem may only use SIMT configs (tensor cores round to TF32).
    bool allowed(const perf_config& c, const gemm_problem& problem, std::string* why) const {
        if (options_.exact_fp32 && problem.type == dtype::f32 && !c.simt) {
            if (why) *why = "--exact-fp32 needs a _simt config for f32";
            return false;
        }
        return valid(c, problem, why, options_.limits);
    }

    perf_config choose_config(const anchor_choice& context) {
        const gemm_problem& problem = context.problem;
        const std::string& origin = context.origin;
        auto candidates = candidate_configs(problem, options_.limits);
        if (options_.exact_fp32 && problem.type == dtype::f32) {
            std::erase_if(candidates, [](const perf_config& c) { return !c.simt; });
            if (candidates.empty()) {
                // The heuristic's space may hold no SIMT config; the smallest always runs.
                auto fallback = parse_perf_config("32x32x8_w1x1_s2_k1_simt");
                CONFLUX_ASSERT(fallback.has_value(), "fallback SIMT config does not parse");
                candidates.push_back(*fallback);
            }
        }
        // A problem no config can hold (a 2^40-row GEMM, say) is the model's limit, not a bug:
        // say so with the reason the first candidate gave.
        std::string first_rejection;
        std::erase_if(candidates, [&](const perf_config& c) {
            std::string why;
            if (allowed(c, problem, &why)) return false;
            if (first_rejection.empty()) first_rejection = to_string(c) + ": " + why;
            return true;
        });
        if (candidates.empty() && first_rejection.empty()) {
            // The space was empty: the config that runs everything says why it cannot.
            const auto runs_anything = parse_perf_config("32x32x16_w1x1_s2_k1_simt");
            CONFLUX_ASSERT(runs_anything.has_value(), "fallback SIMT config does not parse");
            std::string why;
            if (!allowed(*runs_anything, problem, &why))
                first_rejection = to_string(*runs_anything) + ": " + why;
        }
        CONFLUX_USER_CHECK(!candidates.empty(), origin,
                           ": no perf config of the CUDA target can run this problem (",
                           first_rejection.empty() ? "none was generated" : first_rejection,
                           "); problem ", to_string(problem));
        out_.anchor_candidates.emplace_back();
        for (const perf_config& c : candidates)
            out_.anchor_candidates.back().push_back(to_string(c));
        std::string why;
        if (!options_.perf_config.empty()) {
            auto forced = parse_perf_config(options_.perf_config);
            CONFLUX_USER_CHECK(forced.has_value(), "--perf-config '", options_.perf_config,
                               "' is not a perf config (expected e.g. 128x128x32_w2x2_s3_k1)");
            if (allowed(*forced, problem, &why)) return *forced;
            out_.trace.push_back(origin + ": --perf-config " + options_.perf_config +
                                 " is not valid here (" + why + "); using the heuristic");
        }
        if (options_.choose_config) {
            const anchor_choice with_candidates{context.problem, candidates,     context.op,
                                                context.modules, context.inputs, context.epilogue,
                                                context.origin};
            std::vector<std::string> lines;
            auto chosen = options_.choose_config(with_candidates, lines);
            for (auto& l : lines)
                out_.trace.push_back(origin + ": " + l);
            if (chosen) {
                CONFLUX_ASSERT(allowed(*chosen, problem, &why), origin, ": the chosen config ",
                               to_string(*chosen), " is not valid: ", why);
                return *chosen;
            }
        }
        return candidates.front();
    }

    // A fused gemm op (DESIGN.md, "Compiling a fused gemm op"): one kernel when the anchor's
    // config can_fuse the part after the anchor; otherwise gemm into a temporary, then the
    // pointwise part, then (when a return has a layout tail) a layout copy into the op's outputs;
    // without a tail the pointwise kernel writes the outputs itself.
    std::vector<operand> lower_fused_gemm(const instruction& ins,
                                          const std::vector<operand>& inputs,
                                          const std::string& origin) {
        const module& sm = *ins.module_inputs().at(0);
        instruction_ref anchor = nullptr;
        for (const instruction& i : sm)
            if (i.get_operator().traits().anchor) anchor = const_cast<instruction*>(&i);
        CONFLUX_ASSERT(anchor != nullptr, origin, ": fused gemm module without an anchor");
        const instruction_ref ret = sm.get_return();
        const std::size_t first = out_.steps.size();
        const struct depth_guard {
            int& d;
            explicit depth_guard(int& depth) : d(depth) { ++d; }
            ~depth_guard() { --d; }
        } nested(fusion_depth_);
        if (ret->inputs().size() == 1 && ret->inputs()[0] == anchor) {
            auto out = lower_module(sm, inputs); // nothing after the anchor
            out_.trace.push_back(origin + ": " + last_anchor_ + " -> fused (no epilogue)");
            annotate(first, "fused " + last_config_);
            return out;
        }
        auto argument_of = [&](instruction_ref arg) {
            auto it = std::find(ins.inputs().begin(), ins.inputs().end(), arg);
            CONFLUX_ASSERT(it != ins.inputs().end(), origin, ": split argument unknown");
            return inputs.at(std::size_t(it - ins.inputs().begin()));
        };
        std::vector<std::vector<operand>> results;
        auto bind = [&](const split_part& part) {
            std::vector<operand> args;
            for (const split_input& in : part.inputs)
                args.push_back(in.is_placeholder() ? results.at(std::size_t(in.part)).at(in.output)
                                                   : argument_of(in.arg));
            return args;
        };
        std::vector<shape> out_shapes = result_shapes(ins);
        std::vector<operand> outputs;
        for (const shape& s : out_shapes)
            outputs.push_back(new_buffer(s));

        // The anchor, offered the part after it as its epilogue.
        const auto at_anchor = sm.split(ins.inputs(), {anchor});
        CONFLUX_ASSERT(at_anchor.size() == 2, origin, ": split gave ", at_anchor.size(), " parts");
        pending_fusion fusion;
        fusion.epilogue = at_anchor[1].mod;
        fusion.outputs = outputs;
        fusion.origin = origin;
        fusion.op = &ins;
        fusion.op_inputs = shapes_of(inputs);
        for (std::size_t i = 0; i < at_anchor[1].inputs.size(); ++i) {
            const split_input& in = at_anchor[1].inputs[i];
            if (in.is_placeholder())
                fusion.anchor_slot = i;
            else
                fusion.extra_inputs.push_back(argument_of(in.arg));
        }
        fusion_ = &fusion;
        results.push_back(lower_module(*at_anchor[0].mod, bind(at_anchor[0])));
        fusion_ = nullptr;
        const std::string anchor_text = last_anchor_;
        if (fusion.fused) {
            out_.trace.push_back(origin + ": " + anchor_text + " -> fused");
            annotate(first, "fused " + last_config_);
            return outputs;
        }
        const std::string config_text = last_config_;

        const std::vector<instruction_ref> tails = find_tail_splits(sm);
        bool has_tail = false, tail_after_anchor = true;
        for (std::size_t r = 0; r < tails.size(); ++r) {
            has_tail = has_tail || tails[r] != ret->inputs()[r];
            tail_after_anchor = tail_after_anchor && tails[r] != anchor;
        }
        const bool three_way = has_tail && tail_after_anchor;
        // Part 0 of either split is the anchor's closure, already lowered: its one output is
        // the anchor's value.
        const auto parts = three_way ? sm.split(ins.inputs(), {anchor}, tails) : at_anchor;
        CONFLUX_ASSERT(parts.size() == (three_way ? 3u : 2u), origin, ": split gave ", parts.size(),
                       " parts");
        for (std::size_t k = 1; k < parts.size(); ++k) {
            const bool last = k + 1 == parts.size();
            const module& part = *parts[k].mod;
            std::vector<operand> part_out;
            std::vector<shape> part_shapes;
            if (last) {
                part_out = outputs;
                part_shapes = out_shapes;
            } else {
                // The pointwise part of a 3-way split writes standard temporaries.
                for (instruction_ref r : part.get_return()->inputs()) {
                    part_shapes.push_back(r->get_shape().as_standard());
                    part_out.push_back(new_buffer(part_shapes.back()));
                }
            }
            const std::vector<operand> part_in = bind(parts[k]);
            const std::string kind = last && three_way ? "layout_copy" : "epilogue";
            kernel_source source;
            try {
                source = generate_module_kernel(part, shapes_of(part_in), part_shapes,
                                                entry_placeholder);
            } catch (const user_error& e) {
                throw user_error(origin + " (" + kind + "): " + e.what());
            }
            add_step(std::move(source), kind, part_in, part_out, origin + " (" + kind + ")");
            results.push_back(part_out);
        }
        out_.trace.push_back(
            origin + ": " + anchor_text + " -> " +
            (three_way ? "3-way (gemm | pointwise | layout copy)" : "2-way (gemm | pointwise)") +
            ": " + fusion.reason);
        annotate(first, (three_way ? "3-way " : "2-way ") + config_text);
        return outputs;
    }

    // Marks the steps from `first` on as one gemm op's, compiled as `how`.
    void annotate(std::size_t first, const std::string& how) {
        for (std::size_t i = first; i < out_.steps.size(); ++i)
            out_.steps[i].gemm = how;
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
        const std::string name =
            "cx_" + identifier(kind) + "_" + hex_64(fnv1a_64(k.code)).substr(0, 12);
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
    lowering_options options_;
    std::string last_anchor_; // the problem and config of the anchor lowered last, for traces
    pending_fusion* fusion_ = nullptr;
    std::string last_config_; // the config of the anchor lowered last ("direct" without one)
    int fusion_depth_ = 0;    // > 0 while lowering a fused gemm op's parts
    lowered_program out_;
    std::map<std::string, std::size_t> interned_;
};

} // namespace

lowered_program lower_program(program& p, const lowering_options& options) {
    return lowering(p, options).run();
}

} // namespace conflux::cuda
