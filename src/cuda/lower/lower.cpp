#include "cuda/lower/lower.hpp"

#include "conflux/ops/views.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/gemm/depthwise_kernel.hpp"
#include "cuda/codegen/gemm/fused_epilogue.hpp"
#include "cuda/codegen/gemm/gemm_kernel.hpp"
#include "cuda/codegen/generator.hpp"
#include "cuda/codegen/kernel_name.hpp"
#include "cuda/lower/fused_op_splits.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

namespace conflux::cuda {

namespace {

std::vector<shape> result_shapes(const instruction& ins) {
    if (ins.get_shape().is_tuple()) return ins.get_shape().sub_shapes();
    return {ins.get_shape()};
}

std::vector<shape> shapes_of(const std::vector<operand>& ops) {
    std::vector<shape> s;
    for (const operand& o : ops)
        s.push_back(o.view);
    return s;
}

std::size_t element_offset(const operand& o) {
    return o.byte_offset / size_of(o.view.type());
}

// A view op whose input's strides allow it aliases its input's memory.
std::optional<operand> as_alias(const instruction& ins, const std::vector<operand>& inputs) {
    if (!ins.get_operator().traits().view || inputs.size() != 1) return std::nullopt;
    auto offset = ins.get_operator().view_offset(inputs[0].view);
    if (!offset) return std::nullopt;
    operand o = inputs[0];
    o.byte_offset += *offset * size_of(ins.get_shape().type());
    // The view's strides were computed from the instruction's own input shape; the operand may
    // carry other strides (a parameter bound with different strides), so recompute.
    o.view = ins.get_operator().compute_shape({inputs[0].view});
    return o;
}

// Writes a kernel named by its kind and content; a user_error from the generator is prefixed
// with the instruction it came from.
kernel_source write_kernel(const std::string& kind, const std::string& origin,
                           const std::function<kernel_source(const std::string& entry)>& write) {
    try {
        return write_named_kernel(kind, write);
    } catch (const user_error& e) {
        throw user_error(origin + ": " + e.what());
    }
}

// The program being built: kernels (equal ones once), steps, buffers and their lifetimes, the
// trace. Lowering appends to it; nothing else flows through it.
class step_list {
public:
    lowered_program& out() { return out_; }

    operand new_buffer(const shape& s) {
        buffer b;
        b.bytes = s.bytes();
        b.first_step = b.last_step = out_.steps.size();
        out_.buffers.push_back(b);
        return {memory_source::buffer, out_.buffers.size() - 1, 0, s};
    }

    void add(kernel_source k, const std::vector<operand>& inputs,
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
        s.launch = k.launch;
        s.kernel = intern(std::move(k));
        s.args = inputs;
        s.args.insert(s.args.end(), outputs.begin(), outputs.end());
        s.origin = origin;
        out_.steps.push_back(std::move(s));
    }

    // Marks the steps from `first` on as one gemm op's, compiled as `how`.
    void annotate(std::size_t first, const std::string& how) {
        for (std::size_t i = first; i < out_.steps.size(); ++i)
            out_.steps[i].gemm = how;
    }

    std::size_t size() const { return out_.steps.size(); }

private:
    // Equal code is one kernel; its dynamic shared memory is set once when it is loaded, so a
    // launch that needs another amount is another kernel.
    std::size_t intern(kernel_source k) {
        auto [it, inserted] =
            interned_.emplace(std::make_pair(k.code, k.launch.shared_bytes), out_.kernels.size());
        if (inserted) out_.kernels.push_back(std::move(k));
        return it->second;
    }

