// Private to simplify: the rewrite families (one file each) and the helpers they share. Each
// rewrite looks at one instruction, returns true when it changed the module, and leaves the old
// instructions for dce (the driver runs it between sweeps).
#pragma once

#include "conflux/ir/literal_value.hpp"
#include "conflux/ir/module.hpp"

#include <cstdint>
#include <vector>

namespace conflux::simplify_detail {

// Points every user of `old_ins` at `new_ins`. The lens must be equal; the strides may differ,
// in which case every user's shape is recomputed (and their users', as far as strides change).
void replace(module& m, instruction_ref old_ins, instruction_ref new_ins);

// Elementwise op / view op families (op_traits::reshape_like: reshape, flatten, squeeze,
// unsqueeze).
bool is_elementwise(instruction_ref ins);

// The literal a broadcast instruction expands, else nullptr.
const argument* broadcast_literal(instruction_ref ins);
bool is_reshape_like(instruction_ref ins);

// `perm` applied to an argument (output axis i = input axis perm[i]) as a standard copy.
argument transpose_value(const argument& a, const std::vector<std::int64_t>& perm);
std::vector<std::int64_t> invert(const std::vector<std::int64_t>& perm);
bool is_identity(const std::vector<std::int64_t>& perm);

struct fold_options {
    std::size_t max_fold_elements = 0;
};

// simplify_fold.cpp
bool find_constant(module& m, instruction_ref ins, const fold_options& o);
bool find_constant_of_broadcasts(module& m, instruction_ref ins, const fold_options& o);
bool find_conv_batch_norm(module& m, instruction_ref ins);
bool find_batch_norm_affine(module& m, instruction_ref ins);

// simplify_broadcast_elementwise.cpp
bool find_undeciding_constant(module& m, instruction_ref ins);
bool find_elementwise_of_broadcasts(module& m, instruction_ref ins);

// simplify_views.cpp
bool find_identity_view(module& m, instruction_ref ins);
bool find_nested_transpose(module& m, instruction_ref ins);
bool find_nested_reshape(module& m, instruction_ref ins);
bool find_transpose_reshape_cancel(module& m, instruction_ref ins);

// simplify_view_chain.cpp
bool find_view_chain_with_a_copy(module& m, instruction_ref ins);

// simplify_dot.cpp
bool find_dot_of_a_shared_matrix(module& m, instruction_ref ins);

// simplify_gather.cpp
bool find_gather_constant_index(module& m, instruction_ref ins);

// simplify_pool.cpp
bool find_global_pool(module& m, instruction_ref ins);

// simplify_transpose_elementwise.cpp
bool find_transpose_through_elementwise(module& m, instruction_ref ins);
bool find_transpose_through_concat(module& m, instruction_ref ins);

// simplify_gelu.cpp
bool find_gelu(module& m, instruction_ref ins);

// simplify_rms_norm.cpp
bool find_rms_norm(module& m, instruction_ref ins);

// simplify_reshape_elementwise.cpp
bool find_reshape_through_elementwise(module& m, instruction_ref ins);
bool find_constant_sum(module& m, instruction_ref ins);

} // namespace conflux::simplify_detail
