#include "conflux/ir/random_argument.hpp"

#include <vector>

namespace conflux {

argument random_argument(const shape& s, std::mt19937_64& rng) {
    // Filled as a flat standard tensor over the element space, then viewed through s.
    const dims flat{s.element_space()};
    const std::size_t n = s.element_space();
    argument values;
    if (is_floating(s.type())) {
        std::uniform_real_distribution<double> dist(-1.0, 1.0);
        std::vector<double> v(n);
        for (auto& x : v)
            x = dist(rng);
        values = from_vector<double>(s.type(), flat, v);
    } else {
        std::vector<std::int64_t> v(n);
        std::uniform_int_distribution<std::int64_t> dist(0, s.type() == dtype::boolean ? 1 : 3);
        for (auto& x : v)
            x = dist(rng);
        values = from_vector<std::int64_t>(s.type(), flat, v);
    }
    return argument(s, values.storage());
}

} // namespace conflux
