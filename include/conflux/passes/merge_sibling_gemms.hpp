// Sibling GEMMs: matrix products of one input with different constant weights become one
// product with the weights side by side, each former result a slice of it. A transformer
// layer's query, key and value projections (Hugging Face BERT, ViT and Whisper export three)
// then run as one kernel: two launches fewer per layer, and at batch 32 one product of
// N = 2304 fills the GPU better than three of 768.
//
// A sibling is dot(x, W) with W a 2-D floating-point literal, optionally followed by its only
// user adding a per-column bias (a broadcast literal of N values) and then by its only user
// scaling it by a scalar literal (BERT's and Whisper's query and key scaling): bias and scale
// are folded into the merged weights and bias, W_i * s and b_i * s, so the merged product's
// epilogue is one bias add. A product with elementwise work of its own after that (LLaMA's
// rotary positions on q and k; its gate and up projections, multiplied together) is left
// alone: fuse_gemm puts that work in the product's epilogue, which a merge would move into a
// kernel of its own reading slices of the merged result. Values the
// return reads are not merged. Runs before fuse_attention, which then reads the slices as
// strided views; dce removes the former products.
#pragma once

#include "conflux/ir/module.hpp"

namespace conflux {

struct merge_sibling_gemms {
    std::string name() const { return "merge_sibling_gemms"; }
    void apply(module& m) const;
};

} // namespace conflux
