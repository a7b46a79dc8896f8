#include "conflux/ops/reduce.hpp"

#include "ops/attribute_reader.hpp"

#include <cmath>
#include <limits>
#include <type_traits>

#include "op_helpers.hpp"
#include "wrapping_arithmetic.hpp"

namespace conflux::op {

namespace {

// Integer accumulation wraps like the storage types do instead of being undefined on overflow
// (wrapping_arithmetic.hpp).
template <class C> C magnitude(C a) {
    if constexpr (std::is_integral_v<C>)
        return a < 0 ? wrap_neg(a) : a;
    else
        return std::fabs(a);
}

// NaN wins, as in numpy, so that a NaN anywhere in the reduced set is never hidden.
template <class C> C take_max(C a, C b) {
    return (b > a || b != b) ? b : a;
}
template <class C> C take_min(C a, C b) {
    return (b < a || b != b) ? b : a;
}

// The ONNX identity of max/min over an empty set: -inf/+inf where the type has them, otherwise
// the storage type's extreme (i8 gives -128, not the compute type's INT64_MIN).
template <class C> C extreme_of(dtype t, bool lowest) {
    if constexpr (std::is_floating_point_v<C>) {
        return lowest ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
    } else {
        return visit_storage(t, [&](auto tag) -> C {
            using S = typename decltype(tag)::type;
            if constexpr (std::is_integral_v<S>)
                return C(lowest ? std::numeric_limits<S>::lowest() : std::numeric_limits<S>::max());
            else
                return C(0);
        });
    }
}

// A standard-layout tensor seen as runs of consecutive axes that are all kept or all reduced
// (axes of len 1 dropped). Each run has the stride its index contributes to the output offset
// (0 for reduced runs), so one odometer over the runs walks input and output together without a
// multi-index per element.
struct run {
    std::size_t len;
    std::size_t out_stride;
};

struct reduce_plan {
    std::vector<run> runs;
    std::size_t in_elements = 0;
    std::size_t out_elements = 0;
    std::size_t count = 0; // elements per output
};

reduce_plan make_plan(const dims& lens, const std::vector<bool>& reduced) {
    reduce_plan p;
    p.in_elements = product(lens, 0, lens.size());
    p.out_elements = 1;
    p.count = 1;
    for (std::size_t i = 0; i < lens.size(); ++i)
        (reduced[i] ? p.count : p.out_elements) *= lens[i];
    std::vector<bool> run_reduced;
    for (std::size_t i = 0; i < lens.size(); ++i) {
        if (lens[i] == 1) continue;
        if (!p.runs.empty() && run_reduced.back() == reduced[i]) {
            p.runs.back().len *= lens[i];
        } else {
            p.runs.push_back({lens[i], 0});
            run_reduced.push_back(reduced[i]);
        }
    }
    std::size_t stride = 1;
    for (std::size_t r = p.runs.size(); r-- > 0;) {
        if (run_reduced[r]) continue;
        p.runs[r].out_stride = stride;
        stride *= p.runs[r].len;
    }
    return p;
}

// Calls f(in_offset, out_offset, len, out_step) once per innermost run: input elements
// [in_offset, in_offset + len) map to output offsets out_offset + i * out_step.
template <class F> void walk(const reduce_plan& p, F&& f) {
    if (p.in_elements == 0) return;
    if (p.runs.empty()) {
        f(std::size_t{0}, std::size_t{0}, std::size_t{1}, std::size_t{0});
        return;
    }
    const run& last = p.runs.back();
    std::size_t outer = p.runs.size() - 1;
    std::vector<std::size_t> count(outer, 0);
    std::size_t in = 0;
    std::size_t out = 0;
    for (;;) {
        f(in, out, last.len, last.out_stride);
        in += last.len;
        std::size_t k = outer;
        for (; k > 0; --k) {
            const run& r = p.runs[k - 1];
            out += r.out_stride;
            if (++count[k - 1] < r.len) break;
            out -= r.out_stride * r.len;
            count[k - 1] = 0;
        }
        if (k == 0) return;
    }
}

template <class C, class Map, class Combine>
std::vector<C> accumulate(const std::vector<C>& x, const reduce_plan& p, C identity, Map map,
                          Combine combine) {
    std::vector<C> acc(p.out_elements, identity);
    walk(p, [&](std::size_t in, std::size_t out, std::size_t len, std::size_t step) {
        const C* src = x.data() + in;
        if (step == 0) {
            C a = acc[out];
            for (std::size_t i = 0; i < len; ++i)
                a = combine(a, map(src[i]));
            acc[out] = a;
        } else {
            C* dst = acc.data() + out;
            for (std::size_t i = 0; i < len; ++i)
                dst[i] = combine(dst[i], map(src[i]));
        }
    });
    return acc;
}

template <class C>
std::vector<C> reduce_values(const std::vector<C>& x, const reduce_plan& p, reduce_kind kind,
                             dtype type) {
    auto same = [](C v) { return v; };
    auto square = [](C v) { return wrap_mul(v, v); };
    auto plus = [](C a, C b) { return wrap_add(a, b); };
    auto larger = [](C a, C b) { return take_max(a, b); };
    auto smaller = [](C a, C b) { return take_min(a, b); };
    auto absolute = [](C v) { return magnitude(v); };
    // Integer finishing steps (sqrt, log) go through double and truncate, as numpy's float
    // result cast back to the integer type does; integer division truncates the mean alike.
    auto finish = [](std::vector<C>& v, auto fn) {
        for (auto& e : v)
            e = convert_value<C>(fn(static_cast<double>(e)));
    };
    switch (kind) {
    case reduce_kind::sum:
        return accumulate<C>(x, p, C(0), same, plus);
    case reduce_kind::mean: {
        auto r = accumulate<C>(x, p, C(0), same, plus);
        if constexpr (std::is_floating_point_v<C>) {
            // An empty set gives 0/0 = NaN, as numpy's mean does.
            for (auto& e : r)
                e /= C(p.count);
        } else if (p.count != 0) {
            for (auto& e : r)
                e /= C(p.count);
        }
        return r;
    }
    case reduce_kind::max:
        return accumulate<C>(x, p, extreme_of<C>(type, true), same, larger);
    case reduce_kind::min:
        return accumulate<C>(x, p, extreme_of<C>(type, false), same, smaller);
    case reduce_kind::prod:
        return accumulate<C>(x, p, C(1), same, [](C a, C b) { return wrap_mul(a, b); });
    case reduce_kind::l1:
        return accumulate<C>(x, p, C(0), absolute, plus);
    case reduce_kind::sum_square:
        return accumulate<C>(x, p, C(0), square, plus);
    case reduce_kind::l2: {
        auto r = accumulate<C>(x, p, C(0), square, plus);
        if constexpr (std::is_floating_point_v<C>)
            for (auto& e : r)
                e = std::sqrt(e);
        else
            finish(r, [](double v) { return std::sqrt(v); });
        return r;
    }
    case reduce_kind::log_sum: {
        auto r = accumulate<C>(x, p, C(0), same, plus);
        if constexpr (std::is_floating_point_v<C>)
            for (auto& e : r)
                e = std::log(e);
        else
            finish(r, [](double v) { return std::log(v); });
        return r;
    }
    case reduce_kind::log_sum_exp: {
        if constexpr (std::is_floating_point_v<C>) {
            // Shift by the max so that exp cannot overflow; an infinite or empty max (all -inf,
            // or +inf present) is not a usable shift and the unshifted form gives the right
            // -inf/+inf.
            auto shift = accumulate<C>(x, p, -std::numeric_limits<C>::infinity(), same, larger);
            for (auto& s : shift)
                if (!std::isfinite(s) && s == s) s = C(0);
            std::vector<C> sum(p.out_elements, C(0));
            walk(p, [&](std::size_t in, std::size_t out, std::size_t len, std::size_t step) {
                for (std::size_t i = 0; i < len; ++i)
                    sum[out + i * step] += std::exp(x[in + i] - shift[out + i * step]);
            });
            for (std::size_t o = 0; o < sum.size(); ++o)
                sum[o] = std::log(sum[o]) + shift[o];
            return sum;
        } else {
            throw_internal_error("reduce_log_sum_exp is evaluated in floating point");
        }
    }
    }
    throw_internal_error("unknown reduce kind ", int(kind));
}

} // namespace

std::string_view reduce_kind_name(reduce_kind k) {
    switch (k) {
    case reduce_kind::sum:
        return "sum";
    case reduce_kind::mean:
        return "mean";
    case reduce_kind::max:
        return "max";
    case reduce_kind::min:
        return "min";
    case reduce_kind::prod:
        return "prod";
    case reduce_kind::l1:
        return "l1";
    case reduce_kind::l2:
        return "l2";
    case reduce_kind::log_sum:
        return "log_sum";
    case reduce_kind::log_sum_exp:
        return "log_sum_exp";
    case reduce_kind::sum_square:
        return "sum_square";
    }
    return "?";
}

// ---- reduce ----

std::string reduce::name() const {
    return "reduce_" + std::string(reduce_kind_name(kind));
}

nlohmann::json reduce::attributes() const {
    return {{"axes", axes}, {"keepdims", keepdims}, {"noop_with_empty_axes", noop_with_empty_axes}};
}

reduce reduce::from_attributes(reduce_kind kind, const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.kind = kind,
            .axes = r.integers("axes"),
            .keepdims = r.flag("keepdims"),
            .noop_with_empty_axes = r.flag("noop_with_empty_axes")};
}

