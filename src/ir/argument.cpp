#include "conflux/ir/argument.hpp"

#include <cstring>
#include <sstream>

namespace conflux {

argument::argument(const shape& s) : shape_(s) {
    std::size_t n = std::max<std::size_t>(s.bytes(), 1);
    data_ = std::shared_ptr<std::byte>(new std::byte[n](), std::default_delete<std::byte[]>());
}

argument::argument(std::vector<argument> elements) {
    std::vector<shape> shapes;
    for (const auto& e : elements)
        shapes.push_back(e.get_shape());
    shape_ = shape{std::move(shapes)};
    sub_arguments_ = std::move(elements);
}

argument argument::view(const shape& s, std::size_t offset) const {
    std::byte* p = data_.get() + offset * size_of(shape_.type());
    return {s, std::shared_ptr<std::byte>(data_, p)};
}

argument argument::contiguous() const {
    if (shape_.standard()) return *this;
    argument out{shape_.as_standard()};
    std::size_t n = shape_.elements();
    if (n == 0) return out;
    // Copy row by row along the innermost axis so the per-element work is one strided load.
    std::size_t inner = shape_.lens().back();
    std::size_t inner_stride = shape_.strides().back();
    std::size_t rows = n / inner;
    visit_storage(shape_.type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* src = typed<T>();
        T* dst = out.typed<T>();
        for (std::size_t r = 0; r < rows; ++r) {
            const T* row = src + shape_.index_of_element(r * inner);
            T* o = dst + r * inner;
            for (std::size_t i = 0; i < inner; ++i)
                o[i] = row[i * inner_stride];
        }
    });
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
        for (std::size_t i = 0; i < n; ++i)
            os << (i ? ", " : "") << values[i];
    });
    if (a.get_shape().elements() > n) os << ", ...";
    os << "}";
    return os.str();
}

} // namespace conflux
