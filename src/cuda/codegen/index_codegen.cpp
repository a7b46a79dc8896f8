// The "index" kernel family: one thread per output element, each computing its element's value
// by walking the module backwards from the return (index_values.hpp). Pointwise modules, copies
// of views, contiguous, concat, pad, gather, gather_elements, gather_nd, trilu and
// batch_normalization all compile through generate_module_kernel; a single op is wrapped in a
// one-instruction module first.
#include "conflux/ir/program.hpp"
#include "conflux/ops/elementwise.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/generator.hpp"
#include "cuda/codegen/index_kernel.hpp"
#include "cuda/codegen/index_transpose.hpp"
#include "cuda/codegen/index_values.hpp"
#include "ops/op_helpers.hpp"

#include <algorithm>

namespace conflux::cuda {

namespace {

using index::index_expr;

// Returns that share lens share one index space, so one decomposition and the values they have
// in common are computed once.
struct return_group {
    dims lens;
    std::vector<std::size_t> returns;
};

std::vector<return_group> group_by_lens(const std::vector<shape>& outputs) {
    std::vector<return_group> groups;
    for (std::size_t r = 0; r < outputs.size(); ++r) {
        auto g = std::find_if(groups.begin(), groups.end(),
                              [&](const return_group& x) { return x.lens == outputs[r].lens(); });
        if (g == groups.end())
            groups.push_back({outputs[r].lens(), {r}});
        else
            g->returns.push_back(r);
    }
    return groups;
}

using op::product;

void check_returns(const module& m, const std::vector<instruction_ref>& returns,
                   const std::vector<shape>& outputs) {
    CONFLUX_ASSERT(returns.size() == outputs.size(), "module ", m.name(), " returns ",
                   returns.size(), " values but ", outputs.size(), " outputs were given");
    for (std::size_t r = 0; r < returns.size(); ++r) {
        const shape& s = returns[r]->get_shape();
        CONFLUX_ASSERT(s.lens() == outputs[r].lens() && s.type() == outputs[r].type(), "module ",
                       m.name(), ": return ", r, " is ", to_string(s), " but output ", r, " is ",
                       to_string(outputs[r]));
    }
}

// Elements per thread of a large 32-bit index kernel with one index space: thread t computes
// elements t, t + T, t + 2T, t + 3T (T threads; each step's loads coalesced across the warp)
// and stores them after all four values are computed, so its loads are in flight together.
// Without that, a thread has one 2-byte load in flight and an f16 pointwise kernel reaches about
// a fifth of the H200's bandwidth (the kernels take no __restrict__ pointers, so the compiler may
// not move a later element's loads above an earlier element's store).
constexpr std::size_t elements_per_thread = 4;
constexpr std::size_t batched_from = std::size_t{1} << 20;

// The kernel around a body that handles thread index `i` (< total): one element per thread
// with 32-bit indices (`per_thread` of them, see elements_per_thread, where the body stores
// into cx_v<r>[cx_k] / cx_o<r>[cx_k]); a grid-stride loop with 64-bit ones, whose grids could
// exceed a grid dimension.
kernel_source assemble(const std::string& entry, const std::vector<shape>& inputs,
                       const std::vector<shape>& outputs, const std::string& globals,
                       const std::string& index_type, const std::string& body, std::size_t total,
                       std::size_t per_thread = 1) {
    const std::string n = std::to_string(total);
    const std::string block = std::to_string(index::block_threads);
    std::string code = std::string(index::kernel_prelude()) + globals +
                       (globals.empty() ? "" : "\n") +
                       index::kernel_signature(entry, inputs, outputs) + " {\n";
    const std::size_t threads = (total + per_thread - 1) / per_thread;
    std::size_t blocks = (threads + index::block_threads - 1) / index::block_threads;
    if (index_type == "int" && per_thread > 1) {
        const std::string k = std::to_string(per_thread), t = std::to_string(threads);
        code += "    const unsigned thread = blockIdx.x * " + block + "u + threadIdx.x;\n" +
                "    if (thread >= " + t + "u) return;\n";
        for (std::size_t r = 0; r < outputs.size(); ++r)
            code += "    " + storage_type(outputs[r].type()) + " cx_v" + std::to_string(r) + "[" +
                    k + "];\n    int cx_o" + std::to_string(r) + "[" + k + "];\n";
        code += "#pragma unroll\n    for (int cx_k = 0; cx_k < " + k + "; ++cx_k) {\n" +
                "    const unsigned cx_e = thread + static_cast<unsigned>(cx_k) * " + t + "u;\n" +
                "    if (cx_e >= " + n + "u) break;\n" +
                "    const int i = static_cast<int>(cx_e);\n" + body + "    }\n" +
                "#pragma unroll\n    for (int cx_k = 0; cx_k < " + k + "; ++cx_k) {\n" +
                "        if (thread + static_cast<unsigned>(cx_k) * " + t + "u >= " + n +
                "u) break;\n";
        for (std::size_t r = 0; r < outputs.size(); ++r) {
            const std::string rs = std::to_string(r);
            code += "        out" + rs + "[cx_o" + rs + "[cx_k]] = cx_v" + rs + "[cx_k];\n";
        }
        code += "    }\n";
    } else if (index_type == "int") {
        code += "    const unsigned thread = blockIdx.x * " + block + "u + threadIdx.x;\n" +
                "    if (thread >= " + n + "u) return;\n" +
                "    const int i = static_cast<int>(thread);\n" + body;
    } else {
        blocks = std::min<std::size_t>(blocks, 0x7fffffff);
        code += "    for (long long i = static_cast<long long>(blockIdx.x) * " + block +
                " + threadIdx.x; i < " + n + "LL; i += static_cast<long long>(gridDim.x) * " +
                block + ") {\n" + body + "    }\n";
    }
    code += "}\n";
    kernel_source k;
    k.entry = entry;
    k.code = std::move(code);
    k.launch.grid = {static_cast<unsigned>(blocks), 1, 1};
    k.launch.block = {index::block_threads, 1, 1};
    k.inputs = inputs.size();
    k.outputs = outputs.size();
    return k;
}

// Nothing to compute: a kernel that is never launched (grid 0), valid should anyone compile it.
kernel_source empty_kernel(const std::string& entry, const std::vector<shape>& inputs,
                           const std::vector<shape>& outputs) {
    kernel_source k;
    k.entry = entry;
    k.code = std::string(index::kernel_prelude()) +
             index::kernel_signature(entry, inputs, outputs) + " {}\n";
    k.launch.grid = {0, 1, 1};
    k.launch.block = {index::block_threads, 1, 1};
    k.inputs = inputs.size();
    k.outputs = outputs.size();
    return k;
}

// A module holding just `op` applied to parameters of the request's input shapes.
kernel_source single_op_kernel(const kernel_request& request) {
    CONFLUX_ASSERT(request.op != nullptr, "a kernel request without an op");
    program p;
    module& m = p.main();
    std::vector<instruction_ref> params;
    for (std::size_t i = 0; i < request.inputs.size(); ++i)
        params.push_back(m.add_parameter("x" + std::to_string(i), request.inputs[i]));
    m.add_return({m.add_instruction(*request.op, params)});
    return generate_module_kernel(m, request.inputs, request.outputs, request.entry);
}

kernel_source pointwise_kernel(const kernel_request& request) {
    CONFLUX_ASSERT(request.modules.size() == 1 && request.modules.front() != nullptr,
                   "pointwise kernel ", request.entry, " needs exactly one submodule");
    return generate_module_kernel(*request.modules.front(), request.inputs, request.outputs,
                                  request.entry);
}

} // namespace

kernel_source generate_module_kernel(const module& m, const std::vector<shape>& inputs,
                                     const std::vector<shape>& outputs, const std::string& entry) {
    const instruction_ref ret = m.get_return();
    CONFLUX_ASSERT(ret != nullptr, "module ", m.name(), " has no return");
    const std::vector<instruction_ref>& returns = ret->inputs();
    check_returns(m, returns, outputs);

    std::size_t total = 0;
    for (const auto& s : outputs)
        total = std::max(total, s.elements());
    if (total == 0) return empty_kernel(entry, inputs, outputs);
    if (auto tiled = index::tiled_transpose_kernel(m, inputs, outputs, entry)) return *tiled;

    index::kernel_writer w(index::index_type_for(m, inputs, outputs));
    index::value_builder values(w, m, inputs, entry);
    const auto groups = group_by_lens(outputs);
    const std::size_t per_thread =
        w.index_type() == "int" && groups.size() == 1 && total >= batched_from ? elements_per_thread
                                                                               : 1;
    for (const auto& group : groups) {
        const std::size_t n = product(group.lens);
        if (n == 0) continue;
        // A scope per group: values of one index space are not valid in another.
        w.open(n == total ? "" : "if (i < " + std::to_string(n) + ")");
        // Threads walk the first output in its memory order, so its stores, and the loads of
        // operands laid out like it (an NHWC chain), are at `i` itself.
        const shape& lead = outputs[group.returns.front()];
        const auto at = lead.standard() || !lead.packed() ? index_expr::from_linear(group.lens, "i")
                                                          : w.memory_order("i", lead);
        for (std::size_t r : group.returns) {
            const std::string v = values.value(returns[r], at);
            const std::string rs = std::to_string(r);
            if (per_thread > 1) {
                w.line("cx_v" + rs + "[cx_k] = " + v + ";");
                w.line("cx_o" + rs + "[cx_k] = " + w.offset(at, outputs[r]) + ";");
            } else {
                w.line("out" + rs + "[" + w.offset(at, outputs[r]) + "] = " + v + ";");
            }
        }
        w.close();
    }
    return assemble(entry, inputs, outputs, values.globals(), w.index_type(), w.body(), total,
                    per_thread);
}

void add_index_generators() {
    add_generator("pointwise", pointwise_kernel);
#define CONFLUX_REGISTER(kind, name, arity) add_generator(name, single_op_kernel);
    CONFLUX_ELEMENTWISE_KINDS(CONFLUX_REGISTER)
#undef CONFLUX_REGISTER
    for (const char* name : {"reshape", "transpose", "squeeze", "unsqueeze", "flatten", "broadcast",
                             "slice", "contiguous", "concat", "pad", "gather", "gather_elements",
                             "gather_nd", "batch_normalization", "trilu"})
        add_generator(name, single_op_kernel);
}

} // namespace conflux::cuda
