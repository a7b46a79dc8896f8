// These ops only move elements, so they copy storage values as they are (through
// argument::contiguous(), which honours any strides) instead of widening to the compute type:
// the result is bit-exact for every dtype, NaN payloads included.
#include "conflux/ops/data_movement.hpp"

#include "ops/attribute_reader.hpp"

#include <algorithm>
#include <cstring>

#include "conflux/util/checked_size.hpp"
#include "index_checks.hpp"
#include "op_helpers.hpp"

namespace conflux::op {

namespace {

// Reads the indices of `axis` and maps each into [0, len).
std::vector<std::int64_t> normalised_indices(const std::string& op, const argument& indices,
                                             std::size_t len, std::size_t axis) {
    auto idx = to_vector<std::int64_t>(indices);
    for (auto& i : idx)
        i = std::int64_t(normalised_index(op, i, len, axis));
    return idx;
}

} // namespace

std::string_view pad_mode_name(pad_mode m) {
    switch (m) {
    case pad_mode::constant:
        return "constant";
    case pad_mode::reflect:
        return "reflect";
    case pad_mode::edge:
        return "edge";
    }
    return "?";
}

// ---- concat ----

concat concat::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).integer("axis")};
}

shape concat::compute_shape(const std::vector<shape>& in) const {
    CONFLUX_USER_CHECK(!in.empty(), name(), ": expects at least 1 input, got 0");
    const shape& first = in[0];
    check_axis(name(), axis, first.rank());
    auto ax = std::size_t(axis);
    dims lens = first.lens();
    lens[ax] = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        const shape& s = in[i];
        CONFLUX_USER_CHECK(s.type() == first.type(), name(), ": input ", i, " has type ",
                           to_string(s.type()), " but input 0 has ", to_string(first.type()));
        CONFLUX_USER_CHECK(s.rank() == first.rank(), name(), ": input ", i, " has rank ", s.rank(),
                           " but input 0 has rank ", first.rank());
        for (std::size_t d = 0; d < s.rank(); ++d)
            CONFLUX_USER_CHECK(d == ax || s.lens()[d] == first.lens()[d], name(), ": input ", i,
                               " [", to_string(s.lens()), "] differs from input 0 [",
                               to_string(first.lens()), "] in axis ", d, " (concat axis ", axis,
                               ")");
        auto sum = add_size(lens[ax], s.lens()[ax]);
        CONFLUX_USER_CHECK(sum.has_value(), name(), ": the inputs together are longer than ",
                           max_tensor_elements_text, " in axis ", axis);
        lens[ax] = *sum;
    }
    return {first.type(), lens};
}

argument concat::eval(const shape& out, const std::vector<argument>& in) const {
    argument result{shape{out.type(), out.lens()}};
    auto ax = std::size_t(axis);
    std::size_t esize = size_of(out.type());
    std::size_t outer = product(out.lens(), 0, ax);
    std::size_t inner = product(out.lens(), ax + 1, out.rank());
    std::size_t out_row = out.lens()[ax] * inner * esize;
    std::size_t at = 0; // byte offset of the current input's slab inside an output row
    for (const auto& a : in) {
        std::size_t row = a.get_shape().lens()[ax] * inner * esize;
        if (row == 0 || outer == 0) continue;
        argument c = a.contiguous();
        for (std::size_t o = 0; o < outer; ++o)
            std::memcpy(result.data() + o * out_row + at, c.data() + o * row, row);
        at += row;
    }
    return result;
}

// ---- pad ----

nlohmann::json pad::attributes() const {
    return {{"pads", pads}, {"value", value}, {"mode", pad_mode_name(mode)}};
}

pad pad::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.pads = r.integers("pads"),
            .value = r.real("value"),
            .mode = r.choice("mode", all_pad_modes, pad_mode_name)};
}