shape reduce::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    const shape& s = in[0];
    for (std::size_t i = 0; i < axes.size(); ++i) {
        check_axis(name(), axes[i], s.rank());
        CONFLUX_USER_CHECK(i == 0 || axes[i - 1] < axes[i], name(),
                           ": axes must be sorted and unique, got ", nlohmann::json(axes).dump());
    }
    if (axes.empty() && noop_with_empty_axes) return s.as_standard();
    std::vector<bool> reduced(s.rank(), axes.empty());
    for (auto a : axes)
        reduced[std::size_t(a)] = true;
    dims lens;
    for (std::size_t i = 0; i < s.rank(); ++i) {
        if (!reduced[i])
            lens.push_back(s.lens()[i]);
        else if (keepdims)
            lens.push_back(1);
    }
    return {s.type(), lens};
}

argument reduce::eval(const shape& out, const std::vector<argument>& in) const {
    const argument& x = in.at(0);
    const shape& s = x.get_shape();
    bool noop = axes.empty() && noop_with_empty_axes;
    std::vector<bool> reduced(s.rank(), axes.empty());
    for (auto a : axes)
        reduced.at(std::size_t(a)) = true;
    reduce_plan plan = make_plan(s.lens(), reduced);
    return visit_compute(s.type(), [&](auto tag) -> argument {
        using C = typename decltype(tag)::type;
        if (noop) return from_vector<C>(out.type(), out.lens(), to_vector<C>(x));
        if (std::is_integral_v<C> && kind == reduce_kind::log_sum_exp)
            return from_vector<double>(
                out.type(), out.lens(),
                reduce_values<double>(to_vector<double>(x), plan, kind, s.type()));
        return from_vector<C>(out.type(), out.lens(),
                              reduce_values<C>(to_vector<C>(x), plan, kind, s.type()));
    });
}

