// The warps' part of the GEMM kernel: fragments from shared memory, tensor-core or SIMT
// multiply-accumulate, and the walk over the accumulators at the end.
//
// ldmatrix addressing (gemm.cuh gives the fragment layouts). With l = lane, lc8 = (l >> 3) & 1
// and lc16 = l >> 4, the x4 loads that feed one mma read these four 8x8 matrices:
//   A k-major   rows m0 + (l & 7) + 8 lc8,  16-byte chunk 2 ks + lc16            (a0..a3)
//   A mn-major  rows k  (l & 7) + 8 lc16,   chunk of m: (wm0 + 16 mi) / 8 + lc8  (.trans)
//   B k-major   rows n0 + (l & 7) + 8 lc16, chunk 2 ks + lc8     (b0, b1 of ni and ni + 1)
//   B mn-major  rows k  (l & 7) + 8 lc8,    chunk of n: (wn0 + 8 ni) / 8 + lc16  (.trans)
// (a 16-byte chunk is 8 16-bit or 4 tf32 elements; a k-step is 2 chunks for both). Every tile
// row offset the warp adds is a multiple of 8, and the swizzle repeats every 8 rows
// (swizzle_div * swizzle_mod divides 8), so each lane's swizzle term is computed once.
#include "cuda/codegen/gemm/gemm_codegen.hpp"

#include "conflux/util/errors.hpp"
#include "conflux/util/replace_all.hpp"
#include "cuda/codegen/codegen_text.hpp"