    lowered_program out_;
    std::map<std::pair<std::string, unsigned>, std::size_t> interned_;
};

// What lowering an anchor decided, for the trace and the step annotations.
struct anchor_outcome {
    std::string summary; // "<problem> config <config>", or the direct kernel and why
    std::string config;  // the perf config, or "direct"
    bool fused = false;  // the offered epilogue runs inside the anchor's kernel
    std::string reason;  // why not, when an epilogue was offered and not fused
};

// The part of a fused gemm op after its anchor, offered to the anchor's kernel as its epilogue:
// when the chosen config can_fuse it, the gemm kernel writes `outputs` itself.
struct epilogue_offer {
    const module* epilogue = nullptr;
    std::size_t anchor_slot = 0;       // the epilogue parameter that is the anchor's value
    std::vector<operand> extra_inputs; // bound to the epilogue's other parameters, in order
    std::vector<operand> outputs;      // the fused op's outputs
    const instruction* op = nullptr;   // the fused op, its inputs and origin (tuning, steps)
    std::vector<shape> op_inputs;
    std::string origin;
};

class lowering {
public:
    lowering(const program& p, const lowering_options& options)
        : prog_(p), options_(options), splits_(split_fused_ops(p.main())) {}

    lowered_program run() {
        const module& m = prog_.main();
        lowered_program& out = steps_.out();
        std::vector<operand> args;
        for (instruction_ref param : m.parameters()) {
            const auto* op = param->get_operator().get_if<op::param>();
            out.parameter_names.push_back(op->name_);
            out.parameter_shapes.push_back(param->get_shape());
            args.push_back(
                {memory_source::parameter, out.parameter_names.size() - 1, 0, param->get_shape()});
        }
        const module_results results = lower_module(m, args, nullptr, false);
        bind_outputs(m, results.values);
        plan_memory_of(out);
        return std::move(out);
    }

private:
    struct module_results {
        std::vector<operand> values;          // the operands of the module's return values
        std::optional<anchor_outcome> anchor; // the last anchor lowered in it
    };

    // Lowers the instructions of `m` with its parameters bound to `args`. `offer`: the epilogue
    // offered to the anchor of `m` (a fused op's anchor part); `in_fused_op`: `m` is part of a
    // fused op, whose steps the op annotates itself.
    module_results lower_module(const module& m, const std::vector<operand>& args,
                                const epilogue_offer* offer, bool in_fused_op) {
        std::unordered_map<const instruction*, std::vector<operand>> values;
        const auto names = m.print_names();
        std::size_t next_param = 0;
        module_results results;
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
                lowered_program& out = steps_.out();
                out.literals.push_back(lit->value);
                values[ins] = {
                    {memory_source::literal, out.literals.size() - 1, 0, lit->value.get_shape()}};
            } else if (ins->is_return()) {
                results.values = inputs;
            } else if (const auto* elem = op.get_if<op::get_tuple_elem>()) {
                values[ins] = {values.at(ins->inputs()[0]).at(elem->index)};
            } else if (auto alias = as_alias(*ins, inputs)) {
                values[ins] = {*alias};
            } else if (op.traits().has_anchor_module) {
                values[ins] = lower_fused_gemm(*ins, inputs, origin);
            } else if (op.traits().anchor) {
                std::vector<operand> outputs{steps_.new_buffer(ins->get_shape())};
                const std::size_t first = steps_.size();
                results.anchor = lower_anchor(op, inputs, outputs, origin, offer);
                if (!in_fused_op) steps_.annotate(first, "alone " + results.anchor->config);
                values[ins] = outputs;
            } else {
                std::vector<shape> out_shapes = result_shapes(*ins);
                std::vector<operand> outputs;
                for (const shape& s : out_shapes)
                    outputs.push_back(steps_.new_buffer(s));
                const std::vector<const module*> modules(ins->module_inputs().begin(),
                                                         ins->module_inputs().end());
                const std::string config =
                    op.name() == "attention" ? options_.attention_config : std::string();
                steps_.add(write_kernel(ins->name(), origin,
                                        [&](const std::string& entry) {
                                            std::vector<std::size_t> offsets;
                                            for (const operand& o : inputs)
                                                offsets.push_back(element_offset(o));
                                            return generate_kernel({&op, shapes_of(inputs),
                                                                    out_shapes, modules, entry,
                                                                    config, options_.limits.wgmma,
                                                                    std::move(offsets)});
                                        }),
                           inputs, outputs, origin);
                values[ins] = outputs;
            }
        }
        return results;
    }

