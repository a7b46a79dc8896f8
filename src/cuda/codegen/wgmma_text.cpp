#include "cuda/codegen/wgmma_text.hpp"

#include "conflux/util/errors.hpp"

#include <algorithm>

namespace conflux::cuda {

std::string wgmma_function(const std::string& name, unsigned n, dtype t, wgmma_a a_from,
                           bool trans_b) {
    CONFLUX_ASSERT(t == dtype::f16 || t == dtype::bf16, "wgmma_function for ", to_string(t));
    CONFLUX_ASSERT(n % 8 == 0 && n >= 8 && n <= 256, "wgmma_function with n = ", n);
    const unsigned regs = n / 2;
    const bool registers = a_from == wgmma_a::registers;
    const std::string type = t == dtype::bf16 ? "bf16" : "f16";
    std::string s = "__device__ __forceinline__ void " + name + "(float (&d)[" +
                    std::to_string(regs) + "], " +
                    (registers ? "const unsigned (&a)[4]" : "unsigned long long a") +
                    ", unsigned long long b) {\n"
                    "    asm volatile(\"{\\n\"\n"
                    "        \"wgmma.mma_async.sync.aligned.m64n" +
                    std::to_string(n) + "k16.f32." + type + "." + type + " {\"\n";
    for (unsigned i = 0; i < regs; i += 8) {
        s += "        \"";
        for (unsigned j = i; j < std::min(regs, i + 8); ++j)
            s += "%" + std::to_string(j) + (j + 1 < regs ? ", " : "");
        s += "\"\n";
    }
    // Operands after the accumulators: a (one descriptor or four registers), then b.
    std::string a_operand = "%" + std::to_string(regs);
    unsigned next = regs + 1;
    if (registers) {
        a_operand = "{";
        for (unsigned j = 0; j < 4; ++j)
            a_operand += "%" + std::to_string(regs + j) + (j < 3 ? ", " : "}");
        next = regs + 4;
    }
    // scale-d 1 (accumulate), A and B not negated; the transpose flags (A's only for a
    // descriptor: registers are always K-major).
    const std::string flags = registers
                                  ? std::string(trans_b ? "1" : "0")
                                  : std::string(a_from == wgmma_a::shared_transposed ? "1" : "0") +
                                        ", " + (trans_b ? "1" : "0");
    s += "        \"}, " + a_operand + ", %" + std::to_string(next) + ", 1, 1, 1, " + flags +
         ";\\n\"\n";
    s += "        \"}\\n\"\n        : ";
    for (unsigned j = 0; j < regs; ++j)
        s += std::string(j ? ", " : "") + "\"+f\"(d[" + std::to_string(j) + "])";
    if (registers)
        s += "\n        : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b));\n}\n";
    else
        s += "\n        : \"l\"(a), \"l\"(b));\n}\n";
    return s;
}

} // namespace conflux::cuda