namespace conflux::cuda::gemm {

namespace {

std::string u(unsigned v) {
    return std::to_string(v) + "u";
}

std::string swizzle_of_lane(const tile_plan& t) {
    return "((cx_lane & 7u) / " + u(t.swizzle_div) + ") % " + u(t.swizzle_mod);
}

compute_text mma_compute(const codegen_context& c, const std::string& store_call,
                         const std::string& pair_store_call) {
    const kernel_plan& k = c.plan;
    const unsigned eb = k.element_bytes;
    const std::string FM = std::to_string(k.frag_m), FN = std::to_string(k.frag_n);
    const std::string in = "    ", in2 = "        ", in3 = "            ";
    compute_text r;
    std::string& s = r.setup;
    s += in + "const int cx_wm0 = (cx_warp % " + std::to_string(k.config.warps_m) + ") * " +
         std::to_string(k.warp_tile_m) + ";\n";
    s += in + "const int cx_wn0 = (cx_warp / " + std::to_string(k.config.warps_m) + ") * " +
         std::to_string(k.warp_tile_n) + ";\n";
    s += in + "float cx_acc[" + FM + "][" + FN + "][4];\n";
    s += in + "#pragma unroll\n" + in + "for (int i = 0; i < " + FM + "; ++i)\n";
    s += in + "    #pragma unroll\n" + in + "    for (int j = 0; j < " + FN + "; ++j)\n";
    s += in + "        cx_acc[i][j][0] = cx_acc[i][j][1] = cx_acc[i][j][2] = cx_acc[i][j][3] = "
              "0.0f;\n";
    const unsigned cpk = k.k_step * eb / 16; // 16-byte chunks per k-step (2)
    const bool scalar_a = k.tf32 && k.a.major == operand_major::mn;
    const bool scalar_b = k.tf32 && k.b.major == operand_major::mn;
    // Per-lane parts of the ldmatrix addresses (see the table above).
    if (!scalar_a) {
        if (k.a.major == operand_major::k) {
            s += in +
                 "const unsigned cx_a_ld_row = (unsigned)(cx_wm0 + (cx_lane & 7) + "
                 "((cx_lane >> 3) & 1) * 8) * " +
                 u(k.a.row_bytes) + ";\n";
            s += in + "const unsigned cx_a_ld_x = (cx_lane >> 4) ^ (" + swizzle_of_lane(k.a) +
                 ");\n";
        } else {
            s += in + "const unsigned cx_a_ld_row = ((cx_lane & 7) + (cx_lane >> 4) * 8) * " +
                 u(k.a.row_bytes) + ";\n";
            s += in + "const unsigned cx_a_ld_chunk = (unsigned)cx_wm0 * " + u(eb) +
                 " / 16u + ((cx_lane >> 3) & 1);\n";
            s += in + "const unsigned cx_a_ld_sw = " + swizzle_of_lane(k.a) + ";\n";
        }
    }
    if (!scalar_b) {
        if (k.b.major == operand_major::k) {
            s += in +
                 "const unsigned cx_b_ld_row = (unsigned)(cx_wn0 + (cx_lane & 7) + "
                 "(cx_lane >> 4) * 8) * " +
                 u(k.b.row_bytes) + ";\n";
            s += in + "const unsigned cx_b_ld_x = ((cx_lane >> 3) & 1) ^ (" + swizzle_of_lane(k.b) +
                 ");\n";
        } else {
            s += in + "const unsigned cx_b_ld_row = ((cx_lane & 7) + ((cx_lane >> 3) & 1) * 8) * " +
                 u(k.b.row_bytes) + ";\n";
            s += in + "const unsigned cx_b_ld_chunk = (unsigned)cx_wn0 * " + u(eb) +
                 " / 16u + (cx_lane >> 4);\n";
            s += in + "const unsigned cx_b_ld_sw = " + swizzle_of_lane(k.b) + ";\n";
        }
    }
    s += in + "const int cx_g = cx_lane >> 2, cx_t = cx_lane & 3;\n";

    // One stage: tile_k / k_step mma steps (cx_mma_stage in gemm.cuh); the generator writes
    // the fragment loads for the tiles' majors and swizzles.
    std::string& t = r.tile;
    t += in2 + "const unsigned cx_a_st = cx_smem_base + (unsigned)cx_slot * " +
         u(unsigned(k.a.stage_bytes)) + ";\n";
    t += in2 + "const unsigned cx_b_st = cx_smem_base + " +
         u(unsigned(k.config.stages * k.a.stage_bytes)) + " + (unsigned)cx_slot * " +
         u(unsigned(k.b.stage_bytes)) + ";\n";
    // A fragment mi of k-step ks.
    std::string load_a;
    if (scalar_a) {
        load_a = in3 + "const unsigned m = (unsigned)(cx_wm0 + mi * 16 + cx_g);\n" + in3 +
                 "const unsigned kk = (unsigned)(ks * 8 + cx_t);\n" + in3 +
                 "f[0] = cx_lds32(cx_a_st + cx_a_tile_offset(kk, m));\n" + in3 +
                 "f[1] = cx_lds32(cx_a_st + cx_a_tile_offset(kk, m + 8u));\n" + in3 +
                 "f[2] = cx_lds32(cx_a_st + cx_a_tile_offset(kk + 4u, m));\n" + in3 +
                 "f[3] = cx_lds32(cx_a_st + cx_a_tile_offset(kk + 4u, m + 8u));\n";
    } else if (k.a.major == operand_major::k) {
        load_a = in3 + "cx_ldmatrix_x4(f, cx_a_st + cx_a_ld_row + (unsigned)mi * " +
                 u(16 * k.a.row_bytes) + " + ((((unsigned)ks * " + u(cpk) +
                 ") ^ cx_a_ld_x) << 4));\n";
    } else {
        CONFLUX_ASSERT(!k.tf32, "tf32 mn-major tiles are read without ldmatrix");
        load_a = in3 + "cx_ldmatrix_x4_trans(f, cx_a_st + cx_a_ld_row + (unsigned)ks * " +
                 u(k.k_step * k.a.row_bytes) + " + (((cx_a_ld_chunk + (unsigned)mi * " +
                 u(16 * eb / 16) + ") ^ cx_a_ld_sw) << 4));\n";
    }
    // B fragment ni of k-step ks, and (ldmatrix) fragments ni and ni + 1 in one x4 load.
    std::string load_b, load_b_pair;
    const bool paired_b = !scalar_b;
    if (scalar_b) {
        load_b = in3 + "const unsigned n = (unsigned)(cx_wn0 + ni * 8 + cx_g);\n" + in3 +
                 "const unsigned kk = (unsigned)(ks * 8 + cx_t);\n" + in3 +
                 "f[0] = cx_lds32(cx_b_st + cx_b_tile_offset(kk, n));\n" + in3 +
                 "f[1] = cx_lds32(cx_b_st + cx_b_tile_offset(kk + 4u, n));\n";
    } else {
        const bool kmaj = k.b.major == operand_major::k;
        CONFLUX_ASSERT(kmaj || !k.tf32, "tf32 mn-major tiles are read without ldmatrix");
        const std::string address =
            kmaj ? "cx_b_st + cx_b_ld_row + (unsigned)(ni) * " + u(8 * k.b.row_bytes) +
                       " + ((((unsigned)ks * " + u(cpk) + ") ^ cx_b_ld_x) << 4)"
                 : "cx_b_st + cx_b_ld_row + (unsigned)ks * " + u(k.k_step * k.b.row_bytes) +
                       " + (((cx_b_ld_chunk + (unsigned)(ni) * " + u(8 * eb / 16) +
                       ") ^ cx_b_ld_sw) << 4)";
        const std::string trans = kmaj ? "" : "_trans";
        load_b = in3 + "cx_ldmatrix_x2" + trans + "(f, " + address + ");\n";
        load_b_pair = in3 + "cx_ldmatrix_x4" + trans + "(f, " + address + ");\n";
    }
    const std::string kind = k.tf32 ? "2" : c.problem.type == dtype::bf16 ? "1" : "0";
    t += in2 + "cx_mma_stage<" + std::to_string(k.config.tile_k / k.k_step) + ", " + FM + ", " +
         FN + ", " + (paired_b ? "true" : "false") + ", " + kind + ">(cx_acc,\n";
    t += in2 + "    [&](unsigned (&f)[4], int mi, int ks) {\n" + load_a + in2 + "    },\n";
    t += in2 + "    [&](unsigned (&f)[2], int ni, int ks) {\n" + load_b + in2 + "    },\n";
    t += in2 + "    [&](unsigned (&f)[4], int ni, int ks) {\n" + load_b_pair + in2 + "    });\n";

    // c0, c1: row g, columns 2t, 2t + 1; c2, c3: row g + 8.
    r.store = fragment_store(c, store_call, pair_store_call, k.frag_m, k.frag_n, 16,
                             "cx_m0 + cx_wm0", "cx_wn0", "cx_acc[mi][ni][h * 2$E]");
    return r;
}

compute_text simt_compute(const codegen_context& c, const std::string& store_call) {
    const kernel_plan& k = c.plan;
    const std::string FM = std::to_string(k.frag_m), FN = std::to_string(k.frag_n);
    const std::string& acc = c.accumulator;
    const std::string in = "    ", in2 = "        ", in3 = "            ";
    compute_text r;
    std::string& s = r.setup;
    // A warp is 4 x 8 threads; thread (tm, tn) owns rows tm + 4i and columns tn + 8j of the
    // warp's tile, so a warp's stores cover 8 adjacent columns.
    s += in + "const int cx_wm0 = (cx_warp % " + std::to_string(k.config.warps_m) + ") * " +
         std::to_string(k.warp_tile_m) + " + (cx_lane >> 3);\n";
    s += in + "const int cx_wn0 = (cx_warp / " + std::to_string(k.config.warps_m) + ") * " +
         std::to_string(k.warp_tile_n) + " + (cx_lane & 7);\n";
    s += in + acc + " cx_acc[" + FM + "][" + FN + "];\n";
    s += in + "#pragma unroll\n" + in + "for (int i = 0; i < " + FM + "; ++i)\n";
    s += in + "    #pragma unroll\n" + in + "    for (int j = 0; j < " + FN +
         "; ++j) cx_acc[i][j] = 0;\n";

    std::string& t = r.tile;
    t += in2 + "const unsigned char* cx_a_st = cx_smem + (unsigned)cx_slot * " +
         u(unsigned(k.a.stage_bytes)) + ";\n";
    t += in2 + "const unsigned char* cx_b_st = cx_smem + " +
         u(unsigned(k.config.stages * k.a.stage_bytes)) + " + (unsigned)cx_slot * " +
         u(unsigned(k.b.stage_bytes)) + ";\n";
    auto at = [&](const char* op, const tile_plan& tp, const std::string& row,
                  const std::string& depth) {
        const std::string o = tp.major == operand_major::k ? row : depth;
        const std::string i = tp.major == operand_major::k ? depth : row;
        return "cx_load(reinterpret_cast<const " + c.storage + "*>(cx_" + op + "_st + cx_" + op +
               "_tile_offset(" + o + ", " + i + ")))";
    };
    // The stage's depths (cx_simt_stage in gemm.cuh) and the walk over the accumulators
    // (cx_simt_store).
    t += in2 + "cx_simt_stage<" + std::to_string(k.config.tile_k) + ", " + FM + ", " + FN +
         ">(cx_acc,\n";
    t += in2 + "    [&](int i, int kk) { return " +
         at("a", k.a, "(unsigned)(cx_wm0 + i * 4)", "(unsigned)kk") + "; },\n";
    t += in2 + "    [&](int j, int kk) { return " +
         at("b", k.b, "(unsigned)(cx_wn0 + j * 8)", "(unsigned)kk") + "; });\n";

    const std::string& off = c.offset_type;
    r.store = in + "cx_simt_store<" + FM + ", " + FN + ">(cx_acc, (" + off +
              ")(cx_m0 + cx_wm0), (" + off + ")(cx_n0 + cx_wn0), (" + off + ")" +
              text::integer_literal(c.problem.m) + ", (" + off + ")" +
              text::integer_literal(c.problem.n) + ",\n" + in + "    [&](" + off + " m, " + off +
              " n, " + acc + " cx_v) { " + fill_store_format(store_call, "cx_v", "m", "n") +
              " });\n";
    return r;
}

} // namespace

std::string fill_store_format(const std::string& format, const std::string& v, const std::string& m,
                              const std::string& n) {
    std::string s = format;
    for (const auto& [placeholder, value] :
         {std::pair<const char*, const std::string&>{"$V", v}, {"$M", m}, {"$N", n}}) {
        CONFLUX_ASSERT(s.find(placeholder) != std::string::npos, "store format without ",
                       placeholder, ": ", format);
        s = replace_all(std::move(s), placeholder, value);
    }
    return s;
}

std::string fragment_store(const codegen_context& c, const std::string& store_call,
                           const std::string& pair_store_call, unsigned frag_m, unsigned frag_n,
                           unsigned row_step, const std::string& row0, const std::string& col0,
                           const std::string& value) {
    const std::string in = "    ";
    const std::string& off = c.offset_type;
    const bool paired = !pair_store_call.empty() && c.problem.n % 2 == 0;
    std::string st;
    st += in + "cx_gemm_fragment_store<" + std::to_string(frag_m) + ", " + std::to_string(frag_n) +
          ", " + std::to_string(row_step) + ", " + (paired ? "true" : "false") + ">((" + off +
          ")(" + row0 + "), (" + off + ")(cx_n0 + " + col0 + "), cx_g, cx_t, (" + off + ")" +
          text::integer_literal(c.problem.m) + ", (" + off + ")" +
          text::integer_literal(c.problem.n) + ",\n";
    st += in + "    [&](int mi, int ni, int h, int e) { return " +
          replace_all(value, "$E", " + e") + "; },\n";
    st += in + "    [&](" + off + " m, " + off + " n, float cx_v) { " +
          fill_store_format(store_call, "cx_v", "m", "n") + " },\n";
    st +=
        in + "    [&](" + off + " m, " + off + " n, float cx_v0, float cx_v1) { " +
        (paired ? fill_store_format(replace_all(pair_store_call, "$W", "cx_v1"), "cx_v0", "m", "n")
                : std::string()) +
        " });\n";
    return st;
}

compute_text warp_compute(const codegen_context& c, const std::string& store_call,
                          const std::string& pair_store_call) {
    if (c.plan.wgmma) return wgmma_compute(c, store_call, pair_store_call);
    return c.plan.mma ? mma_compute(c, store_call, pair_store_call) : simt_compute(c, store_call);
}

} // namespace conflux::cuda::gemm
