#include "conflux/ops/round_mantissa.hpp"

#include "ops/attribute_reader.hpp"

#include <bit>
#include <cmath>
#include <cstdint>

namespace conflux::op {

float round_to_mantissa(float x, std::size_t bits) {
    if (bits >= 23 || !std::isfinite(x)) return x;
    const std::uint32_t drop = 23 - std::uint32_t(bits);
    std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    // Sign and magnitude: adding half of the dropped range to the magnitude, then clearing it,
    // rounds to nearest with ties away from zero; a carry into the exponent is the right answer
    // (up to Inf past the largest finite value, as the hardware conversion gives).
    u += std::uint32_t{1} << (drop - 1);
    u &= ~((std::uint32_t{1} << drop) - 1);
    return std::bit_cast<float>(u);
}

round_mantissa round_mantissa::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).size("bits")};
}

shape round_mantissa::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    CONFLUX_USER_CHECK(in[0].type() == dtype::f32, name(), ": needs f32, got ",
                       to_string(in[0].type()));
    CONFLUX_USER_CHECK(bits <= 23, name(), ": bits must be 0 to 23, got ", bits);
    return in[0].as_standard();
}

argument round_mantissa::eval(const shape& out, const std::vector<argument>& in) const {
    auto values = to_vector<float>(in.at(0));
    for (float& v : values)
        v = round_to_mantissa(v, bits);
    return from_vector<float>(out.type(), out.lens(), values);
}

} // namespace conflux::op
