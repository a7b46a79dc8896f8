// The warpgroups' part of a _wgmma kernel (kernels/wgmma.cuh): each stage's tiles multiplied
// by wgmma.mma_async straight from shared memory, and the walk over the accumulators.
//
// Warp w belongs to warpgroup w / 4, which owns rows (group % groups_m) * group_tile_m and
// columns (group / groups_m) * group_tile_n of the block's tile; it issues frag_m m64 x
// group_tile_n x k16 instructions per k-step. A descriptor's start is where its 64 rows (A) or
// group_tile_n columns (B) begin at depth 16 ks: for a k-major tile, block (32 ks) / W of the
// row region plus the rest of 32 ks bytes inside the block (the hardware applies the swizzle to
// the address bits, so an offset inside a 1024-byte pattern is read correctly); for an
// m/n-major tile, the block holding the first row of the share plus 16 ks rows of W bytes.
#include "cuda/codegen/gemm/gemm_codegen.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/wgmma_text.hpp"

namespace conflux::cuda::gemm {

namespace {

std::string u(std::size_t v) {
    return std::to_string(v) + "u";
}

// The shared-state-space address (an unsigned expression) of the share starting at tile row
// or column `first` (an unsigned expression) at k-step `ks` of one stage at `stage`.
std::string share_address(const tile_plan& t, unsigned element_bytes, const std::string& stage,
                          const std::string& first, const std::string& ks) {
    const std::string W = u(t.block_bytes);
    const std::string region = u(std::size_t(t.outer) * t.block_bytes);
    if (t.major == operand_major::k) {
        const std::string depth = "(" + ks + ") * " + u(16 * element_bytes);
        return stage + " + " + depth + " / " + W + " * " + region + " + (" + first + ") * " + W +
               " + " + depth + " % " + W;
    }
    const std::string bytes = "(" + first + ") * " + u(element_bytes);
    return stage + " + " + bytes + " / " + W + " * " + region + " + (" + ks + ") * " +
           u(16 * t.block_bytes) + " + " + bytes + " % " + W;
}

// LBO and SBO of a tile's descriptors (wgmma.cuh).
std::string descriptor(const tile_plan& t, const std::string& address) {
    const std::size_t lbo = t.major == operand_major::k ? 16 : std::size_t(t.outer) * t.block_bytes;
    return "cx_wgmma_desc(" + address + ", " + u(lbo) + ", " + u(8 * std::size_t(t.block_bytes)) +
           ", " + u(t.block_bytes) + ")";
}

} // namespace

compute_text wgmma_compute(const codegen_context& c, const std::string& store_call,
                           const std::string& pair_store_call) {
    const kernel_plan& k = c.plan;
    CONFLUX_ASSERT(k.wgmma, "wgmma_compute for a config without _wgmma");
    const unsigned eb = k.element_bytes;
    const unsigned regs = k.group_tile_n / 2;
    const std::string FM = std::to_string(k.frag_m), R = std::to_string(regs);
    const std::string in = "    ", in2 = "        ", in3 = "            ";
    const bool trans_a = k.a.major == operand_major::mn, trans_b = k.b.major == operand_major::mn;
    compute_text r;
    r.functions = wgmma_function("cx_wgmma_tile", k.group_tile_n, c.problem.type,
                                 trans_a ? wgmma_a::shared_transposed : wgmma_a::shared, trans_b);
    std::string& s = r.setup;
    s += in + "const int cx_wgroup = cx_warp >> 2, cx_quarter = cx_warp & 3;\n";
    s += in + "const unsigned cx_gm0 = (unsigned)(cx_wgroup % " + std::to_string(k.groups_m) +
         ") * " + u(k.group_tile_m) + ";\n";
    s += in + "const unsigned cx_gn0 = (unsigned)(cx_wgroup / " + std::to_string(k.groups_m) +
         ") * " + u(k.group_tile_n) + ";\n";
    s += in + "float cx_acc[" + FM + "][" + R + "];\n";
    s += in + "#pragma unroll\n" + in + "for (int i = 0; i < " + FM + "; ++i)\n";
    s += in + "    #pragma unroll\n" + in + "    for (int j = 0; j < " + R +
         "; ++j) cx_acc[i][j] = 0.0f;\n";
    s += in + "const int cx_g = cx_lane >> 2, cx_t = cx_lane & 3;\n";

    // One stage: tile_k / 16 k-steps of frag_m instructions.
    std::string& t = r.tile;
    t += in2 + "const unsigned cx_a_st = cx_smem_base + (unsigned)cx_slot * " + u(k.a.stage_bytes) +
         ";\n";
    t += in2 + "const unsigned cx_b_st = cx_smem_base + " + u(k.config.stages * k.a.stage_bytes) +
         " + (unsigned)cx_slot * " + u(k.b.stage_bytes) + ";\n";
    t += in2 + "cx_wgmma_fence();\n";
    t += in2 + "#pragma unroll\n" + in2 + "for (unsigned ks = 0; ks < " + u(k.config.tile_k / 16) +
         "; ++ks) {\n";
    t += in3 + "const unsigned long long cx_bd = " +
         descriptor(k.b, share_address(k.b, eb, "cx_b_st", "cx_gn0", "ks")) + ";\n";
    t += in3 + "#pragma unroll\n" + in3 + "for (unsigned mi = 0; mi < " + u(k.frag_m) + "; ++mi)\n";
    t += in3 + "    cx_wgmma_tile(cx_acc[mi], " +
         descriptor(k.a, share_address(k.a, eb, "cx_a_st", "cx_gm0 + mi * 64u", "ks")) +
         ", cx_bd);\n";
    t += in2 + "}\n";
    t += in2 + "cx_wgmma_commit();\n";
    // The previous stage's multiply is done after this: the kernel's loop refills its stage
    // only after the next barrier.
    t += in2 + "cx_wgmma_wait<1>();\n";
    r.finish = in + "cx_wgmma_wait<0>();\n";
    // The accumulators are the asm statements' outputs; this keeps the compiler from reading
    // them before the last wait.
    r.finish += in + "#pragma unroll\n" + in + "for (int i = 0; i < " + FM + "; ++i)\n";
    r.finish += in + "    #pragma unroll\n" + in + "    for (int j = 0; j < " + R +
                "; ++j) asm volatile(\"\" : \"+f\"(cx_acc[i][j])::\"memory\");\n";

    // d[4j + 2h + e] = row 16 q + g + 8 h, column 8 j + 2 t + e of the m64 block.
    r.store = fragment_store(c, store_call, pair_store_call, k.frag_m, k.frag_n, 64,
                             "cx_m0 + cx_gm0 + cx_quarter * 16", "cx_gn0",
                             "cx_acc[mi][ni * 4 + h * 2$E]");
    return r;
}

} // namespace conflux::cuda::gemm
