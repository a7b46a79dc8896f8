// An argument is a shape plus the memory it describes. Views share the memory of their input
// (the shared_ptr aliases the owner), so a transpose or slice never copies.
#pragma once

#include "conflux/ir/shape.hpp"

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace conflux {

class argument {
public:
    argument() = default;
    // Fresh zero-initialised storage for s (element_space() elements).
    explicit argument(const shape& s);
    argument(const shape& s, std::shared_ptr<std::byte> data) : shape_(s), data_(std::move(data)) {}
    // A tuple of values (see shape's tuple form).
    explicit argument(std::vector<argument> elements);

    const std::vector<argument>& sub_arguments() const { return sub_arguments_; }

    const shape& get_shape() const { return shape_; }
    std::byte* data() const { return data_.get(); }
    const std::shared_ptr<std::byte>& storage() const { return data_; }
    bool empty() const { return data_ == nullptr && shape_.elements() != 0; }

    // The same memory seen through another shape, starting `offset` elements in.
    argument view(const shape& s, std::size_t offset = 0) const;

    template <class T> T* typed() const { return reinterpret_cast<T*>(data_.get()); }

    // A standard-layout copy (a no-op share when already standard).
    argument contiguous() const;

    // Exact element-wise equality of values (not of strides or memory).
    bool same_values(const argument& other) const;

private:
    shape shape_;
    std::shared_ptr<std::byte> data_;
    std::vector<argument> sub_arguments_;
};

// Reads every element in row-major logical order, converted to T.
template <class T> std::vector<T> to_vector(const argument& a) {
    const auto& s = a.get_shape();
    std::vector<T> out(s.elements());
    visit_storage(s.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        const S* p = a.typed<S>();
        if (s.standard()) {
            for (std::size_t i = 0; i < out.size(); ++i)
                out[i] = convert_value<T>(p[i]);
        } else if (!out.empty()) {
            // Row by row along the innermost axis: one index computation per row.
            std::size_t inner = s.lens().back(), inner_stride = s.strides().back();
            for (std::size_t r = 0; r < out.size(); r += inner) {
                const S* row = p + s.index_of_element(r);
                for (std::size_t i = 0; i < inner; ++i)
                    out[r + i] = convert_value<T>(row[i * inner_stride]);
            }
        }
    });
    return out;
}

// A standard argument of dtype `type` holding `values` (row-major), converted from T.
template <class T> argument from_vector(dtype type, const dims& lens, std::span<const T> values) {
    shape s{type, lens};
    CONFLUX_ASSERT(values.size() == s.elements(), "value count does not match shape");
    argument a{s};
    visit_storage(type, [&](auto tag) {
        using S = typename decltype(tag)::type;
        S* p = a.typed<S>();
        for (std::size_t i = 0; i < values.size(); ++i)
            p[i] = convert_value<S>(values[i]);
    });
    return a;
}

template <class T>
argument from_vector(dtype type, const dims& lens, const std::vector<T>& values) {
    return from_vector<T>(type, lens, std::span<const T>(values));
}

// A short printable summary (shape and the first few values).
std::string to_string(const argument& a, std::size_t max_values = 8);

} // namespace conflux
