// A shape is a dtype, logical lens and element strides. Semantics Conflux relies on everywhere:
// - the logical element at index (i0..in) lives at offset sum(ik * stride_k) elements from the
//   buffer start; strides may be any non-negative values, including 0 (broadcast);
// - "standard" means row-major packed (strides are the suffix products of lens);
// - nothing assumes a standard shape silently: ops read their inputs through the strides given;
// - every shape is bounded (util/checked_size.hpp): its lens hold at most 2^48 elements and its
//   strides reach at most 2^48 elements (the constructors throw a user_error otherwise), so
//   element counts, offsets and byte sizes computed from a shape never wrap.
#pragma once

#include "conflux/ir/dtype.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace conflux {

using dims = std::vector<std::size_t>;

class shape {
public:
    shape() = default;
    shape(dtype type, dims lens); // standard strides
    shape(dtype type, dims lens, dims strides);
    // A tuple of shapes: the result of an op that returns several values (a fused op with extra
    // returns). Its elements are read with get_tuple_elem.
    explicit shape(std::vector<shape> elements);

    bool is_tuple() const { return tuple_; }
    const std::vector<shape>& sub_shapes() const { return sub_shapes_; }

    dtype type() const { return type_; }
    const dims& lens() const { return lens_; }
    const dims& strides() const { return strides_; }
    std::size_t rank() const { return lens_.size(); }

    std::size_t elements() const;
    // Number of elements the underlying buffer must hold: largest offset + 1 (0 when empty).
    std::size_t element_space() const;
    std::size_t bytes() const { return element_space() * size_of(type_); }

    bool standard() const;    // row-major packed
    bool packed() const;      // no gaps and no overlap, in some axis order
    bool transposed() const;  // packed but not standard
    bool broadcasted() const; // some axis of len > 1 has stride 0
    bool scalar() const { return lens_.empty(); }

    // Offset (in elements) of a multi-index, and of the i-th element in row-major logical order.
    std::size_t index(const dims& idx) const;
    std::size_t index_of_element(std::size_t i) const;
    // Row-major multi-index of the i-th logical element.
    dims multi_index(std::size_t i) const;

    shape with_type(dtype t) const { return {t, lens_, strides_}; }
    shape as_standard() const { return {type_, lens_}; }

    static dims standard_strides(const dims& lens);

    friend bool operator==(const shape&, const shape&) = default;

private:
    dtype type_ = dtype::f32;
    dims lens_;
    dims strides_;
    bool tuple_ = false;
    std::vector<shape> sub_shapes_;
};

// "f32[2,3,4]" for standard shapes, "f32[2,3,4]{1,8,2}" otherwise, "(a, b)" for tuples.
std::string to_string(const shape& s);
std::string to_string(const dims& d);

} // namespace conflux
