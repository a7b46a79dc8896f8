// The warpgroups' part of a _wgmma kernel (kernels/wgmma.cuh): each stage's tiles multiplied
// by wgmma.mma_async straight from shared memory (cx_wgmma_stage, instantiated with the tile
// plans' swizzle widths and regions), and the walk over the accumulators.
//
// Warp w belongs to warpgroup w / 4, which owns rows (group % groups_m) * group_tile_m and
// columns (group / groups_m) * group_tile_n of the block's tile; it issues frag_m m64 x
// group_tile_n x k16 instructions per k-step.
#include "cuda/codegen/gemm/gemm_codegen.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/wgmma_text.hpp"

namespace conflux::cuda::gemm {

namespace {

std::string u(std::size_t v) {
    return std::to_string(v) + "u";
}

} // namespace

compute_text wgmma_compute(const codegen_context& c, const std::string& store_call,
                           const std::string& pair_store_call) {
    const kernel_plan& k = c.plan;
    CONFLUX_ASSERT(k.wgmma, "wgmma_compute for a config without _wgmma");
    const unsigned eb = k.element_bytes;
    const unsigned regs = k.group_tile_n / 2;
    const std::string FM = std::to_string(k.frag_m), R = std::to_string(regs);
    const std::string in = "    ", in2 = "        ";
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
    auto plan_args = [&](const tile_plan& tp) {
        return std::string(tp.major == operand_major::k ? "true" : "false") + ", " +
               u(tp.block_bytes) + ", " + u(std::size_t(tp.outer) * tp.block_bytes);
    };
    t += in2 + "cx_wgmma_stage<" + u(k.config.tile_k) + ", " + u(k.frag_m) + ", " + plan_args(k.a) +
         ", " + plan_args(k.b) + ", " + u(eb) +
         ">(cx_a_st, cx_b_st, cx_gm0, cx_gn0, [&](unsigned mi, unsigned long long cx_ad, "
         "unsigned long long cx_bd) { cx_wgmma_tile(cx_acc[mi], cx_ad, cx_bd); });\n";
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
