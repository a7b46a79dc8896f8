#include "conflux/ops/dot.hpp"

#include "conflux/util/parallel_for.hpp"

#include <algorithm>

namespace conflux::op {

namespace {

// The batch lens of `s` right-aligned to `rank` axes, missing leading axes as 1.
dims aligned_batch(const shape& s, std::size_t rank) {
    dims b(rank, 1);
    std::size_t own = s.rank() - 2;
    std::copy(s.lens().begin(), s.lens().begin() + std::ptrdiff_t(own), b.begin() + (rank - own));
    return b;
}

} // namespace

shape dot::compute_shape(const std::vector<shape>& in) const {
    const std::string op = name();
    check_input_count(op, in, 2);
    const auto& a = in[0];
    const auto& b = in[1];
    CONFLUX_USER_CHECK(a.rank() >= 2 && b.rank() >= 2, op, ": both operands need rank >= 2, got ",
                       to_string(a), " and ", to_string(b));
    CONFLUX_USER_CHECK(a.type() == b.type(), op, ": operand types differ: ", to_string(a.type()),
                       " and ", to_string(b.type()));
    const std::size_t m = a.lens()[a.rank() - 2], k = a.lens()[a.rank() - 1];
    const std::size_t kb = b.lens()[b.rank() - 2], n = b.lens()[b.rank() - 1];
    CONFLUX_USER_CHECK(k == kb, op, ": inner dimensions differ: ", to_string(a), " x ",
                       to_string(b), " (", k, " vs ", kb, ")");
    const std::size_t batch_rank = std::max(a.rank(), b.rank()) - 2;
    auto ab = aligned_batch(a, batch_rank);
    auto bb = aligned_batch(b, batch_rank);
    dims out(batch_rank);
    for (std::size_t i = 0; i < batch_rank; ++i) {
        CONFLUX_USER_CHECK(ab[i] == bb[i] || ab[i] == 1 || bb[i] == 1, op,
                           ": batch dimensions do not broadcast: ", to_string(a), " x ",
                           to_string(b));
        out[i] = ab[i] == 1 ? bb[i] : ab[i];
    }
    out.push_back(m);
    out.push_back(n);
    return {a.type(), out};
}

argument dot::eval(const shape& out, const std::vector<argument>& in) const {
    const auto& as = in[0].get_shape();
    const auto& bs = in[1].get_shape();
    const std::size_t m = as.lens()[as.rank() - 2], k = as.lens()[as.rank() - 1];
    const std::size_t n = bs.lens()[bs.rank() - 1];
    const std::size_t batch_rank = out.rank() - 2;
    const dims out_batch(out.lens().begin(), out.lens().end() - 2);
    const auto ab = aligned_batch(as, batch_rank);
    const auto bb = aligned_batch(bs, batch_rank);

    // Matrix index of each operand per output batch; a broadcast batch axis contributes nothing.
    std::size_t batches = 1;
    for (auto l : out_batch)
        batches *= l;
    std::vector<std::size_t> a_mat(batches), b_mat(batches);
    for (std::size_t bi = 0; bi < batches; ++bi) {
        std::size_t rest = bi, ai = 0, bj = 0, a_scale = 1, b_scale = 1;
        for (std::size_t d = batch_rank; d-- > 0;) {
            std::size_t idx = rest % out_batch[d];
            rest /= out_batch[d];
            if (ab[d] != 1) ai += idx * a_scale;
            if (bb[d] != 1) bj += idx * b_scale;
            a_scale *= ab[d];
            b_scale *= bb[d];
        }
        a_mat[bi] = ai;
        b_mat[bi] = bj;
    }

    return visit_compute(as.type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const auto a = to_vector<T>(in[0]);
        const auto b = to_vector<T>(in[1]);
        std::vector<T> c(out.elements(), T(0));
        // One item is one output row; i-k-j order keeps the inner loop on contiguous rows of B
        // and C.
        auto work = [&](std::size_t begin, std::size_t end) {
            for (std::size_t item = begin; item < end; ++item) {
                const std::size_t bi = item / m, i = item % m;
                const T* arow = a.data() + (a_mat[bi] * m + i) * k;
                const T* bmat = b.data() + b_mat[bi] * k * n;
                T* crow = c.data() + item * n;
                for (std::size_t kk = 0; kk < k; ++kk) {
                    const T av = arow[kk];
                    const T* brow = bmat + kk * n;
                    for (std::size_t j = 0; j < n; ++j)
                        crow[j] += av * brow[j];
                }
            }
        };
        const std::size_t per_item = std::max<std::size_t>(1, k * n);
        parallel_for(batches * m, work,
                     std::max<std::size_t>(1, (std::size_t{1} << 16) / per_item));
        return from_vector<T>(out.type(), out.lens(), c);
    });
}

} // namespace conflux::op