// ---- softmax ----

softmax softmax::from_attributes(bool log, const nlohmann::json& a) {
    return {.axis = attribute_reader(a).integer("axis"), .log = log};
}

shape softmax::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    const shape& s = in[0];
    check_axis(name(), axis, s.rank());
    CONFLUX_USER_CHECK(is_floating(s.type()), name(), ": expects a floating-point input, got ",
                       to_string(s.type()));
    return s.as_standard();
}

argument softmax::eval(const shape& out, const std::vector<argument>& in) const {
    const argument& x_arg = in.at(0);
    const dims& lens = x_arg.get_shape().lens();
    auto ax = std::size_t(axis);
    std::size_t outer = product(lens, 0, ax);
    std::size_t n = lens.at(ax);
    std::size_t inner = product(lens, ax + 1, lens.size());
    return visit_compute(x_arg.get_shape().type(), [&](auto tag) -> argument {
        using C = typename decltype(tag)::type;
        if constexpr (!std::is_floating_point_v<C>) {
            throw_internal_error(name(), ": integer input reached eval");
        } else {
            auto x = to_vector<C>(x_arg);
            std::vector<C> y(x.size());
            // Rows along the axis are strided by `inner`; keeping `inner` running maxima and sums
            // lets every pass read memory in order.
            std::vector<C> mx(inner);
            std::vector<C> sum(inner);
            for (std::size_t o = 0; o < outer; ++o) {
                std::size_t base = o * n * inner;
                std::fill(mx.begin(), mx.end(), -std::numeric_limits<C>::infinity());
                std::fill(sum.begin(), sum.end(), C(0));
                for (std::size_t k = 0; k < n; ++k)
                    for (std::size_t i = 0; i < inner; ++i)
                        mx[i] = take_max(mx[i], x[base + k * inner + i]);
                for (std::size_t k = 0; k < n; ++k) {
                    for (std::size_t i = 0; i < inner; ++i) {
                        std::size_t j = base + k * inner + i;
                        C e = std::exp(x[j] - mx[i]);
                        sum[i] += e;
                        y[j] = log ? x[j] - mx[i] : e;
                    }
                }
                if (log)
                    for (auto& v : sum)
                        v = std::log(v);
                for (std::size_t k = 0; k < n; ++k) {
                    for (std::size_t i = 0; i < inner; ++i) {
                        C& v = y[base + k * inner + i];
                        v = log ? v - sum[i] : v / sum[i];
                    }
                }
            }
            return from_vector<C>(out.type(), out.lens(), y);
        }
    });
}

