// Every elementwise kind with the types it is tested in, shared by the GPU op tests and the host
// emulation of the generated kernels (tests/unit/cuda_kernel_emulation_test.cpp), so both check
// the same list.
#pragma once

#include "conflux/ops/elementwise.hpp"

#include <vector>

namespace conflux::test {

struct elementwise_case {
    op::elementwise op;
    dtype type;
};

inline std::vector<elementwise_case> elementwise_cases() {
    using op::elementwise_kind;
    std::vector<elementwise_case> cases;
    for (int k = 0; k <= int(elementwise_kind::convert); ++k) {
        const auto kind = elementwise_kind(k);
        op::elementwise e = op::make_elementwise(kind, 0.5f, 1.5f);
        if (kind == elementwise_kind::convert) e = op::make_convert(dtype::f16);
        if (kind == elementwise_kind::isinf) e = op::make_elementwise(kind, 1, 1);
        std::vector<dtype> types{dtype::f32, dtype::f16, dtype::bf16};
        if (op::arity(kind) == 2 && !op::produces_bool(kind) && kind != elementwise_kind::pow) {
            types.push_back(dtype::i32);
            types.push_back(dtype::i64);
        }
        if (kind == elementwise_kind::logical_and || kind == elementwise_kind::logical_or ||
            kind == elementwise_kind::logical_xor || kind == elementwise_kind::logical_not)
            types = {dtype::boolean};
        for (dtype t : types)
            cases.push_back({e, t});
    }
    return cases;
}

} // namespace conflux::test