shape pad::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    const shape& s = in[0];
    std::size_t r = s.rank();
    CONFLUX_USER_CHECK(pads.size() == 2 * r, name(), ": expects ", 2 * r,
                       " pads (begins then ends) for rank ", r, ", got ", pads.size());
    dims lens = s.lens();
    for (std::size_t d = 0; d < r; ++d) {
        std::int64_t b = pads[d];
        std::int64_t e = pads[d + r];
        CONFLUX_USER_CHECK(b >= 0 && e >= 0, name(), ": pads must be non-negative, got ", b,
                           " and ", e, " for axis ", d);
        CONFLUX_USER_CHECK(mode == pad_mode::constant || s.lens()[d] > 0 || (b == 0 && e == 0),
                           name(), ": ", pad_mode_name(mode), " mode cannot pad axis ", d,
                           ", which is empty");
        auto grown = add_size(s.lens()[d], std::size_t(b));
        if (grown) grown = add_size(*grown, std::size_t(e));
        CONFLUX_USER_CHECK(grown.has_value(), name(), ": pads ", b, " and ", e, " make axis ", d,
                           " of length ", s.lens()[d], " longer than ", max_tensor_elements_text);
        lens[d] = *grown;
    }
    return {s.type(), lens};
}

argument pad::eval(const shape& out, const std::vector<argument>& in) const {
    argument src = in.at(0).contiguous();
    const shape& s = src.get_shape();
    std::size_t r = s.rank();
    argument result{shape{out.type(), out.lens()}};
    if (out.elements() == 0) return result;
    if (r == 0) {
        std::memcpy(result.data(), src.data(), size_of(out.type()));
        return result;
    }

    // Per axis, the source index of every output position, or -1 for the constant.
    std::vector<std::vector<std::int64_t>> source(r);
    for (std::size_t d = 0; d < r; ++d) {
        auto n = std::int64_t(s.lens()[d]);
        std::int64_t before = pads[d];
        auto& map = source[d];
        map.resize(out.lens()[d]);
        for (std::size_t j = 0; j < map.size(); ++j) {
            std::int64_t i = std::int64_t(j) - before;
            if (i >= 0 && i < n) {
                map[j] = i;
            } else if (mode == pad_mode::constant) {
                map[j] = -1;
            } else if (mode == pad_mode::edge || n == 1) {
                map[j] = i < 0 ? 0 : n - 1;
            } else {
                // Reflection without repeating the border is periodic with period 2(n-1).
                std::int64_t period = 2 * (n - 1);
                std::int64_t m = ((i % period) + period) % period;
                map[j] = m < n ? m : period - m;
            }
        }
    }

    dims in_strides = s.strides();
    std::size_t last = r - 1;
    std::size_t row_len = out.lens()[last];
    std::size_t rows = out.elements() / row_len;
    const auto& last_map = source[last];
    visit_storage(out.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        const S* x = src.typed<S>();
        S* y = result.typed<S>();
        S fill = convert_value<S>(value);
        for (std::size_t row = 0; row < rows; ++row) {
            // Decompose the row number once per row rather than once per element.
            std::size_t rest = row;
            std::size_t base = 0;
            bool inside = true;
            for (std::size_t d = last; d-- > 0;) {
                std::int64_t m = source[d][rest % out.lens()[d]];
                rest /= out.lens()[d];
                if (m < 0)
                    inside = false;
                else
                    base += std::size_t(m) * in_strides[d];
            }
            S* dst = y + row * row_len;
            for (std::size_t j = 0; j < row_len; ++j) {
                std::int64_t m = last_map[j];
                dst[j] = (inside && m >= 0) ? x[base + std::size_t(m)] : fill;
            }
        }
    });
    return result;
}

// ---- gather ----

gather gather::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).integer("axis")};
}

