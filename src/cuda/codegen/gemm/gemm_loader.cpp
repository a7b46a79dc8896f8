// Global -> shared copies of the operand tiles. Thread cx_tid copies vectors cx_tid,
// cx_tid + threads, ... of the tile (row-major over the shared tile's outer x inner/vector
// vectors), so each thread's rows are fixed for the whole K loop: what depends only on the row
// (bounds, the row's offset, a convolution window's start) is computed once before the loop;
// what depends on k (the depth offset, the tap and its bounds) once per K-tile.
#include "cuda/codegen/gemm/gemm_codegen.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"

namespace conflux::cuda::gemm {

std::string tile_offset_function(const std::string& name, const tile_plan& t,
                                 unsigned element_bytes) {
    const std::string swizzled = "(((byte >> 4) ^ ((outer / " + std::to_string(t.swizzle_div) +
                                 "u) % " + std::to_string(t.swizzle_mod) +
                                 "u)) << 4) + (byte & 15u)";
    const bool blocked = t.block_bytes != 0 && t.block_bytes != t.row_bytes;
    std::string s = "__device__ __forceinline__ unsigned " + name +
                    "(unsigned outer, unsigned inner) {\n    " + (blocked ? "" : "const ") +
                    "unsigned byte = inner * " + std::to_string(element_bytes) + "u;\n";
    if (!blocked)
        return s + "    return outer * " + std::to_string(t.row_bytes) + "u + " + swizzled +
               ";\n}\n";
    // Blocked (wgmma): the block of the row, then the row inside the block region.
    const std::string bb = std::to_string(t.block_bytes) + "u";
    return s + "    const unsigned block = byte / " + bb + ";\n" + "    byte -= block * " + bb +
           ";\n" + "    return block * " + std::to_string(t.outer * t.block_bytes) +
           "u + outer * " + bb + " + " + swizzled + ";\n}\n";
}

namespace {

// The depth k (an int expression) decomposed over the operand's k axes: declares
// <p>off (the depth part of the offset), <p>ok (k inside K) and, for a convolution input,
// <p>tap<d> per spatial axis.
std::string depth_decomposition(const codegen_context& c, const gemm_operand& o,
                                const std::string& k, const std::string& p,
                                const std::string& indent) {
    const auto& lens = o.k_lens;
    const std::size_t n = lens.size();
    std::string s;
    const bool k_exact = c.problem.k % c.plan.config.tile_k == 0;
    s += indent + "const bool " + p +
         "ok = " + (k_exact ? "true" : k + " < " + text::integer_literal(c.problem.k)) + ";\n";
    std::vector<std::string> idx(n);
    if (n == 1) {
        idx[0] = k;
    } else {
        s += indent + "int " + p + "rest = " + k + ";\n";
        for (std::size_t d = n; d-- > 0;) {
            const std::string name = d + 1 == n ? p + "c" : p + "tap" + std::to_string(d);
            if (lens[d] == 1) {
                s += indent + "const int " + name + " = 0;\n";
            } else if (d == 0) {
                s += indent + "const int " + name + " = " + p + "rest;\n";
            } else {
                s += indent + "const int " + name + " = " + p + "rest % " +
                     text::integer_literal(lens[d]) + ";\n";
                s += indent + p + "rest /= " + text::integer_literal(lens[d]) + ";\n";
            }
            idx[d] = name;
        }
    }
    std::string off;
    for (std::size_t d = 0; d < n; ++d) {
        if (lens[d] <= 1 || o.k_strides[d] == 0) continue;
        off += (off.empty() ? "" : " + ") + ("(" + c.offset_type + ")" + idx[d]) + " * " +
               text::integer_literal(o.k_strides[d]);
    }
    s += indent + "const " + c.offset_type + " " + p + "off = " + (off.empty() ? "0" : off) + ";\n";
    return s;
}

// Whether spatial axis d of a convolution can read outside the input (so needs a check).
bool needs_bounds_check(const conv_geometry& g, std::size_t d) {
    if (g.pad_begin[d] > 0) return true;
    const std::size_t last =
        (g.output_spatial[d] - 1) * g.stride[d] + (g.kernel[d] - 1) * g.dilation[d];
    return last >= g.input_spatial[d];
}

} // namespace

loader_text operand_loader(const codegen_context& c, bool is_a) {
    const gemm_problem& p = c.problem;
    const kernel_plan& plan = c.plan;
    const gemm_operand& o = is_a ? p.a : p.b;
    const tile_plan& t = is_a ? plan.a : plan.b;
    const bool conv_input = is_a && p.family == gemm_family::convolution;
    const std::string P = is_a ? "cx_a_" : "cx_b_";
    const std::string view = P + "view";
    const std::string ptr = is_a ? "cx_a" : "cx_b";
    const std::string row0 = is_a ? "cx_m0" : "cx_n0";
    const std::size_t rows = is_a ? p.m : p.n;
    const bool rows_exact = rows % t.rows == 0;
    const unsigned T = plan.load_threads;    // a _ws kernel's producer warpgroup, else the block
    const unsigned vpr = t.inner / t.vector; // vectors per shared row
    const std::size_t total = std::size_t(t.outer) * vpr;
    const bool k_major = t.major == operand_major::k;
    const std::string& off_t = c.offset_type;
    const std::string in = "    ", in2 = "        ";
    // Rows that end inside a vector (gemm_operand::partial_last_vector): each copy reads only the
    // elements left in its row.
    const bool partial = o.contiguous_extent % t.vector != 0;
    CONFLUX_ASSERT(!partial || (!k_major && t.async && !conv_input),
                   "a partial last vector is for mn-major cp.async copies only");
    CONFLUX_ASSERT(partial || t.async || t.vector == 1, "register copies are element by element");
    const std::size_t nd = conv_input ? p.conv->nd() : 0;

    // The operand's view (cx_tile_loader in gemm.cuh): rows, depths and a window's bounds.
    loader_text r;
    std::string& v = r.definitions;
    v += "// " + std::string(is_a ? "A" : "B") + ": " + to_string(t.major) + " tile " +
         std::to_string(t.outer) + "x" + std::to_string(t.inner) + ", " + std::to_string(t.vector) +
         "-element " + (t.async ? "cp.async" : "register") + " copies, " +
         std::to_string(t.loads_per_thread) + " per thread\n";
    v += "struct " + view + " {\n";
    v += in + "struct row_t {\n" + in2 + off_t + " off;\n" + in2 + "bool ok;\n";
    if (partial) v += in2 + "int left;\n";
    for (std::size_t d = 0; d < nd; ++d)
        v += in2 + "int pos" + std::to_string(d) + ";\n";
    v += in + "};\n";
    v += in + "struct depth_t {\n" + in2 + off_t + " off;\n" + in2 + "bool ok;\n";
    for (std::size_t d = 0; d < nd; ++d)
        v += in2 + "int tap" + std::to_string(d) + ";\n";
    v += in + "};\n";
    v += in + "static __device__ __forceinline__ row_t row(" + off_t + " row) {\n";
    v += in2 + "row_t r;\n";
    v += in2 + "r.ok = " + (rows_exact ? "true" : "row < " + text::integer_literal(rows)) + ";\n";
    if (partial) v += in2 + "r.left = (int)(" + text::integer_literal(rows) + " - row);\n";
    if (!conv_input) {
        v += in2 + "r.off = row * " + text::integer_literal(o.row_stride) + ";\n";
    } else {
        const conv_geometry& g = *p.conv;
        // row = ((image * O0 + o0) * O1 + o1)...; the window starts at o * stride - pad.
        v += in2 + off_t + " rest = row;\n";
        std::string off;
        for (std::size_t d = nd; d-- > 0;) {
            const std::string od = "o" + std::to_string(d), pos = "r.pos" + std::to_string(d);
            v += in2 + "const int " + od + " = (int)(rest % " +
                 text::integer_literal(g.output_spatial[d]) + ");\n";
            v += in2 + "rest /= " + text::integer_literal(g.output_spatial[d]) + ";\n";
            v += in2 + pos + " = " + od + " * " + text::integer_literal(g.stride[d]) + " - " +
                 text::integer_literal(g.pad_begin[d]) + ";\n";
            off += " + (" + off_t + ")" + pos + " * " +
                   text::integer_literal(g.input_spatial_strides[d]);
        }
        v += in2 + "r.off = rest * " + text::integer_literal(g.image_stride) + off + ";\n";
    }
    v += in2 + "return r;\n" + in + "}\n";
    v += in + "static __device__ __forceinline__ depth_t depth(int k) {\n";
    v += depth_decomposition(c, o, "k", "k", in2);
    v += in2 + "depth_t d;\n" + in2 + "d.off = koff;\n" + in2 + "d.ok = kok;\n";
    for (std::size_t d = 0; d < nd; ++d)
        v += in2 + "d.tap" + std::to_string(d) + " = ktap" + std::to_string(d) + ";\n";
    v += in2 + "return d;\n" + in + "}\n";
    std::string inside = "true";
    if (conv_input) {
        const conv_geometry& g = *p.conv;
        for (std::size_t d = 0; d < nd; ++d) {
            if (!needs_bounds_check(g, d)) continue;
            const std::string tap = g.kernel[d] == 1 ? "0" : "d.tap" + std::to_string(d);
            inside += " && (unsigned)(r.pos" + std::to_string(d) + " + " + tap + " * " +
                      text::integer_literal(g.dilation[d]) + ") < " +
                      text::integer_literal(g.input_spatial[d]) + "u";
        }
    }
    v += in + "static __device__ __forceinline__ bool inside(const row_t& r, const depth_t& d) {\n";
    v += in2 + "return " + inside + ";\n" + in + "}\n";
    v += "};\n";

    // The loader: per-thread state once, then the copy of K-tile cx_kt into stage cx_slot.
    const int copy = partial ? 1 : t.async ? 0 : 2;
    r.setup += in + "cx_tile_loader<" + view + ", " + c.storage + ", " + off_t + ", " +
               std::to_string(t.outer) + ", " + std::to_string(vpr) + ", " +
               std::to_string(t.vector) + ", " + std::to_string(T) + ", " +
               std::to_string(t.loads_per_thread) + ", " + std::to_string(total) + ", " +
               (k_major ? "true" : "false") + ", " + std::to_string(plan.config.tile_k) + ", " +
               std::to_string(copy) + "> " + P + "loader;\n";
    r.setup += in + P + "loader.setup(cx_tid, " + row0 + ", [](unsigned outer, unsigned inner) { " +
               "return " + P + "tile_offset(outer, inner); });\n";
    const std::string stage = "(" +
                              std::string(is_a ? "0u"
                                               : std::to_string(plan.config.stages) + "u * " +
                                                     std::to_string(plan.a.stage_bytes) + "u") +
                              " + (unsigned)cx_slot * " + std::to_string(t.stage_bytes) + "u)";
    r.load += in2 + P + "loader.load(cx_smem_base + " + stage + ", cx_smem + " + stage +
              ", cx_kt, " + ptr + ");\n";
    return r;
}

} // namespace conflux::cuda::gemm