    // The tensor-core kernel for an anchor writing `outputs[0]` (with `offer` fused in when its
    // config can hold it), or the direct kernel when the generator has no problem for it.
    anchor_outcome lower_anchor(const operation& op, const std::vector<operand>& inputs,
                                const std::vector<operand>& outputs, const std::string& origin,
                                const epilogue_offer* offer) {
        anchor_outcome outcome;
        std::optional<gemm_problem> problem;
        const std::vector<shape> anchor_inputs = shapes_of(inputs);
        if (options_.use_gemm_generator && inputs.size() == 2)
            problem = make_gemm_problem(op, anchor_inputs, outputs[0].view,
                                        {element_offset(inputs[0]), element_offset(inputs[1])});
        if (!problem) {
            steps_.add(
                write_kernel(
                    op.name(), origin,
                    [&](const std::string& entry) {
                        return generate_kernel({&op, anchor_inputs, {outputs[0].view}, {}, entry});
                    }),
                inputs, outputs, origin);
            const std::string why = "the generator has no gemm problem for " + op.name();
            outcome.summary = "direct kernel (" + why + ")";
            outcome.config = "direct";
            if (offer) outcome.reason = why;
            return outcome;
        }
        std::optional<epilogue_module> e;
        if (offer) {
            e = epilogue_module{offer->epilogue, offer->anchor_slot, {}, shapes_of(offer->outputs)};
            std::size_t next = 0;
            for (std::size_t i = 0; i < offer->extra_inputs.size() + 1; ++i) {
                const operand& in =
                    i == offer->anchor_slot ? outputs[0] : offer->extra_inputs.at(next++);
                e->inputs.push_back(in.view);
                e->input_offsets.push_back(element_offset(in));
            }
        }
        const std::vector<module*> no_modules;
        const anchor_choice context{*problem,
                                    {},
                                    offer ? offer->op->get_operator() : op,
                                    offer ? offer->op->module_inputs() : no_modules,
                                    offer ? offer->op_inputs : anchor_inputs,
                                    e ? &*e : nullptr,
                                    offer ? offer->origin : origin};
        const perf_config config = choose_config(context);
        if (problem->type == dtype::f32 && config.rounds_f32_to_tf32()) ++steps_.out().tf32_anchors;
        outcome.summary = to_string(*problem) + " config " + to_string(config);
        outcome.config = to_string(config);
        // The depthwise kernel hands its epilogue vectors of channels across groups.
        const gemm_problem& stores =
            config.is_depthwise() ? depthwise_epilogue_problem(*problem) : *problem;
        if (e && can_fuse(config, stores, *e, &outcome.reason, options_.limits)) {
            std::vector<operand> args = inputs;
            args.insert(args.end(), offer->extra_inputs.begin(), offer->extra_inputs.end());
            steps_.add(write_kernel("gemm_fused", offer->origin,
                                    [&](const std::string& entry) {
                                        return generate_gemm_kernel(*problem, config,
                                                                    fused_epilogue(stores, *e),
                                                                    entry, options_.limits);
                                    }),
                       args, offer->outputs, offer->origin);
            outcome.fused = true;
            // The anchor's own value never exists in memory.
            if (outputs[0].source == memory_source::buffer)
                steps_.out().buffers[outputs[0].index].bytes = 0;
            return outcome;
        }
        const gemm_epilogue epilogue = default_epilogue(stores, outputs[0].view);
        if (config.split_k <= 1) {
            steps_.add(write_kernel("gemm", origin,
                                    [&](const std::string& entry) {
                                        return generate_gemm_kernel(*problem, config, epilogue,
                                                                    entry, options_.limits);
                                    }),
                       inputs, outputs, origin);
            return outcome;
        }
        const std::size_t bytes = split_k_workspace_bytes(*problem, config);
        const operand workspace = steps_.new_buffer(shape{dtype::u8, {bytes}});
        steps_.add(write_kernel("gemm_split_k", origin,
                                [&](const std::string& entry) {
                                    return generate_gemm_kernel(*problem, config, epilogue, entry,
                                                                options_.limits);
                                }),
                   inputs, {workspace}, origin);
        steps_.add(write_kernel("gemm_split_k_finish", origin,
                                [&](const std::string& entry) {
                                    return generate_split_k_finish_kernel(*problem, config,
                                                                          epilogue, entry);
                                }),
                   {workspace}, outputs, origin + " (split-K sum)");
        return outcome;
    }