shape gather::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 2);
    const shape& data = in[0];
    const shape& indices = in[1];
    check_axis(name(), axis, data.rank());
    check_indices_type(name(), indices);
    dims lens(data.lens().begin(), data.lens().begin() + axis);
    lens.insert(lens.end(), indices.lens().begin(), indices.lens().end());
    lens.insert(lens.end(), data.lens().begin() + axis + 1, data.lens().end());
    return {data.type(), lens};
}

argument gather::eval(const shape& out, const std::vector<argument>& in) const {
    const shape& ds = in.at(0).get_shape();
    auto ax = std::size_t(axis);
    std::size_t n = ds.lens().at(ax);
    auto idx = normalised_indices(name(), in.at(1), n, ax);
    argument result{shape{out.type(), out.lens()}};
    std::size_t outer = product(ds.lens(), 0, ax);
    std::size_t inner = product(ds.lens(), ax + 1, ds.rank());
    std::size_t esize = size_of(ds.type());
    std::size_t block = inner * esize;
    if (block == 0 || outer == 0 || idx.empty()) return result;
    argument data = in[0].contiguous();
    std::byte* dst = result.data();
    for (std::size_t o = 0; o < outer; ++o) {
        const std::byte* slab = data.data() + o * n * block;
        for (auto i : idx) {
            std::memcpy(dst, slab + std::size_t(i) * block, block);
            dst += block;
        }
    }
    return result;
}

// ---- gather_elements ----

gather_elements gather_elements::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).integer("axis")};
}

shape gather_elements::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 2);
    const shape& data = in[0];
    const shape& indices = in[1];
    check_axis(name(), axis, data.rank());
    check_indices_type(name(), indices);
    CONFLUX_USER_CHECK(indices.rank() == data.rank(), name(), ": indices rank ", indices.rank(),
                       " differs from data rank ", data.rank());
    for (std::size_t d = 0; d < data.rank(); ++d)
        CONFLUX_USER_CHECK(d == std::size_t(axis) || indices.lens()[d] <= data.lens()[d], name(),
                           ": indices [", to_string(indices.lens()), "] exceed data [",
                           to_string(data.lens()), "] in axis ", d);
    return {data.type(), indices.lens()};
}

argument gather_elements::eval(const shape& out, const std::vector<argument>& in) const {
    const shape& ds = in.at(0).get_shape();
    auto ax = std::size_t(axis);
    auto idx = normalised_indices(name(), in.at(1), ds.lens().at(ax), ax);
    argument result{shape{out.type(), out.lens()}};
    if (idx.empty()) return result;
    argument data = in[0].contiguous();
    const dims& lens = out.lens();
    dims strides = shape::standard_strides(ds.lens());
    std::size_t r = lens.size();
    visit_storage(out.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        const S* x = data.typed<S>();
        S* y = result.typed<S>();
        // Odometer over the indices' lens tracking the data offset of every axis but `axis`.
        dims count(r, 0);
        std::size_t base = 0;
        for (std::size_t e = 0; e < idx.size(); ++e) {
            y[e] = x[base + std::size_t(idx[e]) * strides[ax]];
            for (std::size_t d = r; d-- > 0;) {
                std::size_t step = d == ax ? 0 : strides[d];
                base += step;
                if (++count[d] < lens[d]) break;
                base -= step * lens[d];
                count[d] = 0;
            }
        }
    });
    return result;
}

// ---- trilu ----

trilu trilu::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.upper = r.flag("upper"), .k = r.integer("k")};
}

shape trilu::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 1);
    const shape& x = in[0];
    CONFLUX_USER_CHECK(x.rank() >= 2, name(), ": expects a matrix or a batch of them, got rank ",
                       x.rank());
    return x.as_standard();
}

bool trilu::keeps(std::size_t row, std::size_t col) const {
    // Tensors hold at most 2^48 elements, so col - row cannot overflow.
    const std::int64_t diagonal = std::int64_t(col) - std::int64_t(row);
    return upper ? diagonal >= k : diagonal <= k;
}

