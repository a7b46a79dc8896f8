#include "conflux/ir/shape.hpp"

#include <gtest/gtest.h>

namespace shape_test {

using namespace conflux;

TEST(shape, standard_strides_are_suffix_products) {
    shape s{dtype::f32, {2, 3, 4}};
    EXPECT_EQ(s.strides(), (dims{12, 4, 1}));
    EXPECT_TRUE(s.standard());
    EXPECT_TRUE(s.packed());
    EXPECT_FALSE(s.transposed());
    EXPECT_FALSE(s.broadcasted());
    EXPECT_EQ(s.elements(), 24u);
    EXPECT_EQ(s.bytes(), 96u);
}

TEST(shape, transposed_is_packed_but_not_standard) {
    shape nhwc_as_nchw{dtype::f16, {1, 8, 4, 5}, {160, 1, 40, 8}};
    EXPECT_TRUE(nhwc_as_nchw.packed());
    EXPECT_TRUE(nhwc_as_nchw.transposed());
    EXPECT_FALSE(nhwc_as_nchw.standard());
    EXPECT_EQ(nhwc_as_nchw.element_space(), 160u);
    // element (0, 3, 2, 1) of NCHW lives at h*40 + w*8 + c in NHWC memory.
    EXPECT_EQ(nhwc_as_nchw.index({0, 3, 2, 1}), 2u * 40 + 1 * 8 + 3);
}

TEST(shape, broadcast_has_zero_stride) {
    shape b{dtype::f32, {4, 3}, {0, 1}};
    EXPECT_TRUE(b.broadcasted());
    EXPECT_FALSE(b.packed());
    EXPECT_EQ(b.element_space(), 3u);
    EXPECT_EQ(b.index_of_element(7), 1u);
}

TEST(shape, len_one_axes_do_not_affect_standardness) {
    shape s{dtype::f32, {1, 5, 1}, {99, 1, 7}};
    EXPECT_TRUE(s.standard());
}

TEST(shape, multi_index_round_trips) {
    shape s{dtype::i64, {2, 3, 4}};
    for (std::size_t i = 0; i < s.elements(); ++i)
        EXPECT_EQ(s.index(s.multi_index(i)), i);
}

TEST(shape, printing) {
    EXPECT_EQ(to_string(shape{dtype::bf16, {2, 3}}), "bf16[2,3]");
    EXPECT_EQ(to_string(shape{dtype::f32, {2, 3}, {1, 2}}), "f32[2,3]{1,2}");
    EXPECT_EQ(to_string(shape{dtype::boolean, {}}), "bool[]");
}

} // namespace shape_test
