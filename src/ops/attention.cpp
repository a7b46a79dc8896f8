#include "conflux/ops/attention.hpp"

#include "ops/attribute_reader.hpp"

#include "conflux/ops/views.hpp"
#include "conflux/util/errors.hpp"

#include <cmath>
#include <limits>

namespace conflux::op {

nlohmann::json attention::attributes() const {
    nlohmann::json a{{"scale", scale}, {"zero_nan_rows", zero_nan_rows}};
    if (!out_perm.empty()) a["out_perm"] = out_perm;
    return a;
}

attention attention::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.scale = r.real("scale"),
            .zero_nan_rows = r.flag("zero_nan_rows"),
            .out_perm = r.has("out_perm") ? r.integers("out_perm") : std::vector<std::int64_t>{}};
}

shape attention::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 3, 4);
    const shape &q = in[0], &kt = in[1], &v = in[2];
    const std::size_t rank = q.rank();
    CONFLUX_USER_CHECK(rank >= 2 && kt.rank() == rank && v.rank() == rank, name(),
                       ": q, kt and v need one rank >= 2, got ", to_string(q), ", ", to_string(kt),
                       ", ", to_string(v));
    for (const shape* s : {&q, &kt, &v})
        CONFLUX_USER_CHECK(is_floating(s->type()), name(), ": expects floating-point inputs, got ",
                           to_string(*s));
    CONFLUX_USER_CHECK(kt.type() == q.type() && v.type() == q.type(), name(),
                       ": q, kt and v types differ: ", to_string(q), ", ", to_string(kt), ", ",
                       to_string(v));
    const std::size_t sq = q.lens()[rank - 2], d = q.lens()[rank - 1];
    const std::size_t sk = kt.lens()[rank - 1];
    CONFLUX_USER_CHECK(kt.lens()[rank - 2] == d && v.lens()[rank - 2] == sk, name(),
                       ": shapes do not chain: q ", to_string(q), ", kt ", to_string(kt), ", v ",
                       to_string(v));
    dims out(q.lens().begin(), q.lens().end() - 2);
    for (std::size_t i = 0; i + 2 < rank; ++i)
        CONFLUX_USER_CHECK(kt.lens()[i] == out[i] && v.lens()[i] == out[i], name(),
                           ": batch axes differ: q ", to_string(q), ", kt ", to_string(kt), ", v ",
                           to_string(v));
    if (in.size() == 4) {
        const shape& b = in[3];
        dims scores = out;
        scores.push_back(sq);
        scores.push_back(sk);
        CONFLUX_USER_CHECK(b.lens() == scores && is_floating(b.type()), name(),
                           ": bias must be floating with lens of the scores ", to_string(scores),
                           ", got ", to_string(b));
    }
    out.push_back(sq);
    out.push_back(v.lens()[rank - 1]);
    if (out_perm.empty()) return {v.type(), out};
    CONFLUX_USER_CHECK(is_permutation_of(out_perm, rank), name(),
                       ": out_perm is not a permutation of the ", rank, " output axes");
    dims permuted(rank);
    for (std::size_t i = 0; i < rank; ++i)
        permuted[i] = out[static_cast<std::size_t>(out_perm[i])];
    return {v.type(), permuted};
}

shape attention::result_view(const shape& out) const {
    if (out_perm.empty()) return out;
    const std::size_t rank = out.rank();
    dims lens(rank), strides(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        const auto axis = static_cast<std::size_t>(out_perm[i]);
        lens[axis] = out.lens()[i];
        strides[axis] = out.strides()[i];
    }
    return shape{out.type(), lens, strides};
}

argument attention::eval(const shape& out, const std::vector<argument>& in) const {
    const shape& qs = in[0].get_shape();
    const std::size_t rank = qs.rank();
    const std::size_t sq = qs.lens()[rank - 2], d = qs.lens()[rank - 1];
    const std::size_t sk = in[1].get_shape().lens()[rank - 1];
    const std::size_t dv = in[2].get_shape().lens()[rank - 1];
    std::size_t batches = 1;
    for (std::size_t i = 0; i + 2 < rank; ++i)
        batches *= qs.lens()[i];
    return visit_compute(qs.type(), [&](auto tag) -> argument {
        using C = typename decltype(tag)::type;
        if constexpr (!std::is_floating_point_v<C>) {
            throw_internal_error(name(), ": integer input reached eval");
        } else {
            // Row-major copies: q [b][i][d], kt [b][d][j], v [b][j][e], bias [b][i][j].
            const auto q = to_vector<C>(in[0]);
            const auto kt = to_vector<C>(in[1]);
            const auto v = to_vector<C>(in[2]);
            const std::vector<C> bias = in.size() == 4 ? to_vector<C>(in[3]) : std::vector<C>{};
            std::vector<C> y(batches * sq * dv, C(0));
            std::vector<C> s(sk);
            for (std::size_t b = 0; b < batches; ++b)
                for (std::size_t i = 0; i < sq; ++i) {
                    C mx = -std::numeric_limits<C>::infinity();
                    for (std::size_t j = 0; j < sk; ++j) {
                        C acc = 0;
                        for (std::size_t t = 0; t < d; ++t)
                            acc += q[(b * sq + i) * d + t] * kt[(b * d + t) * sk + j];
                        acc = C(scale) * acc;
                        if (!bias.empty()) acc += bias[(b * sq + i) * sk + j];
                        s[j] = acc;
                        mx = std::max(mx, acc);
                    }
                    C sum = 0;
                    for (std::size_t j = 0; j < sk; ++j) {
                        s[j] = std::exp(s[j] - mx);
                        sum += s[j];
                    }
                    // exp(-inf - -inf), a NaN score or an infinite maximum make the sum NaN;
                    // then every probability of the row is NaN.
                    if (zero_nan_rows && std::isnan(sum)) continue;
                    C* row = &y[(b * sq + i) * dv];
                    for (std::size_t j = 0; j < sk; ++j) {
                        const C p = s[j] / sum;
                        for (std::size_t e = 0; e < dv; ++e)
                            row[e] += p * v[(b * sk + j) * dv + e];
                    }
                }
            if (out_perm.empty()) return from_vector<C>(out.type(), out.lens(), y);
            // y is row-major over the unpermuted result; walk the output in its order.
            const shape logical = result_view(out);
            dims unpermuted_strides = shape{out.type(), logical.lens()}.strides();
            std::vector<C> permuted(y.size());
            const std::size_t rank_out = out.rank();
            for (std::size_t o = 0; o < permuted.size(); ++o) {
                std::size_t rest = o, from = 0;
                for (std::size_t i = rank_out; i-- > 0;) {
                    const std::size_t coord = rest % out.lens()[i];
                    rest /= out.lens()[i];
                    from += coord * unpermuted_strides[static_cast<std::size_t>(out_perm[i])];
                }
                permuted[o] = y[from];
            }
            return from_vector<C>(out.type(), out.lens(), permuted);
        }
    });
}

} // namespace conflux::op