argument trilu::eval(const shape& out, const std::vector<argument>& in) const {
    argument result{shape{out.type(), out.lens()}}; // zero-initialised: the dropped elements
    if (out.elements() == 0) return result;
    argument data = in.at(0).contiguous();
    const std::size_t rows = out.lens()[out.rank() - 2];
    const std::size_t cols = out.lens()[out.rank() - 1];
    const std::size_t matrices = out.elements() / (rows * cols);
    visit_storage(out.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        const S* x = data.typed<S>();
        S* y = result.typed<S>();
        for (std::size_t b = 0; b < matrices; ++b)
            for (std::size_t i = 0; i < rows; ++i)
                for (std::size_t j = 0; j < cols; ++j) {
                    const std::size_t e = (b * rows + i) * cols + j;
                    if (keeps(i, j)) y[e] = x[e];
                }
    });
    return result;
}

// ---- gather_nd ----

gather_nd gather_nd::from_attributes(const nlohmann::json& a) {
    return {attribute_reader(a).integer("batch_dims")};
}

shape gather_nd::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 2);
    const shape& data = in[0];
    const shape& indices = in[1];
    check_indices_type(name(), indices);
    const std::size_t r = data.rank();
    const std::size_t q = indices.rank();
    CONFLUX_USER_CHECK(r >= 1 && q >= 1, name(), ": data and indices need rank 1 or more, got ", r,
                       " and ", q);
    CONFLUX_USER_CHECK(batch_dims >= 0 && std::size_t(batch_dims) < std::min(r, q), name(),
                       ": batch_dims ", batch_dims, " must be less than the ranks of data (", r,
                       ") and indices (", q, ")");
    const auto b = std::size_t(batch_dims);
    for (std::size_t d = 0; d < b; ++d)
        CONFLUX_USER_CHECK(data.lens()[d] == indices.lens()[d], name(), ": indices [",
                           to_string(indices.lens()), "] and data [", to_string(data.lens()),
                           "] differ in batch axis ", d);
    const std::size_t k = indices.lens().back();
    CONFLUX_USER_CHECK(k >= 1 && k <= r - b, name(), ": the indices' last axis has length ", k,
                       " but must be in [1, ", r - b, "] (data rank ", r, " less batch_dims ", b,
                       ")");
    dims lens(indices.lens().begin(), indices.lens().end() - 1);
    lens.insert(lens.end(), data.lens().begin() + std::ptrdiff_t(b + k), data.lens().end());
    return {data.type(), lens};
}

argument gather_nd::eval(const shape& out, const std::vector<argument>& in) const {
    const shape& ds = in.at(0).get_shape();
    const shape& is = in.at(1).get_shape();
    const auto b = std::size_t(batch_dims);
    const std::size_t k = is.lens().back();
    argument result{shape{out.type(), out.lens()}};
    const auto idx = to_vector<std::int64_t>(in[1]);
    const std::size_t rows = idx.size() / std::max<std::size_t>(k, 1);
    const std::size_t rows_per_batch = product(is.lens(), b, is.rank() - 1);
    const dims strides = shape::standard_strides(ds.lens());
    const std::size_t batch_block = b == 0 ? 0 : strides[b - 1];
    const std::size_t esize = size_of(ds.type());
    const std::size_t slice = product(ds.lens(), b + k, ds.rank()) * esize;
    argument data = in[0].contiguous();
    for (std::size_t row = 0; row < rows; ++row) {
        // Every index is checked, even where there is nothing to copy.
        std::size_t from = rows_per_batch == 0 ? 0 : (row / rows_per_batch) * batch_block;
        for (std::size_t j = 0; j < k; ++j) {
            from += normalised_index(name(), idx[row * k + j], ds.lens()[b + j], b + j) *
                    strides[b + j];
        }
        if (slice != 0) std::memcpy(result.data() + row * slice, data.data() + from * esize, slice);
    }
    return result;
}

} // namespace conflux::op
