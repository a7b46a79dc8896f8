#include "conflux/ops/elementwise.hpp"

#include "ops/attribute_reader.hpp"

#include "conflux/util/parallel_for.hpp"
#include "ops/op_helpers.hpp"
#include "ops/strided_loop.hpp"
#include "ops/wrapping_arithmetic.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <type_traits>

namespace conflux::op {

std::string_view to_string(elementwise_kind k) {
    switch (k) {
#define CONFLUX_CASE(kind, n, a)                                                                   \
    case elementwise_kind::kind:                                                                   \
        return n;
        CONFLUX_ELEMENTWISE_KINDS(CONFLUX_CASE)
#undef CONFLUX_CASE
    }
    return "?";
}

std::optional<elementwise_kind> parse_elementwise_kind(std::string_view name) {
#define CONFLUX_CASE(kind, n, a)                                                                   \
    if (name == n) return elementwise_kind::kind;
    CONFLUX_ELEMENTWISE_KINDS(CONFLUX_CASE)
#undef CONFLUX_CASE
    return std::nullopt;
}

std::size_t arity(elementwise_kind k) {
    switch (k) {
#define CONFLUX_CASE(kind, n, a)                                                                   \
    case elementwise_kind::kind:                                                                   \
        return a;
        CONFLUX_ELEMENTWISE_KINDS(CONFLUX_CASE)
#undef CONFLUX_CASE
    }
    return 0;
}

bool produces_bool(elementwise_kind k) {
    using enum elementwise_kind;
    switch (k) {
    case equal:
    case greater:
    case greater_equal:
    case less:
    case less_equal:
    case logical_and:
    case logical_or:
    case logical_xor:
    case logical_not:
    case isnan:
    case isinf:
        return true;
    default:
        return false;
    }
}

namespace {

bool uses_alpha(elementwise_kind k) {
    using enum elementwise_kind;
    switch (k) {
    case mod:
    case gelu:
    case leaky_relu:
    case elu:
    case selu:
    case celu:
    case hard_sigmoid:
    case thresholded_relu:
    case isinf:
        return true;
    default:
        return false;
    }
}

bool uses_beta(elementwise_kind k) {
    using enum elementwise_kind;
    return k == selu || k == hard_sigmoid || k == isinf;
}

} // namespace

nlohmann::json elementwise::attributes() const {
    // Only meaningful fields are printed, but a stray non-zero value is kept so that two ops
    // that compare unequal never print (and hash) the same.
    auto j = nlohmann::json::object();
    if (uses_alpha(kind) || alpha != 0) j["alpha"] = alpha;
    if (uses_beta(kind) || beta != 0) j["beta"] = beta;
    if (kind == elementwise_kind::convert || target != dtype::f32)
        j["target"] = std::string(to_string(target));
    return j;
}

elementwise elementwise::from_attributes(elementwise_kind kind, const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.kind = kind,
            .alpha = r.real_or("alpha", 0),
            .beta = r.real_or("beta", 0),
            .target = r.has("target") ? r.type("target") : dtype::f32};
}

shape elementwise_output_shape(const shape& first, dtype out_type) {
    if (!first.standard() && first.packed()) return {out_type, first.lens(), first.strides()};
    return {out_type, first.lens()};
}

shape elementwise::compute_shape(const std::vector<shape>& in) const {
    const std::string op = name();
    check_input_count(op, in, arity(kind));
    for (std::size_t i = 1; i < in.size(); ++i)
        CONFLUX_USER_CHECK(in[i].lens() == in[0].lens(), op, ": input ", i, " has lens [",
                           conflux::to_string(in[i].lens()), "] but input 0 has [",
                           conflux::to_string(in[0].lens()), "]");
    // where's condition is the only input whose dtype differs from the values'.
    const std::size_t first_value = kind == elementwise_kind::where ? 1 : 0;
    if (kind == elementwise_kind::where)
        CONFLUX_USER_CHECK(in[0].type() == dtype::boolean, op, ": condition must be bool, got ",
                           to_string(in[0].type()));
    const dtype value_type = in[first_value].type();
    for (std::size_t i = first_value + 1; i < in.size(); ++i)
        CONFLUX_USER_CHECK(in[i].type() == value_type, op, ": input ", i, " is ",
                           to_string(in[i].type()), " but input ", first_value, " is ",
                           to_string(value_type));
    dtype out_type = value_type;
    if (produces_bool(kind)) out_type = dtype::boolean;
    if (kind == elementwise_kind::convert) out_type = target;
    return elementwise_output_shape(in[0], out_type);
}

