#include "conflux/ir/output_comparison.hpp"
#include <algorithm>

#include <cmath>

namespace conflux {

double verify_tolerance(dtype t) {
    switch (t) {
    case dtype::f32:
        return 1e-3;
    case dtype::f16:
        return 1e-2;
    case dtype::bf16:
        return 2e-2;
    case dtype::f64:
        return 1e-9;
    default:
        return 0;
    }
}

computed_precision dtype_precision(dtype computed_in) {
    return {std::string(to_string(computed_in)), verify_tolerance(computed_in)};
}

computed_precision tf32_precision() {
    return {"tf32", verify_tolerance(dtype::f16)};
}

output_comparison compare_outputs(const argument& got, const argument& want,
                                  const std::optional<computed_precision>& computed_in,
                                  double noise) {
    output_comparison c;
    const dtype t = want.get_shape().type();
    c.tolerance = verify_tolerance(t);
    if (computed_in && is_floating(t)) c.tolerance = std::max(c.tolerance, computed_in->tolerance);
    if (is_floating(t) && std::isfinite(noise)) {
        c.noise = noise;
        c.tolerance = std::max(c.tolerance, noise_margin * noise);
    }
    if (got.get_shape().type() != t || got.get_shape().lens() != want.get_shape().lens()) {
        c.mismatches = want.get_shape().elements();
        return c;
    }
    const auto g = to_vector<double>(got);
    const auto w = to_vector<double>(want);
    double diff2 = 0, ref2 = 0;
    for (std::size_t i = 0; i < w.size(); ++i) {
        const bool same_non_finite =
            !std::isfinite(w[i]) && (std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i]);
        if (same_non_finite) continue;
        if (!std::isfinite(g[i]) || !std::isfinite(w[i])) {
            ++c.non_finite;
            continue;
        }
        const double d = g[i] - w[i];
        diff2 += d * d;
        ref2 += w[i] * w[i];
        c.max_abs_diff = std::max(c.max_abs_diff, std::abs(d));
        if (d != 0) ++c.mismatches;
    }
    const std::size_t n = w.empty() ? 1 : w.size();
    c.relative_rms = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2 / double(n));
    if (is_floating(t))
        c.passed = c.non_finite == 0 && c.relative_rms <= c.tolerance;
    else
        c.passed = c.non_finite == 0 && c.mismatches == 0;
    return c;
}

} // namespace conflux
