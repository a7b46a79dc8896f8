// Shapes and arguments to JSON and back, through CBOR as a saved program stores them, and the
// errors a damaged value gives.
#include "conflux/ir/serialize.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace serialize_test {

using namespace conflux;
using nlohmann::json;

namespace {

json through_cbor(const json& j) {
    return json::from_cbor(json::to_cbor(j));
}

void expect_user_error(const json& j, const std::string& fragment) {
    try {
        (void)argument_from_json(j, "literal 3");
        FAIL() << "no error for " << j.dump();
    } catch (const user_error& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
}

} // namespace

TEST(serialize, shapes_round_trip_with_strides_and_tuples) {
    const std::vector<shape> shapes = {
        shape(dtype::f16, {2, 3, 4}),
        shape(dtype::f32, {4, 3}, {1, 4}),
        shape(dtype::i64, {5, 7}, {0, 1}),
        shape(dtype::boolean, {}),
        shape(std::vector<shape>{shape(dtype::bf16, {8}), shape(dtype::u8, {0, 3})}),
    };
    for (const auto& s : shapes)
        EXPECT_EQ(shape_from_json(through_cbor(shape_to_json(s)), "shape"), s) << to_string(s);
}

TEST(serialize, arguments_keep_their_bytes_and_strides) {
    argument a = from_vector<float>(dtype::f32, {2, 3}, std::vector<float>{1, -2, 3.5f, 4, 5, 6});
    argument t = a.view(shape(dtype::f32, {3, 2}, {1, 3}));
    // A broadcast literal: 3 stored values seen as 4x3.
    argument b = from_vector<std::int64_t>(dtype::i64, {3}, std::vector<std::int64_t>{7, -8, 9})
                     .view(shape(dtype::i64, {4, 3}, {0, 1}));
    for (const argument& x : {a, t, b}) {
        argument y = argument_from_json(through_cbor(argument_to_json(x)), "literal");
        EXPECT_EQ(y.get_shape(), x.get_shape());
        EXPECT_TRUE(y.same_values(x));
    }
    // The broadcast stays as small as it was.
    EXPECT_EQ(json_binary(argument_to_json(b), "data", "b").size(), 3 * sizeof(std::int64_t));
}

TEST(serialize, damaged_values_name_the_field) {
    json good = argument_to_json(from_vector<float>(dtype::f32, {2}, std::vector<float>{1, 2}));
    json j = good;
    j["data"] = json::binary_t(std::vector<std::uint8_t>(7));
    expect_user_error(j, "literal 3.data: 7 bytes");
    j = good;
    j["shape"]["type"] = "f17";
    expect_user_error(j, "unknown element type 'f17'");
    j = good;
    j["shape"]["lens"] = json::array({2, 3});
    expect_user_error(j, "2 lens but 1 strides");
    j = good;
    j["shape"]["lens"] = json::array({-2});
    expect_user_error(j, "non-negative");
    j = good;
    j.erase("data");
    expect_user_error(j, "'data' is missing");
    j = good;
    j["shape"]["lens"] = json::array({std::size_t(1) << 62});
    expect_user_error(j, "elements");
    expect_user_error(json::array(), "expected an object");
}

} // namespace serialize_test