namespace {

// Elements per block: each input block is gathered into a small buffer of the compute type,
// the kernel runs over plain arrays (so it vectorises), and the result is scattered back.
// Gather/scatter then instantiate per (storage, compute) type pair and kernels per (kind,
// compute type), instead of the product of all three.
constexpr std::size_t block_size = 1024;
// Blocks per parallel task: small tensors stay on the calling thread.
constexpr std::size_t blocks_per_task = 64;

template <class S, class C>
void gather_typed(const S* base, const detail::loop_space& ls, std::size_t op, std::size_t start,
                  std::size_t n, C* dst) {
    detail::for_each_run(
        ls, op, start, n,
        [&](std::size_t offset, std::size_t done, std::size_t count, std::size_t stride) {
            const S* src = base + offset;
            C* d = dst + done;
            if (stride == 1) {
                for (std::size_t j = 0; j < count; ++j)
                    d[j] = convert_value<C>(src[j]);
            } else if (stride == 0) {
                std::fill_n(d, count, convert_value<C>(*src));
            } else {
                for (std::size_t j = 0; j < count; ++j)
                    d[j] = convert_value<C>(src[j * stride]);
            }
        });
}

template <class C>
void gather(const argument& a, const detail::loop_space& ls, std::size_t op, std::size_t start,
            std::size_t n, C* dst) {
    visit_storage(a.get_shape().type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        gather_typed<S, C>(a.typed<S>(), ls, op, start, n, dst);
    });
}

template <class R>
void scatter(const argument& a, const detail::loop_space& ls, std::size_t op, std::size_t start,
             std::size_t n, const R* src) {
    visit_storage(a.get_shape().type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        S* base = a.typed<S>();
        detail::for_each_run(
            ls, op, start, n,
            [&](std::size_t offset, std::size_t done, std::size_t count, std::size_t stride) {
                S* d = base + offset;
                const R* s = src + done;
                if (stride == 1) {
                    for (std::size_t j = 0; j < count; ++j)
                        d[j] = convert_value<S>(s[j]);
                } else {
                    for (std::size_t j = 0; j < count; ++j)
                        d[j * stride] = convert_value<S>(s[j]);
                }
            });
    });
}

// Runs f over every element: C is the compute type of the inputs, R the type f returns.
template <class C, class R, std::size_t N, class F>
void run(const std::vector<argument>& in, const argument& out, const detail::loop_space& ls, F f) {
    const std::size_t total = ls.elements;
    const std::size_t blocks = (total + block_size - 1) / block_size;
    parallel_for(
        blocks,
        [&](std::size_t b0, std::size_t b1) {
            std::array<std::array<C, block_size>, N> args;
            std::array<R, block_size> res;
            for (std::size_t b = b0; b < b1; ++b) {
                const std::size_t start = b * block_size;
                const std::size_t n = std::min(block_size, total - start);
                for (std::size_t k = 0; k < N; ++k)
                    gather<C>(in[k], ls, k, start, n, args[k].data());
                for (std::size_t j = 0; j < n; ++j) {
                    if constexpr (N == 1)
                        res[j] = f(args[0][j]);
                    else if constexpr (N == 2)
                        res[j] = f(args[0][j], args[1][j]);
                    else
                        res[j] = f(args[0][j], args[1][j], args[2][j]);
                }
                scatter<R>(out, ls, N, start, n, res.data());
            }
        },
        blocks_per_task);
}

