// Simplify, matrix products: a batched product whose right operand is one matrix broadcast over
// the batch (numpy MatMul of activations [..., m, k] by a weight [k, n], as PyTorch's
// nn.MultiheadAttention projects its sequence-first [s, b, e] input) becomes one product of
// all the batch's rows. As batches of m rows (m is the model's batch, often 1) it was one small
// GEMM per batch entry, each reading the whole weight.
#include "conflux/ops/dot.hpp"
#include "conflux/ops/views.hpp"
#include "passes/simplify_rewrites.hpp"

#include <algorithm>
#include <optional>

namespace conflux::simplify_detail {

namespace {

// A permutation of a's batch and row axes (k stays last) after which they merge into one axis
// as a view: the axes longer than 1 by decreasing stride, when that is not their order already
// and k is contiguous. nullopt when there is none.
std::optional<std::vector<std::int64_t>> rows_in_memory_order(const shape& as) {
    const std::size_t rank = as.rank();
    if (as.strides()[rank - 1] != 1 && as.lens()[rank - 1] != 1) return std::nullopt;
    std::vector<std::int64_t> perm(rank);
    for (std::size_t i = 0; i < rank; ++i)
        perm[i] = static_cast<std::int64_t>(i);
    std::stable_sort(perm.begin(), perm.end() - 1, [&](std::int64_t x, std::int64_t y) {
        const auto sx = as.lens()[std::size_t(x)] == 1 ? 0 : as.strides()[std::size_t(x)];
        const auto sy = as.lens()[std::size_t(y)] == 1 ? 0 : as.strides()[std::size_t(y)];
        return sx > sy;
    });
    if (is_identity(perm)) return std::nullopt;
    const shape ordered = op::transpose{perm}.compute_shape({as});
    std::size_t rows = 1;
    for (std::size_t i = 0; i + 1 < rank; ++i)
        rows *= as.lens()[i];
    if (!op::reshape_as_view(ordered, dims{rows, as.lens()[rank - 1]})) return std::nullopt;
    return perm;
}

} // namespace

// From: @d = dot(a [b0, .., m, k], w [k, n])  or  dot(a, broadcast(w) -> [b0, .., k, n])
// To:   @d = reshape(dot(reshape(a, [B * m, k]), reshape(w, [k, n])), [b0, .., m, n])
// when a's batch and row axes merge into one as a view (B = b0 * ..., more than 1), or
// To:   @d = transpose(reshape(dot(reshape(transpose(a, P), [B * m, k]), ...), ...), P^-1)
// when they merge after a permutation P of them (rows_in_memory_order). The sums are the same,
// in the same order.
bool find_dot_of_a_shared_matrix(module& m, instruction_ref ins) {
    if (ins->get_operator().get_if<op::dot>() == nullptr) return false;
    const instruction_ref a = ins->inputs()[0], b = ins->inputs()[1];
    const shape& as = a->get_shape();
    const std::size_t rank = as.rank();
    if (rank < 3) return false;
    // The matrix: b itself when the product broadcasts it (a lower rank), or what an explicit
    // broadcast expanded.
    instruction_ref w = b;
    if (b->get_shape().rank() == rank && b->get_operator().get_if<op::broadcast>() != nullptr)
        w = b->inputs()[0];
    const shape& ws = w->get_shape();
    // The product's batch must be a's (not one that a broadcast of a would make).
    const dims& out = ins->get_shape().lens();
    if (!std::equal(out.begin(), out.end() - 2, as.lens().begin())) return false;
    if (ws.rank() < 2) return false;
    const std::size_t k = as.lens()[rank - 1], rows = as.lens()[rank - 2];
    const std::size_t n = ws.lens()[ws.rank() - 1];
    if (ws.lens()[ws.rank() - 2] != k) return false;
    if (ws.elements() != k * n) return false; // w itself varies along a batch axis
    std::size_t batch = 1;
    for (std::size_t i = 0; i + 2 < rank; ++i)
        batch *= as.lens()[i];
    if (batch == 1) return false;
    const dims flat_lens{batch * rows, k};
    dims out_lens(as.lens().begin(), as.lens().end() - 2);
    out_lens.push_back(rows);
    out_lens.push_back(n);
    // Rows that do not merge as a view: in memory order instead (nn.MultiheadAttention's
    // [s, b, e] view of a batch-first input is [b, s, e] in memory), the product of the
    // permuted rows put back in order by a transpose that the GEMM's epilogue applies as it
    // stores. Failing that, a copy of a; worth it when the product's tiles would otherwise hold
    // fewer than 64 rows each (one wgmma's M) and the merged product is at least two such tiles.
    std::optional<std::vector<std::int64_t>> perm;
    if (!op::reshape_as_view(as, flat_lens)) {
        perm = rows_in_memory_order(as);
        const bool copy_pays = rows < 64 && batch * rows >= 128;
        if (!perm && !copy_pays) return false;
    }
    auto matrix = m.insert_instruction(ins, op::reshape{dims{k, n}}, {w});
    if (perm) {
        auto ordered = m.insert_instruction(ins, op::transpose{*perm}, {a});
        auto flat = m.insert_instruction(ins, op::reshape{flat_lens}, {ordered});
        auto product = m.insert_instruction(ins, op::dot{}, {flat, matrix});
        dims ordered_lens = ordered->get_shape().lens();
        ordered_lens.back() = n;
        auto unflat = m.insert_instruction(ins, op::reshape{ordered_lens}, {product});
        replace(m, ins, m.insert_instruction(ins, op::transpose{invert(*perm)}, {unflat}));
        return true;
    }
    auto flat_a = m.insert_instruction(ins, op::reshape{flat_lens}, {a});
    auto product = m.insert_instruction(ins, op::dot{}, {flat_a, matrix});
    replace(m, ins, m.insert_instruction(ins, op::reshape{out_lens}, {product}));
    return true;
}

} // namespace conflux::simplify_detail
