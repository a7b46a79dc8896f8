#include "conflux/ir/argument.hpp"

#include <cstring>
#include <sstream>

namespace conflux {

argument::argument(const shape& s) : shape_(s) {
    std::size_t n = std::max<std::size_t>(s.bytes(), 1);
    data_ = std::shared_ptr<std::byte>(new std::byte[n](), std::default_delete<std::byte[]>());
}

argument argument::view(const shape& s, std::size_t offset) const {
    std::byte* p = data_.get() + offset * size_of(shape_.type());
    return {s, std::shared_ptr<std::byte>(data_, p)};
}

argument argument::contiguous() const {
    if (shape_.standard()) return *this;
    argument out{shape_.as_standard()};
    std::size_t esize = size_of(shape_.type());
    std::size_t n = shape_.elements();
    for (std::size_t i = 0; i < n; ++i)
        std::memcpy(out.data() + i * esize, data_.get() + shape_.index_of_element(i) * esize,
                    esize);
    return out;
}

bool argument::same_values(const argument& other) const {
    if (shape_.type() != other.shape_.type() || shape_.lens() != other.shape_.lens()) return false;
    auto a = contiguous();
    auto b = other.contiguous();
    return std::memcmp(a.data(), b.data(), shape_.elements() * size_of(shape_.type())) == 0;
}

std::string to_string(const argument& a, std::size_t max_values) {
    std::ostringstream os;
    os << to_string(a.get_shape()) << " {";
    auto n = std::min(max_values, a.get_shape().elements());
    visit_compute(a.get_shape().type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto values = to_vector<T>(a.view(a.get_shape()));
        for (std::size_t i = 0; i < n; ++i) os << (i ? ", " : "") << values[i];
    });
    if (a.get_shape().elements() > n) os << ", ...";
    os << "}";
    return os.str();
}

} // namespace conflux