template <class C> C divide(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
        // x/0 and INT64_MIN/-1 trap on the CPU; give them defined (if arbitrary) results.
        if (b == 0) return 0;
        if (b == -1) return wrap_neg(a);
    }
    return a / b;
}

template <class C> C modulo(C a, C b, bool c_fmod) {
    C r;
    if constexpr (std::is_integral_v<C>) {
        if (b == 0 || b == -1) return 0;
        r = a % b;
    } else {
        r = std::fmod(a, b);
    }
    if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

template <class C> C power(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
        if (b < 0) {
            if (a == 1) return 1;
            if (a == -1) return (b & 1) ? -1 : 1;
            return 0; // 1 / a^|b| truncates to zero
        }
        std::uint64_t result = 1, base = std::uint64_t(a);
        for (auto e = std::uint64_t(b); e != 0; e >>= 1) {
            if (e & 1) result *= base;
            base *= base;
        }
        return C(result);
    } else {
        return std::pow(a, b);
    }
}

// Floating-point functions on integer inputs go through double and truncate back.
template <class C, class F> C fmath(C x, F f) {
    if constexpr (std::is_integral_v<C>)
        return convert_value<C>(f(double(x)));
    else
        return f(x);
}

template <class C> C round_half_even(C x) {
    if constexpr (std::is_integral_v<C>) {
        return x;
    } else {
        // Explicit so the result never depends on the process's floating-point rounding mode.
        C f = std::floor(x);
        C d = x - f;
        if (d < C(0.5)) return f;
        if (d > C(0.5)) return f + 1;
        return std::fmod(f, C(2)) == 0 ? f : f + 1;
    }
}

