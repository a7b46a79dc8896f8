#include "compare.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>

namespace conflux::conformance {

namespace {

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

std::string index_string(const shape& s, std::size_t i) {
    return "[" + to_string(s.as_standard().multi_index(i)) + "]";
}

std::optional<std::string> compare_exact(const argument& expected, const argument& actual) {
    auto e = to_vector<std::int64_t>(expected);
    auto a = to_vector<std::int64_t>(actual);
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < e.size(); ++i) {
        if (e[i] == a[i]) continue;
        if (bad++ == 0) first = i;
    }
    if (bad == 0) return std::nullopt;
    std::ostringstream os;
    os << bad << " of " << e.size() << " values differ; first at "
       << index_string(expected.get_shape(), first) << ": got " << a[first] << ", expected "
       << e[first];
    return os.str();
}

std::optional<std::string> compare_close(const argument& expected, const argument& actual,
                                         tolerance tol) {
    auto e = to_vector<double>(expected);
    auto a = to_vector<double>(actual);
    std::size_t bad = 0;
    // The element to report: a NaN or infinity mismatch first, else the largest error relative
    // to its allowance.
    std::size_t worst = 0;
    double worst_ratio = -1;
    for (std::size_t i = 0; i < e.size(); ++i) {
        double ratio;
        if (std::isnan(e[i]) || std::isnan(a[i])) {
            if (std::isnan(e[i]) && std::isnan(a[i])) continue;
            ratio = HUGE_VAL;
        } else if (std::isinf(e[i]) || std::isinf(a[i])) {
            if (e[i] == a[i]) continue;
            ratio = HUGE_VAL;
        } else {
            double diff = std::fabs(a[i] - e[i]);
            double allowed = tol.atol + tol.rtol * std::fabs(e[i]);
            if (diff <= allowed) continue;
            ratio = allowed > 0 ? diff / allowed : HUGE_VAL;
        }
        ++bad;
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    if (bad == 0) return std::nullopt;
    std::ostringstream os;
    os << bad << " of " << e.size() << " values differ; worst at "
       << index_string(expected.get_shape(), worst) << ": got " << number(a[worst]) << ", expected "
       << number(e[worst]) << " (atol " << tol.atol << ", rtol " << tol.rtol << ")";
    return os.str();
}

} // namespace

tolerance default_tolerance(dtype t) {
    switch (t) {
    case dtype::f32:
        return {1e-5, 1e-3};
    case dtype::f16:
        return {1e-3, 5e-3};
    case dtype::bf16:
        return {1e-2, 2e-2};
    case dtype::f64:
        return {1e-9, 1e-7};
    default:
        return {0, 0};
    }
}

std::optional<std::string> compare(const argument& expected, const argument& actual) {
    return compare(expected, actual, default_tolerance(expected.get_shape().type()));
}

std::optional<std::string> compare(const argument& expected, const argument& actual,
                                   tolerance tol) {
    const shape& es = expected.get_shape();
    const shape& as = actual.get_shape();
    if (es.type() != as.type() || es.lens() != as.lens())
        return "got " + to_string(as.as_standard()) + ", expected " + to_string(es.as_standard());
    if (is_floating(es.type())) return compare_close(expected, actual, tol);
    return compare_exact(expected, actual);
}

} // namespace conflux::conformance