// ---- arg_reduce ----

nlohmann::json arg_reduce::attributes() const {
    return {{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", select_last_index}};
}

arg_reduce arg_reduce::from_attributes(bool max, const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.max = max,
            .axis = r.integer("axis"),
            .keepdims = r.flag("keepdims"),
            .select_last_index = r.flag("select_last_index")};
}

shape arg_reduce::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    const shape& s = in[0];
    check_axis(name(), axis, s.rank());
    auto ax = std::size_t(axis);
    CONFLUX_USER_CHECK(s.lens()[ax] > 0, name(), ": axis ", axis, " of ", to_string(s),
                       " is empty, so there is no index to return");
    dims lens = s.lens();
    if (keepdims)
        lens[ax] = 1;
    else
        lens.erase(lens.begin() + axis);
    return {dtype::i64, lens};
}

argument arg_reduce::eval(const shape& out, const std::vector<argument>& in) const {
    const argument& x_arg = in.at(0);
    const dims& lens = x_arg.get_shape().lens();
    auto ax = std::size_t(axis);
    std::size_t outer = product(lens, 0, ax);
    std::size_t n = lens.at(ax);
    std::size_t inner = product(lens, ax + 1, lens.size());
    std::vector<std::int64_t> result(outer * inner, 0);
    visit_compute(x_arg.get_shape().type(), [&](auto tag) {
        using C = typename decltype(tag)::type;
        auto x = to_vector<C>(x_arg);
        // The first NaN wins (the last one with select_last_index), matching numpy's argmax and
        // argmin on the flipped axis that the ONNX reference uses.
        auto better = [&](C v, C best) {
            if constexpr (std::is_floating_point_v<C>) {
                if (best != best) return select_last_index && v != v;
                if (v != v) return true;
            }
            if (select_last_index) return max ? v >= best : v <= best;
            return max ? v > best : v < best;
        };
        std::vector<C> best(inner);
        for (std::size_t o = 0; o < outer; ++o) {
            std::size_t base = o * n * inner;
            std::int64_t* idx = result.data() + o * inner;
            std::copy_n(x.begin() + std::ptrdiff_t(base), inner, best.begin());
            for (std::size_t k = 1; k < n; ++k) {
                for (std::size_t i = 0; i < inner; ++i) {
                    C v = x[base + k * inner + i];
                    if (better(v, best[i])) {
                        best[i] = v;
                        idx[i] = std::int64_t(k);
                    }
                }
            }
        }
    });
    return from_vector<std::int64_t>(dtype::i64, out.lens(), result);
}

} // namespace conflux::op
