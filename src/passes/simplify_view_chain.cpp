// Simplify, chains of views with a copy in them: reshapes and transposes whose composition is a
// view of their source although one of the reshapes on the way is not. PyTorch's
// nn.MultiheadAttention splits the heads of a sequence-first projection with
// reshape [s, b * h, d] -> transpose -> reshape [b, h, s, d]; the first reshape merges b with h,
// which are not adjacent in memory, so it copies, while the whole chain only splits e into
// (h, d) and permutes: a view. The rewrite states the chain as that split, one transpose and
// the merges, and is made only when every step of it is a view.
#include "conflux/ops/views.hpp"
#include "passes/simplify_rewrites.hpp"

#include <optional>

namespace conflux::simplify_detail {

namespace {

// The chain as split -> transpose -> merge: `split` the source's lens with each axis cut into
// the factors the chain ever separates ("atoms"; axes of length 1 dropped), `perm` the atoms in
// the order the result reads them (the merge is then to the result's lens).
struct split_permute_merge {
    dims split;
    std::vector<std::int64_t> perm;
};

// Follows the atoms of `source_lens` through `chain` (reshape-like ops and transposes, first
// to last). nullopt when a reshape would cut an atom into factors that do not divide it.
std::optional<split_permute_merge> compose(const dims& source_lens,
                                           const std::vector<instruction_ref>& chain) {
    std::vector<std::size_t> atom_len;          // by atom id
    std::vector<std::vector<std::size_t>> axes; // current axes -> atom ids, outer to inner
    std::vector<std::vector<std::size_t>> source_axes;
    for (std::size_t len : source_lens) {
        std::vector<std::size_t> ids;
        if (len != 1) {
            ids.push_back(atom_len.size());
            atom_len.push_back(len);
        }
        axes.push_back(ids);
    }
    source_axes = axes;
    // Replaces atom `id` by (outer, inner) everywhere it appears.
    auto cut = [&](std::size_t id, std::size_t outer) {
        const std::size_t inner_id = atom_len.size();
        atom_len.push_back(atom_len[id] / outer);
        atom_len[id] = outer;
        for (auto* lists : {&axes, &source_axes})
            for (auto& ids : *lists)
                for (std::size_t i = 0; i < ids.size(); ++i)
                    if (ids[i] == id) {
                        ids.insert(ids.begin() + std::ptrdiff_t(i) + 1, inner_id);
                        break;
                    }
    };
    for (instruction_ref op : chain) {
        const dims& next = op->get_shape().lens();
        if (const auto* t = op->get_operator().get_if<op::transpose>()) {
            std::vector<std::vector<std::size_t>> moved;
            for (auto p : t->permutation)
                moved.push_back(axes[static_cast<std::size_t>(p)]);
            axes = std::move(moved);
            continue;
        }
        std::vector<std::size_t> flat;
        for (const auto& ids : axes)
            flat.insert(flat.end(), ids.begin(), ids.end());
        std::vector<std::vector<std::size_t>> grouped;
        std::size_t at = 0;
        for (std::size_t len : next) {
            std::vector<std::size_t> ids;
            std::size_t have = 1;
            while (have < len) {
                if (at >= flat.size()) return std::nullopt;
                const std::size_t id = flat[at];
                if (have * atom_len[id] > len) {
                    if (len % have != 0 || atom_len[id] % (len / have) != 0) return std::nullopt;
                    cut(id, len / have);
                    flat.insert(flat.begin() + std::ptrdiff_t(at) + 1, atom_len.size() - 1);
                }
                have *= atom_len[id];
                ids.push_back(id);
                ++at;
            }
            if (have != len) return std::nullopt;
            grouped.push_back(std::move(ids));
        }
        if (at != flat.size()) return std::nullopt;
        axes = std::move(grouped);
    }
    split_permute_merge r;
    std::vector<std::size_t> position(atom_len.size());
    for (const auto& ids : source_axes)
        for (std::size_t id : ids) {
            position[id] = r.split.size();
            r.split.push_back(atom_len[id]);
        }
    for (const auto& ids : axes)
        for (std::size_t id : ids)
            r.perm.push_back(static_cast<std::int64_t>(position[id]));
    return r;
}

bool is_view_chain_op(instruction_ref ins) {
    return is_reshape_like(ins) || ins->get_operator().get_if<op::transpose>() != nullptr;
}

// A reshape-like op of the chain whose input's strides make it copy.
bool copies(instruction_ref ins) {
    return is_reshape_like(ins) &&
           !op::reshape_as_view(ins->inputs()[0]->get_shape(), ins->get_shape().lens());
}

} // namespace

// From: @3 = reshape{[b, h, s, d]}(transpose{[1,0,2]}(reshape{[s, b * h, d]}(x [s, b, h * d])))
//       (the last of a chain of reshape-like ops and transposes, one of which copies)
// To:   @3 = reshape{[b, h, s, d]}(transpose{P}(reshape{[s, b, h, d]}(x)))
// when each of the three is a view of x (the first one only splits axes; reshapes that are
// the identity go to find_identity_view).
bool find_view_chain_with_a_copy(module& m, instruction_ref ins) {
    if (!is_view_chain_op(ins)) return false;
    // Only at the chain's end: a user that is not part of it.
    bool end = false;
    for (instruction_ref user : ins->outputs())
        end = end || !is_view_chain_op(user);
    if (!end) return false;
    constexpr std::size_t max_chain = 16;
    std::vector<instruction_ref> chain{ins};
    bool any_copy = copies(ins);
    instruction_ref source = ins->inputs()[0];
    while (is_view_chain_op(source) && chain.size() < max_chain) {
        chain.insert(chain.begin(), source);
        any_copy = any_copy || copies(source);
        source = source->inputs()[0];
    }
    if (!any_copy || chain.size() < 2) return false;
    const auto spm = compose(source->get_shape().lens(), chain);
    if (!spm || spm->split.empty()) return false;
    const auto split = op::reshape_as_view(source->get_shape(), spm->split);
    if (!split) return false;
    const shape permuted = op::transpose{spm->perm}.compute_shape({*split});
    if (!op::reshape_as_view(permuted, ins->get_shape().lens())) return false;
    auto a = m.insert_instruction(ins, op::reshape{spm->split}, {source});
    auto b = m.insert_instruction(ins, op::transpose{spm->perm}, {a});
    replace(m, ins, m.insert_instruction(ins, op::reshape{ins->get_shape().lens()}, {b}));
    return true;
}

} // namespace conflux::simplify_detail
