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
    const std::string ptr = is_a ? "cx_a" : "cx_b";
    const std::string row0 = is_a ? "cx_m0" : "cx_n0";
    const std::size_t rows = is_a ? p.m : p.n;
    const bool rows_exact = rows % t.rows == 0;
    const unsigned T = plan.load_threads; // a _ws kernel's producer warpgroup, else the block
    const unsigned L = t.loads_per_thread;
    const unsigned vpr = t.inner / t.vector; // vectors per shared row
    const std::size_t total = std::size_t(t.outer) * vpr;
    const bool k_major = t.major == operand_major::k;
    // With threads a multiple of the vectors per row, a thread's inner position is the same in
    // every load: its depth (k-major) or its row (mn-major) is then computed once.
    const bool same_inner = T % vpr == 0;
    const std::string L_s = std::to_string(L);
    const std::string off_t = c.offset_type;
    const std::string in = "    ";

    auto outer_expr = [&](const std::string& i) {
        return same_inner ? "(cx_tid / " + std::to_string(vpr) + " + " + i + " * " +
                                std::to_string(T / vpr) + ")"
                          : "((cx_tid + " + i + " * " + std::to_string(T) + ") / " +
                                std::to_string(vpr) + ")";
    };
    auto inner_expr = [&](const std::string& i) {
        return same_inner
                   ? "(cx_tid % " + std::to_string(vpr) + " * " + std::to_string(t.vector) + ")"
                   : "((cx_tid + " + i + " * " + std::to_string(T) + ") % " + std::to_string(vpr) +
                         " * " + std::to_string(t.vector) + ")";
    };
    const std::string row_in_tile = k_major ? outer_expr("i") : inner_expr("i");
    const std::string depth_in_tile = k_major ? inner_expr("i") : outer_expr("i");
    // The depth is per thread (not per load) when it is the inner position of a k-major tile
    // shared by all loads.
    const bool depth_per_thread = k_major && same_inner;
    const bool row_per_thread = !k_major && same_inner;
    // Rows that end inside a vector (gemm_operand::partial_last_vector): each copy reads only the
    // elements left in its row.
    const bool partial = o.contiguous_extent % t.vector != 0;
    CONFLUX_ASSERT(!partial || (!k_major && t.async && !conv_input),
                   "a partial last vector is for mn-major cp.async copies only");

    loader_text r;
    std::string& s = r.setup;
    s += in + "// " + std::string(is_a ? "A" : "B") + ": " + to_string(t.major) + " tile " +
         std::to_string(t.outer) + "x" + std::to_string(t.inner) + ", " + std::to_string(t.vector) +
         "-element " + (t.async ? "cp.async" : "register") + " copies, " + L_s + " per thread\n";
    s += in + "unsigned " + P + "sts[" + L_s + "];\n";
    const std::string L_row = row_per_thread ? "1" : L_s;
    s += in + off_t + " " + P + "row_off[" + L_row + "];\n";
    s += in + "bool " + P + "row_ok[" + L_row + "];\n";
    if (partial) s += in + "int " + P + "row_left[" + L_row + "];\n";
    const std::size_t nd = conv_input ? p.conv->nd() : 0;
    for (std::size_t d = 0; d < nd; ++d)
        s += in + "int " + P + "pos" + std::to_string(d) + "[" + L_row + "];\n";
    if (!depth_per_thread) s += in + "int " + P + "depth[" + L_s + "];\n";
    s += in + "#pragma unroll\n" + in + "for (int i = 0; i < " + L_s + "; ++i) {\n";
    const std::string in2 = in + "    ";
    s += in2 + P + "sts[i] = " + P + "tile_offset(" + (k_major ? row_in_tile : depth_in_tile) +
         ", " + (k_major ? depth_in_tile : row_in_tile) + ");\n";
    if (!depth_per_thread) s += in2 + P + "depth[i] = " + depth_in_tile + ";\n";
    s += in + "}\n";

    // Row state: per load, or once when the row is per thread.
    const std::string ri = row_per_thread ? "0" : "i";
    s += in + "#pragma unroll\n" + in + "for (int i = 0; i < " + L_row + "; ++i) {\n";
    s += in2 + "const " + off_t + " row = " + row0 + " + " + row_in_tile + ";\n";
    s += in2 + P + "row_ok[" + ri +
         "] = " + (rows_exact ? "true" : "row < " + text::integer_literal(rows)) + ";\n";
    if (partial)
        s += in2 + P + "row_left[" + ri + "] = (int)(" + text::integer_literal(rows) + " - row);\n";
    if (!conv_input) {
        s += in2 + P + "row_off[" + ri + "] = row * " + text::integer_literal(o.row_stride) + ";\n";
    } else {
        const conv_geometry& g = *p.conv;
        // row = ((image * O0 + o0) * O1 + o1)...; the window starts at o * stride - pad.
        s += in2 + off_t + " rest = row;\n";
        std::string off;
        for (std::size_t d = nd; d-- > 0;) {
            const std::string od = "o" + std::to_string(d);
            s += in2 + "const int " + od + " = (int)(rest % " +
                 text::integer_literal(g.output_spatial[d]) + ");\n";
            s += in2 + "rest /= " + text::integer_literal(g.output_spatial[d]) + ";\n";
            s += in2 + P + "pos" + std::to_string(d) + "[" + ri + "] = " + od + " * " +
                 text::integer_literal(g.stride[d]) + " - " +
                 text::integer_literal(g.pad_begin[d]) + ";\n";
            off += " + (" + off_t + ")" + P + "pos" + std::to_string(d) + "[" + ri + "] * " +
                   text::integer_literal(g.input_spatial_strides[d]);
        }
        s += in2 + P + "row_off[" + ri + "] = rest * " + text::integer_literal(g.image_stride) +
             off + ";\n";
    }
    s += in + "}\n";
    if (depth_per_thread) s += in + "const int " + P + "depth = " + inner_expr("0") + ";\n";

    // The copy of K-tile cx_kt into stage cx_slot.
    std::string& l = r.load;
    const std::string stage_base =
        "(" +
        std::string(is_a ? "0u"
                         : std::to_string(plan.config.stages) + "u * " +
                               std::to_string(plan.a.stage_bytes) + "u") +
        " + (unsigned)cx_slot * " + std::to_string(t.stage_bytes) + "u)";
    l += in2 + "const unsigned " + P + "stage = " + stage_base + ";\n";
    const std::string kt_base = "cx_kt * " + std::to_string(plan.config.tile_k);
    if (depth_per_thread)
        l += depth_decomposition(c, o, "(" + kt_base + " + " + P + "depth)", P + "k", in2);
    l += in2 + "#pragma unroll\n" + in2 + "for (int i = 0; i < " + L_s + "; ++i) {\n";
    std::string in3 = in2 + "    ";
    if (total % T != 0) {
        l +=
            in3 + "if (cx_tid + i * " + std::to_string(T) + " < " + std::to_string(total) + ") {\n";
        in3 += "    ";
    }
    if (!depth_per_thread)
        l += depth_decomposition(c, o, "(" + kt_base + " + " + P + "depth[i])", P + "k", in3);
    std::string ok = P + "row_ok[" + ri + "] && " + P + "kok";
    if (conv_input) {
        const conv_geometry& g = *p.conv;
        for (std::size_t d = 0; d < nd; ++d) {
            if (!needs_bounds_check(g, d)) continue;
            const std::string tap = g.kernel[d] == 1 ? "0" : P + "ktap" + std::to_string(d);
            ok += " && (unsigned)(" + P + "pos" + std::to_string(d) + "[" + ri + "] + " + tap +
                  " * " + text::integer_literal(g.dilation[d]) + ") < " +
                  text::integer_literal(g.input_spatial[d]) + "u";
        }
    }
    l += in3 + "const bool ok = " + ok + ";\n";
    l += in3 + "const " + off_t + " off = " + P + "row_off[" + ri + "] + " + P + "koff;\n";
    const std::string vector_bytes = std::to_string(t.vector * plan.element_bytes);
    const std::string copy_to_from = "(cx_smem_base + " + P + "stage + " + P +
                                     "sts[i], ok ? (const void*)(" + ptr +
                                     " + off) : (const void*)" + ptr + ", ";
    if (partial) {
        l += in3 + "const int bytes = ok ? min(" + P + "row_left[" + ri + "] * " +
             std::to_string(plan.element_bytes) + ", " + vector_bytes + ") : 0;\n";
        l += in3 + "cx_cp_async_bytes<" + vector_bytes + ">" + copy_to_from + "bytes);\n";
    } else if (t.async) {
        l += in3 + "cx_cp_async<" + vector_bytes + ">" + copy_to_from + "ok);\n";
    } else {
        CONFLUX_ASSERT(t.vector == 1, "register copies are element by element");
        l += in3 + "*reinterpret_cast<" + c.storage + "*>(cx_smem + " + P + "stage + " + P +
             "sts[i]) = ok ? " + ptr + "[off] : " + c.storage + "();\n";
    }
    if (total % T != 0) l += in2 + "    }\n";
    l += in2 + "}\n";
    return r;
}

} // namespace conflux::cuda::gemm