    // With exact_fp32 an f32 problem may only use SIMT configs (tensor cores round to TF32).
    bool allowed(const perf_config& c, const gemm_problem& problem, std::string* why) const {
        if (options_.exact_fp32 && problem.type == dtype::f32 && c.rounds_f32_to_tf32()) {
            if (why) *why = "--exact-fp32 needs a _simt or depthwise config for f32";
            return false;
        }
        return valid(c, problem, why, options_.limits);
    }

    perf_config choose_config(const anchor_choice& context) {
        lowered_program& out = steps_.out();
        const gemm_problem& problem = context.problem;
        const std::string& origin = context.origin;
        auto candidates = candidate_configs(problem, options_.limits);
        if (options_.exact_fp32 && problem.type == dtype::f32) {
            std::erase_if(candidates, [](const perf_config& c) { return c.rounds_f32_to_tf32(); });
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
        out.anchor_candidates.emplace_back();
        for (const perf_config& c : candidates)
            out.anchor_candidates.back().push_back(to_string(c));
        std::string why;
        if (!options_.perf_config.empty()) {
            auto forced = parse_perf_config(options_.perf_config);
            CONFLUX_USER_CHECK(forced.has_value(), "--perf-config '", options_.perf_config,
                               "' is not a perf config (expected e.g. 128x128x32_w2x2_s3_k1)");
            if (allowed(*forced, problem, &why)) return *forced;
            out.trace.push_back(origin + ": --perf-config " + options_.perf_config +
                                " is not valid here (" + why + "); using the heuristic");
        }
        if (options_.choose_config) {
            const anchor_choice with_candidates{context.problem, candidates,     context.op,
                                                context.modules, context.inputs, context.epilogue,
                                                context.origin};
            std::vector<std::string> lines;
            auto chosen = options_.choose_config(with_candidates, lines);
            for (auto& l : lines)
                out.trace.push_back(origin + ": " + l);
            if (chosen) {
                CONFLUX_ASSERT(allowed(*chosen, problem, &why), origin, ": the chosen config ",
                               to_string(*chosen), " is not valid: ", why);
                return *chosen;
            }
        }
        return candidates.front();
    }

    // A fused gemm op (docs/ARCHITECTURE.md, "Compiling a fused gemm op"): one kernel when the
    // anchor's config can_fuse the part after the anchor; otherwise gemm into a temporary, then the
    // pointwise part, then (when a return has a layout tail) a layout copy into the op's outputs;
    // without a tail the pointwise kernel writes the outputs itself. The parts were cut before
    // lowering (split_fused_ops).
    std::vector<operand> lower_fused_gemm(const instruction& ins,
                                          const std::vector<operand>& inputs,
                                          const std::string& origin) {
        const fused_op_split& split = splits_.by_op.at(&ins);
        lowered_program& out = steps_.out();
        const std::size_t first = steps_.size();
        if (split.at_anchor.empty()) { // nothing after the anchor
            auto lowered = lower_module(*ins.module_inputs().at(0), inputs, nullptr, true);
            CONFLUX_ASSERT(lowered.anchor.has_value(), origin, ": no anchor lowered");
            out.trace.push_back(origin + ": " + lowered.anchor->summary +
                                " -> fused (no epilogue)");
            steps_.annotate(first, "fused " + lowered.anchor->config);
            return lowered.values;
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
            outputs.push_back(steps_.new_buffer(s));

        // The anchor, offered the part after it as its epilogue.
        const auto& at_anchor = split.at_anchor;
        epilogue_offer offer;
        offer.epilogue = at_anchor[1].mod;
        offer.outputs = outputs;
        offer.origin = origin;
        offer.op = &ins;
        offer.op_inputs = shapes_of(inputs);
        for (std::size_t i = 0; i < at_anchor[1].inputs.size(); ++i) {
            const split_input& in = at_anchor[1].inputs[i];
            if (in.is_placeholder())
                offer.anchor_slot = i;
            else
                offer.extra_inputs.push_back(argument_of(in.arg));
        }
        auto anchor_part = lower_module(*at_anchor[0].mod, bind(at_anchor[0]), &offer, true);
        CONFLUX_ASSERT(anchor_part.anchor.has_value(), origin, ": no anchor lowered");
        const anchor_outcome& anchor = *anchor_part.anchor;
        results.push_back(anchor_part.values);
        if (anchor.fused) {
            out.trace.push_back(origin + ": " + anchor.summary + " -> fused");
            steps_.annotate(first, "fused " + anchor.config);
            return outputs;
        }

        const bool three_way = !split.three_way.empty();
        // Part 0 of either split is the anchor's closure, already lowered: its one output is
        // the anchor's value.
        const auto& parts = three_way ? split.three_way : at_anchor;
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
                    part_out.push_back(steps_.new_buffer(part_shapes.back()));
                }
            }
            const std::vector<operand> part_in = bind(parts[k]);
            const std::string kind = last && three_way ? "layout_copy" : "epilogue";
            const std::string part_origin = origin + " (" + kind + ")";
            steps_.add(write_kernel(kind, part_origin,
                                    [&](const std::string& entry) {
                                        return generate_module_kernel(part, shapes_of(part_in),
                                                                      part_shapes, entry);
                                    }),
                       part_in, part_out, part_origin);
            results.push_back(part_out);
        }
        out.trace.push_back(
            origin + ": " + anchor.summary + " -> " +
            (three_way ? "3-way (gemm | pointwise | layout copy)" : "2-way (gemm | pointwise)") +
            ": " + anchor.reason);
        steps_.annotate(first, (three_way ? "3-way " : "2-way ") + anchor.config);
        return outputs;
    }

    // Each returned value is written to an output buffer of its own: a kernel result is
    // adopted as it is; a parameter, literal, view or value returned twice is copied out.
    void bind_outputs(const module& m, const std::vector<operand>& results) {
        lowered_program& out = steps_.out();
        out.output_names = m.output_names();
        static const operation copy = op::contiguous{};
        for (std::size_t i = 0; i < results.size(); ++i) {
            const operand& r = results[i];
            const bool adoptable = r.source == memory_source::buffer && r.byte_offset == 0 &&
                                   !out.buffers[r.index].is_output &&
                                   out.buffers[r.index].bytes == r.view.bytes();
            std::size_t buffer_index;
            shape layout = r.view;
            if (adoptable) {
                buffer_index = r.index;
            } else {
                layout = r.view.as_standard();
                operand dst = steps_.new_buffer(layout);
                const std::string& name = out.output_names.at(i);
                steps_.add(
                    write_kernel("copy", "output " + name,
                                 [&](const std::string& entry) {
                                     return generate_kernel({&copy, {r.view}, {layout}, {}, entry});
                                 }),
                    {r}, {dst}, "copy of output " + name);
                buffer_index = dst.index;
            }
            out.buffers[buffer_index].is_output = true;
            out.buffers[buffer_index].output_index = i;
            out.output_buffers.push_back(buffer_index);
            out.output_shapes.push_back(layout);
        }
    }

    // Places every temporary (every buffer that is not an output) in one arena by lifetime.
    static void plan_memory_of(lowered_program& out) {
        std::vector<buffer_lifetime> lifetimes;
        for (std::size_t i = 0; i < out.buffers.size(); ++i) {
            const buffer& b = out.buffers[i];
            if (b.is_output) continue;
            out.temporaries.push_back(i);
            lifetimes.push_back({b.bytes, b.first_step, b.last_step});
        }
        out.plan = plan_memory(lifetimes);
        out.arena_offset.assign(out.buffers.size(), 0);
        for (std::size_t t = 0; t < out.temporaries.size(); ++t)
            out.arena_offset[out.temporaries[t]] = out.plan.offsets[t];
    }

    const program& prog_;
    const lowering_options& options_;
    const fused_op_splits splits_;
    step_list steps_;
};

} // namespace

lowered_program lower_program(const program& p, const lowering_options& options) {
    return lowering(p, options).run();
}

} // namespace conflux::cuda
