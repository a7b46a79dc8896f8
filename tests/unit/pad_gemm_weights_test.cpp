// pad_gemm_weights: constant B operands with rows that are not 16-byte aligned are read through
// a slice of a padded copy; the product is unchanged (checked on the reference target).
#include "conflux/ir/literal_value.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/dce.hpp"
#include "conflux/passes/pad_gemm_weights.hpp"
#include "unit/pass_test_helpers.hpp"

namespace pad_gemm_weights_test {

using namespace conflux;
using namespace conflux::test;

namespace {

void run_pad(module& m) {
    pad_gemm_weights{}.apply(m);
    dce{}.apply(m);
}

const argument* padded_weights(const program& p) {
    for (const auto& ins : p.main())
        if (ins.name() == "slice") return literal_value(ins.inputs()[0]);
    return nullptr;
}

} // namespace

TEST(pad_gemm_weights, rows_of_an_odd_length_are_padded_to_16_bytes) {
    // f32 rows of 13 (52 bytes) become rows of 16 with zeros after the 13 values.
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {5, 7}});
        auto w = m.add_literal(random_literal({7, 13}, 3));
        m.add_return({m.add_instruction(op::dot{}, {x, w})});
    };
    auto p = transform_and_compare(build, run_pad);
    EXPECT_EQ(op_names(p.main()), "@literal slice dot @return");
    const argument* padded = padded_weights(p);
    ASSERT_NE(padded, nullptr) << p.to_string();
    EXPECT_EQ(padded->get_shape().lens(), (dims{7, 16}));
    const auto values = to_vector<float>(*padded);
    const auto original = to_vector<float>(random_literal({7, 13}, 3));
    for (std::size_t r = 0; r < 7; ++r)
        for (std::size_t c = 0; c < 16; ++c)
            EXPECT_EQ(values[r * 16 + c], c < 13 ? original[r * 13 + c] : 0.0f) << r << "," << c;
}

TEST(pad_gemm_weights, aligned_rows_and_weights_used_elsewhere_stay) {
    auto build = [](module& m) {
        auto x = m.add_parameter("x", shape{dtype::f32, {5, 7}});
        auto aligned = m.add_literal(random_literal({7, 8}, 1)); // 32-byte rows
        auto shared = m.add_literal(random_literal({7, 13}, 2));
        auto a = m.add_instruction(op::dot{}, {x, aligned});
        auto b = m.add_instruction(op::dot{}, {x, shared});
        auto e = m.add_instruction(op::make_elementwise(op::elementwise_kind::exp), {shared});
        m.add_return({a, b, e});
    };
    auto p = transform_and_compare(build, run_pad);
    EXPECT_EQ(op_names(p.main()), "@literal @literal dot dot exp @return");
}

} // namespace pad_gemm_weights_test
