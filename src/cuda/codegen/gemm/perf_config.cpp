#include "cuda/codegen/gemm/perf_config.hpp"

#include "cuda/codegen/gemm/depthwise_kernel.hpp"
#include "cuda/codegen/gemm/kernel_plan.hpp"

namespace conflux::cuda {

namespace {

// Reads a decimal without leading zeros (and no sign) from the front of s.
bool take_number(std::string_view& s, unsigned& out) {
    std::size_t i = 0;
    unsigned long long v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        v = v * 10 + unsigned(s[i] - '0');
        if (v > (1u << 20)) return false;
        ++i;
    }
    if (i == 0 || (i > 1 && s[0] == '0')) return false;
    out = unsigned(v);
    s.remove_prefix(i);
    return true;
}

bool take(std::string_view& s, std::string_view prefix) {
    if (s.substr(0, prefix.size()) != prefix) return false;
    s.remove_prefix(prefix.size());
    return true;
}

} // namespace

bool arch_has_wgmma(std::string_view arch) {
    return arch == "sm_90" || arch == "sm_90a";
}

std::optional<perf_config> parse_perf_config(std::string_view s) {
    perf_config c;
    if (take(s, "dw_mma_c")) {
        c.family = kernel_family::depthwise;
        c.tensor_cores = true;
        if (!take_number(s, c.block_channels) || !take(s, "_r") || !take_number(s, c.tile_rows) ||
            !take(s, "_w") || !take_number(s, c.tile_cols) || !take(s, "_t") ||
            !take_number(s, c.block_threads))
            return std::nullopt;
        if (take(s, "_p")) c.pipelined = true;
        if (!s.empty()) return std::nullopt;
        return c;
    }
    if (take(s, "dw_c")) {
        c.family = kernel_family::depthwise;
        if (!take_number(s, c.vector) || !take(s, "_o") || !take_number(s, c.outputs))
            return std::nullopt;
        if (take(s, "_r") && (!take_number(s, c.tile_rows) || c.tile_rows == 0))
            return std::nullopt;
        if (!take(s, "_t") || !take_number(s, c.block_threads) || !s.empty()) return std::nullopt;
        return c;
    }
    if (!take_number(s, c.tile_m) || !take(s, "x") || !take_number(s, c.tile_n) || !take(s, "x") ||
        !take_number(s, c.tile_k) || !take(s, "_w") || !take_number(s, c.warps_m) ||
        !take(s, "x") || !take_number(s, c.warps_n) || !take(s, "_s") ||
        !take_number(s, c.stages) || !take(s, "_k") || !take_number(s, c.split_k))
        return std::nullopt;
    if (take(s, "_v") && (!take_number(s, c.vector) || c.vector == 0)) return std::nullopt;
    if (take(s, "_simt"))
        c.simt = true;
    else if (take(s, "_wgmma"))
        c.wgmma = true;
    if (c.wgmma && take(s, "_ws"))
        c.warp_specialised = true;
    else if (c.wgmma && take(s, "_pp"))
        c.warp_specialised = c.ping_pong = true;
    if (c.warp_specialised && take(s, "_tma")) c.tma = true;
    if (!s.empty()) return std::nullopt;
    return c;
}

std::string to_string(const perf_config& c) {
    if (c.is_depthwise() && c.tensor_cores)
        return "dw_mma_c" + std::to_string(c.block_channels) + "_r" + std::to_string(c.tile_rows) +
               "_w" + std::to_string(c.tile_cols) + "_t" + std::to_string(c.block_threads) +
               (c.pipelined ? "_p" : "");
    if (c.is_depthwise())
        return "dw_c" + std::to_string(c.vector) + "_o" + std::to_string(c.outputs) +
               (c.tile_rows != 0 ? "_r" + std::to_string(c.tile_rows) : "") + "_t" +
               std::to_string(c.block_threads);
    std::string s = std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x" +
                    std::to_string(c.tile_k) + "_w" + std::to_string(c.warps_m) + "x" +
                    std::to_string(c.warps_n) + "_s" + std::to_string(c.stages) + "_k" +
                    std::to_string(c.split_k);
    if (c.vector != 0) s += "_v" + std::to_string(c.vector);
    if (c.simt) s += "_simt";
    if (c.wgmma) s += "_wgmma";
    if (c.warp_specialised) s += c.ping_pong ? "_pp" : "_ws";
    if (c.tma) s += "_tma";
    return s;
}

std::size_t shared_bytes(const perf_config& c, const gemm_problem& p) {
    // Computed without the device limit so that an oversized config still reports its need.
    gemm_device_limits unlimited;
    unlimited.shared_per_block = std::size_t(-1);
    if (c.is_depthwise()) {
        const auto plan = make_depthwise_plan(c, p, unlimited, nullptr);
        return plan ? plan->shared_bytes : 0;
    }
    const auto plan = gemm::make_kernel_plan(c, p, unlimited, nullptr);
    return plan ? plan->shared_bytes : 0;
}

bool valid(const perf_config& c, const gemm_problem& p, std::string* why,
           const gemm_device_limits& limits) {
    if (c.is_depthwise()) return make_depthwise_plan(c, p, limits, why).has_value();
    return gemm::make_kernel_plan(c, p, limits, why).has_value();
}

} // namespace conflux::cuda
