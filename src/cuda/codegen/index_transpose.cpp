#include "cuda/codegen/index_transpose.hpp"

#include "conflux/ops/views.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/index_kernel.hpp"
#include "cuda/codegen/index_writer.hpp"

#include <algorithm>

namespace conflux::cuda::index {

namespace {

constexpr std::int64_t tile = 32;
constexpr std::int64_t tile_rows = index::block_threads / tile; // each thread copies 4 rows
constexpr std::size_t min_tiled_len = 16;

// An op whose output is its input read through other lens/strides at offset 0 (layout ops and
// broadcast; not slice, whose offset the chain does not carry), or a standard copy of it.
bool reads_input_at_offset_0(const operation& op) {
    const op_traits t = op.traits();
    return t.layout_only || t.replicates || op.get_if<op::contiguous>() != nullptr;
}

// The views from m's only parameter to its only return, in order (empty when the parameter is
// returned as it is); nullopt when m is anything else.
std::optional<std::vector<instruction_ref>> view_chain(const module& m) {
    const auto params = m.parameters();
    const instruction_ref ret = m.get_return();
    if (params.size() != 1 || ret == nullptr || ret->inputs().size() != 1) return std::nullopt;
    std::vector<instruction_ref> chain;
    for (instruction_ref at = ret->inputs().front(); at != params.front();
         at = at->inputs().front()) {
        if (!reads_input_at_offset_0(at->get_operator()) || at->inputs().size() != 1)
            return std::nullopt;
        chain.push_back(at);
    }
    std::reverse(chain.begin(), chain.end());
    return chain;
}

// The input buffer seen through the chain: the return's lens with strides into the input.
// nullopt when a reshape of the actual input would have to copy.
std::optional<shape> composed_view(const std::vector<instruction_ref>& chain, shape s) {
    for (instruction_ref ins : chain) {
        const operation& op = ins->get_operator();
        // The same values; only the layout changes.
        if (op.get_if<op::contiguous>()) continue;
        if (!op.view_offset(s)) return std::nullopt;
        s = op.compute_shape({s});
    }
    return s;
}

struct copy_axis {
    std::int64_t len;
    std::int64_t src; // stride in the input
    std::int64_t dst; // stride in the output
};

// The axes of len > 1, neighbours merged where both sides keep them contiguous, so that e.g.
// NCHW -> NHWC becomes a [N, C, HW] -> [N, HW, C] transpose of two long axes.
std::vector<copy_axis> merged_axes(const shape& src, const shape& dst) {
    std::vector<copy_axis> axes;
    for (std::size_t k = 0; k < src.rank(); ++k) {
        if (src.lens()[k] == 1) continue;
        copy_axis next{static_cast<std::int64_t>(src.lens()[k]),
                       static_cast<std::int64_t>(src.strides()[k]),
                       static_cast<std::int64_t>(dst.strides()[k])};
        if (!axes.empty()) {
            copy_axis& prev = axes.back();
            if (prev.src == next.src * next.len && prev.dst == next.dst * next.len) {
                prev = {prev.len * next.len, next.src, next.dst};
                continue;
            }
        }
        axes.push_back(next);
    }
    return axes;
}

} // namespace

std::optional<kernel_source> tiled_transpose_kernel(const module& m,
                                                    const std::vector<shape>& inputs,
                                                    const std::vector<shape>& outputs,
                                                    const std::string& entry) {
    const auto chain = view_chain(m);
    if (!chain || inputs.size() != 1 || outputs.size() != 1) return std::nullopt;
    const auto src = composed_view(*chain, inputs.front());
    const shape& dst = outputs.front();
    if (!src || src->lens() != dst.lens() || dst.elements() == 0) return std::nullopt;
    const auto axes = merged_axes(*src, dst);
    auto find_unit = [&](auto member) {
        return std::find_if(axes.begin(), axes.end(),
                            [&](const copy_axis& x) { return x.*member == 1; });
    };
    const auto a = find_unit(&copy_axis::dst); // the output's fastest axis
    const auto b = find_unit(&copy_axis::src); // the input's fastest axis
    if (a == axes.end() || b == axes.end() || a == b) return std::nullopt;
    if (a->len < std::int64_t(min_tiled_len) || b->len < std::int64_t(min_tiled_len))
        return std::nullopt;

    dims batch_lens;
    std::vector<std::int64_t> batch_src, batch_dst;
    for (auto x = axes.begin(); x != axes.end(); ++x) {
        if (x == a || x == b) continue;
        batch_lens.push_back(static_cast<std::size_t>(x->len));
        batch_src.push_back(x->src);
        batch_dst.push_back(x->dst);
    }
    const std::int64_t tiles_a = (a->len + tile - 1) / tile;
    const std::int64_t tiles_b = (b->len + tile - 1) / tile;
    std::int64_t blocks = tiles_a * tiles_b;
    for (auto len : batch_lens)
        blocks *= static_cast<std::int64_t>(len);
    if (blocks > 0x7fffffff) return std::nullopt; // beyond one grid dimension: the generic path

    kernel_writer w(index_type_for(m, inputs, outputs));
    const std::string& it = w.index_type();
    w.line("const " + it + " t = static_cast<" + it + ">(blockIdx.x);");
    const std::string tb = w.bind("t % " + text::decimal_literal(tiles_b));
    const std::string ta =
        w.bind("(t / " + text::decimal_literal(tiles_b) + ") % " + text::decimal_literal(tiles_a));
    std::string src_base = "0", dst_base = "0";
    if (!batch_lens.empty()) {
        const std::string tm = w.bind("t / " + text::decimal_literal(tiles_a * tiles_b));
        const auto batch = w.axes(index_expr::from_linear(batch_lens, tm));
        src_base = w.bind(w.dot(batch, batch_src));
        dst_base = w.bind(w.dot(batch, batch_dst));
    }
    const std::string a0 = w.mul(ta, tile), b0 = w.mul(tb, tile);
    const std::string storage = storage_type(dst.type());
    const std::string rows = "for (int r = static_cast<int>(threadIdx.y); r < " +
                             text::decimal_literal(tile) +
                             "; r += " + text::decimal_literal(tile_rows) + ")";
    const std::string in_range = "if (ia < " + text::decimal_literal(a->len) + " && ib < " +
                                 text::decimal_literal(b->len) + ")";
    // Read rows of the tile along the input's fastest axis b ...
    w.open(rows);
    w.line("const " + it + " ia = " + a0 + " + r;");
    w.line("const " + it + " ib = " + b0 + " + static_cast<" + it + ">(threadIdx.x);");
    w.line(in_range + " tile[r][threadIdx.x] = in0[" + src_base + " + ia * " +
           text::decimal_literal(a->src) + " + ib * " + text::decimal_literal(b->src) + "];");
    w.close();
    w.line("__syncthreads();");
    // ... and write them along the output's fastest axis a.
    w.open(rows);
    w.line("const " + it + " ia = " + a0 + " + static_cast<" + it + ">(threadIdx.x);");
    w.line("const " + it + " ib = " + b0 + " + r;");
    w.line(in_range + " out0[" + dst_base + " + ia * " + text::decimal_literal(a->dst) +
           " + ib * " + text::decimal_literal(b->dst) + "] = tile[threadIdx.x][r];");
    w.close();

    kernel_source k;
    k.entry = entry;
    k.code = std::string(kernel_prelude()) + kernel_signature(entry, inputs, outputs) + " {\n" +
             "    __shared__ " + storage + " tile[" + text::decimal_literal(tile) + "][" +
             text::decimal_literal(tile + 1) + "];\n" + w.body() + "}\n";
    k.launch.grid = {static_cast<unsigned>(blocks), 1, 1};
    k.launch.block = {static_cast<unsigned>(tile), static_cast<unsigned>(tile_rows), 1};
    k.inputs = 1;
    k.outputs = 1;
    return k;
}

} // namespace conflux::cuda::index