template <class C>
void eval_kind(const elementwise& e, const std::vector<argument>& in, const argument& out,
               const detail::loop_space& ls) {
    using enum elementwise_kind;
    constexpr bool integral = std::is_integral_v<C>;
    // Saturating for integers: a float attribute out of an integer type's range (a fuzzer's
    // alpha of 6.6e25 on i64 data) has no value there, and a plain cast of it is undefined.
    const C alpha = convert_value<C>(e.alpha);
    auto unary = [&](auto f) { run<C, C, 1>(in, out, ls, f); };
    auto binary = [&](auto f) { run<C, C, 2>(in, out, ls, f); };
    auto predicate1 = [&](auto f) { run<C, bool, 1>(in, out, ls, f); };
    auto predicate2 = [&](auto f) { run<C, bool, 2>(in, out, ls, f); };
    switch (e.kind) {
    case add:
        return binary([](C a, C b) { return wrap_add(a, b); });
    case sub:
        return binary([](C a, C b) { return wrap_sub(a, b); });
    case mul:
        return binary([](C a, C b) { return wrap_mul(a, b); });
    case div:
        return binary([](C a, C b) { return divide(a, b); });
    case pow:
        return binary([](C a, C b) { return power(a, b); });
    case max:
        // NaN propagates, as numpy's maximum does.
        return binary([](C a, C b) { return (a > b || is_nan(a)) ? a : b; });
    case min:
        return binary([](C a, C b) { return (a < b || is_nan(a)) ? a : b; });
    case mod: {
        const bool c_fmod = e.alpha != 0;
        return binary([c_fmod](C a, C b) { return modulo(a, b, c_fmod); });
    }
    case prelu:
        return binary([](C x, C slope) { return x < 0 ? wrap_mul(slope, x) : x; });
    case equal:
        return predicate2([](C a, C b) { return a == b; });
    case greater:
        return predicate2([](C a, C b) { return a > b; });
    case greater_equal:
        return predicate2([](C a, C b) { return a >= b; });
    case less:
        return predicate2([](C a, C b) { return a < b; });
    case less_equal:
        return predicate2([](C a, C b) { return a <= b; });
    case logical_and:
        return predicate2([](C a, C b) { return a != 0 && b != 0; });
    case logical_or:
        return predicate2([](C a, C b) { return a != 0 || b != 0; });
    case logical_xor:
        return predicate2([](C a, C b) { return (a != 0) != (b != 0); });
    case where:
        return run<C, C, 3>(in, out, ls, [](C c, C a, C b) { return c != 0 ? a : b; });
    case clip:
        // max then min, so lo > hi gives hi everywhere (ONNX) and NaN stays NaN.
        return run<C, C, 3>(in, out, ls, [](C x, C lo, C hi) {
            C y = x < lo ? lo : x;
            return y > hi ? hi : y;
        });
    case neg:
        return unary([](C x) { return wrap_neg(x); });
    case abs:
        return unary([](C x) { return x < 0 ? wrap_neg(x) : x; });
    case exp:
        return unary([](C x) { return fmath(x, [](auto v) { return std::exp(v); }); });
    case log:
        return unary([](C x) { return fmath(x, [](auto v) { return std::log(v); }); });
    case sqrt:
        return unary([](C x) { return fmath(x, [](auto v) { return std::sqrt(v); }); });
    case reciprocal:
        return unary([](C x) { return fmath(x, [](auto v) { return 1 / v; }); });
    case erf:
        return unary([](C x) { return fmath(x, [](auto v) { return std::erf(v); }); });
    case gelu:
        // In one piece, as the kernels compute it: the exporters' five ops (div, erf, add, mul,
        // mul) would round to f16 after each.
        if (alpha != 0)
            return unary([](C x) {
                return fmath(x, [](auto v) {
                    using T = decltype(v);
                    const T inner = T(0.7978845608028654) * (v + T(0.044715) * v * v * v);
                    return T(0.5) * v * (T(1) + std::tanh(inner));
                });
            });
        return unary([](C x) {
            return fmath(x, [](auto v) {
                using T = decltype(v);
                return T(0.5) * v * (T(1) + std::erf(v * T(0.7071067811865476)));
            });
        });
    case tanh:
        return unary([](C x) { return fmath(x, [](auto v) { return std::tanh(v); }); });
    case sigmoid:
        return unary([](C x) {
            return fmath(x, [](auto v) {
                using T = decltype(v);
                // exp of a non-positive argument only, so neither branch overflows.
                if (v >= 0) return T(1) / (T(1) + std::exp(-v));
                T ev = std::exp(v);
                return ev / (T(1) + ev);
            });
        });
    case relu:
        return unary([](C x) { return x < 0 ? C(0) : x; });
    case leaky_relu:
        return unary([alpha](C x) { return x < 0 ? wrap_mul(alpha, x) : x; });
    case elu:
        return unary([a = e.alpha](C x) {
            return fmath(x, [a](auto v) {
                using T = decltype(v);
                return v < 0 ? T(a) * std::expm1(v) : v;
            });
        });
    case selu:
        return unary([a = e.alpha, g = e.beta](C x) {
            return fmath(x, [a, g](auto v) {
                using T = decltype(v);
                return v > 0 ? T(g) * v : T(g) * (T(a) * std::exp(v) - T(a));
            });
        });
    case celu:
        return unary([a = e.alpha](C x) {
            return fmath(x, [a](auto v) {
                using T = decltype(v);
                return v > 0 ? v : T(a) * std::expm1(v / T(a));
            });
        });
    case hard_sigmoid:
        return unary([a = e.alpha, b = e.beta](C x) {
            return fmath(x, [a, b](auto v) {
                using T = decltype(v);
                return std::clamp(T(a) * v + T(b), T(0), T(1));
            });
        });
    case hard_swish:
        return unary([](C x) {
            return fmath(x, [](auto v) {
                using T = decltype(v);
                return v * std::clamp(v * (T(1) / T(6)) + T(0.5), T(0), T(1));
            });
        });
    case softplus:
        return unary([](C x) {
            return fmath(x, [](auto v) {
                // log(1 + e^v) without overflowing e^v for large v.
                return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
            });
        });
    case softsign:
        return unary([](C x) {
            return fmath(x, [](auto v) {
                using T = decltype(v);
                return v / (T(1) + std::abs(v));
            });
        });
    case thresholded_relu:
        return unary([alpha](C x) { return x > alpha ? x : C(0); });
    case floor:
        return unary([](C x) {
            if constexpr (integral)
                return x;
            else
                return std::floor(x);
        });
    case ceil:
        return unary([](C x) {
            if constexpr (integral)
                return x;
            else
                return std::ceil(x);
        });
    case round:
        return unary([](C x) { return round_half_even(x); });
    case sign:
        return unary([](C x) {
            if (x > 0) return C(1);
            if (x < 0) return C(-1);
            return x == 0 ? C(0) : x; // NaN stays NaN
        });
    case logical_not:
        return predicate1([](C x) { return x == 0; });
    case isnan:
        return predicate1([](C x) { return is_nan(x); });
    case isinf:
        return predicate1([pos = e.alpha != 0, neg = e.beta != 0](C x) {
            if constexpr (integral) {
                return false;
            } else {
                return std::isinf(x) && (x > 0 ? pos : neg);
            }
        });
    case sin:
        return unary([](C x) { return fmath(x, [](auto v) { return std::sin(v); }); });
    case cos:
        return unary([](C x) { return fmath(x, [](auto v) { return std::cos(v); }); });
    case tan:
        return unary([](C x) { return fmath(x, [](auto v) { return std::tan(v); }); });
    case asin:
        return unary([](C x) { return fmath(x, [](auto v) { return std::asin(v); }); });
    case acos:
        return unary([](C x) { return fmath(x, [](auto v) { return std::acos(v); }); });
    case atan:
        return unary([](C x) { return fmath(x, [](auto v) { return std::atan(v); }); });
    case sinh:
        return unary([](C x) { return fmath(x, [](auto v) { return std::sinh(v); }); });
    case cosh:
        return unary([](C x) { return fmath(x, [](auto v) { return std::cosh(v); }); });
    case asinh:
        return unary([](C x) { return fmath(x, [](auto v) { return std::asinh(v); }); });
    case acosh:
        return unary([](C x) { return fmath(x, [](auto v) { return std::acosh(v); }); });
    case atanh:
        return unary([](C x) { return fmath(x, [](auto v) { return std::atanh(v); }); });
    case convert:
        // The scatter's storage conversion is the whole operation.
        return unary([](C x) { return x; });
    }
    throw_internal_error("elementwise: unhandled kind ", int(e.kind));
}

} // namespace

argument elementwise::eval(const shape&, const std::vector<argument>& in) const {
    // The layout comes from the actual inputs (a bound parameter may be strided differently from
    // its declaration); it equals compute_shape's whenever the inputs match their shapes.
    std::vector<shape> shapes;
    shapes.reserve(in.size());
    for (const auto& a : in)
        shapes.push_back(a.get_shape());
    argument result{compute_shape(shapes)};
    if (result.get_shape().elements() == 0) return result;

    // Iterate in the output's memory order: when the inputs share its layout (all standard, or
    // all NHWC-strided) the whole tensor collapses into one dense run.
    const shape& out_shape = result.get_shape();
    std::vector<std::size_t> order(out_shape.rank());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return out_shape.strides()[a] > out_shape.strides()[b];
    });
    std::vector<const shape*> operands;
    for (const auto& s : shapes)
        operands.push_back(&s);
    operands.push_back(&out_shape);
    auto ls = detail::make_loop_space(operands, order);

    const dtype value_type = in[kind == elementwise_kind::where ? 1 : 0].get_shape().type();
    visit_compute(value_type, [&](auto tag) {
        eval_kind<typename decltype(tag)::type>(*this, in, result, ls);
    });
    return result;
}

} // namespace conflux::op
