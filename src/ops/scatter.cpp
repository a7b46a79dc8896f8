// The scatters copy the data's storage values and combine each update into the copy in the
// updates' row-major order: floating types in their compute type (f32 for f16/bf16, rounded back
// after every update, as numpy's float16 does), integers in their own type with wrap-around, so
// that every dtype gives what the ONNX reference implementation gives.
#include "conflux/ops/scatter.hpp"

#include "ops/attribute_reader.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "index_checks.hpp"
#include "op_helpers.hpp"

namespace conflux::op {

namespace {

// `old` at an update's place combined with the update `u`.
template <class S> S combine(scatter_reduction r, S old, S u) {
    if constexpr (std::is_integral_v<S>) {
        switch (r) {
        case scatter_reduction::none:
            return u;
        case scatter_reduction::add:
            return S(std::uint64_t(old) + std::uint64_t(u));
        case scatter_reduction::mul:
            return S(std::uint64_t(old) * std::uint64_t(u));
        case scatter_reduction::max:
            return old < u ? u : old;
        case scatter_reduction::min:
            return u < old ? u : old;
        }
    } else {
        using C = std::conditional_t<std::is_same_v<S, double>, double, float>;
        const C a = convert_value<C>(old);
        const C b = convert_value<C>(u);
        switch (r) {
        case scatter_reduction::none:
            return u;
        case scatter_reduction::add:
            return convert_value<S>(a + b);
        case scatter_reduction::mul:
            return convert_value<S>(a * b);
        case scatter_reduction::max: // a NaN wins, whichever side it is on
            return (b > a || b != b) ? u : old;
        case scatter_reduction::min:
            return (b < a || b != b) ? u : old;
        }
    }
    return u;
}

// A standard copy of the data that the updates are then combined into.
argument copy_of_data(const shape& out, const argument& data) {
    argument result{shape{out.type(), out.lens()}};
    const argument src = data.contiguous();
    if (out.bytes() != 0) std::memcpy(result.data(), src.data(), out.bytes());
    return result;
}

void check_updates_type(const std::string& op, const shape& data, const shape& updates) {
    CONFLUX_USER_CHECK(updates.type() == data.type(), op, ": updates have type ",
                       to_string(updates.type()), " but data has ", to_string(data.type()));
}

} // namespace

std::string_view scatter_reduction_name(scatter_reduction r) {
    switch (r) {
    case scatter_reduction::none:
        return "none";
    case scatter_reduction::add:
        return "add";
    case scatter_reduction::mul:
        return "mul";
    case scatter_reduction::max:
        return "max";
    case scatter_reduction::min:
        return "min";
    }
    return "?";
}

std::optional<scatter_reduction> parse_scatter_reduction(std::string_view name) {
    for (auto r : all_scatter_reductions)
        if (scatter_reduction_name(r) == name) return r;
    return std::nullopt;
}

// ---- scatter_nd ----

scatter_nd scatter_nd::from_attributes(const nlohmann::json& a) {
    return {
        attribute_reader(a).choice("reduction", all_scatter_reductions, scatter_reduction_name)};
}

shape scatter_nd::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 3);
    const shape& data = in[0];
    const shape& indices = in[1];
    const shape& updates = in[2];
    check_indices_type(name(), indices);
    check_updates_type(name(), data, updates);
    CONFLUX_USER_CHECK(data.rank() >= 1 && indices.rank() >= 1, name(),
                       ": data and indices need rank 1 or more, got ", data.rank(), " and ",
                       indices.rank());
    const std::size_t k = indices.lens().back();
    CONFLUX_USER_CHECK(k <= data.rank(), name(), ": the indices' last axis has length ", k,
                       ", more than the data's rank ", data.rank());
    dims expected(indices.lens().begin(), indices.lens().end() - 1);
    expected.insert(expected.end(), data.lens().begin() + std::ptrdiff_t(k), data.lens().end());
    CONFLUX_USER_CHECK(updates.lens() == expected, name(), ": updates [", to_string(updates.lens()),
                       "] must have lens [", to_string(expected),
                       "] (the indices' lens but the last, then the data's from axis ", k, ")");
    return {data.type(), data.lens()};
}

argument scatter_nd::eval(const shape& out, const std::vector<argument>& in) const {
    const dims& lens = out.lens();
    const std::size_t k = in.at(1).get_shape().lens().back();
    const auto idx = to_vector<std::int64_t>(in[1]);
    const argument upd = in.at(2).contiguous();
    const std::size_t rows = in[1].get_shape().elements() / std::max<std::size_t>(k, 1);
    const std::size_t slice = product(lens, k, lens.size());
    const dims strides = shape::standard_strides(lens);
    argument result = copy_of_data(out, in[0]);
    visit_storage(out.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        S* y = result.typed<S>();
        const S* u = upd.typed<S>();
        for (std::size_t row = 0; row < rows; ++row) {
            std::size_t at = 0;
            for (std::size_t j = 0; j < k; ++j)
                at += normalised_index(name(), idx[row * k + j], lens[j], j) * strides[j];
            for (std::size_t e = 0; e < slice; ++e)
                y[at + e] = combine(reduction, y[at + e], u[row * slice + e]);
        }
    });
    return result;
}

// ---- scatter_elements ----

scatter_elements scatter_elements::from_attributes(const nlohmann::json& a) {
    const attribute_reader r(a);
    return {.axis = r.integer("axis"),
            .reduction = r.choice("reduction", all_scatter_reductions, scatter_reduction_name)};
}

shape scatter_elements::compute_shape(const std::vector<shape>& in) const {
    check_input_count(name(), in, 3);
    const shape& data = in[0];
    const shape& indices = in[1];
    const shape& updates = in[2];
    check_axis(name(), axis, data.rank());
    check_indices_type(name(), indices);
    check_updates_type(name(), data, updates);
    CONFLUX_USER_CHECK(indices.rank() == data.rank(), name(), ": indices rank ", indices.rank(),
                       " differs from data rank ", data.rank());
    CONFLUX_USER_CHECK(updates.lens() == indices.lens(), name(), ": updates [",
                       to_string(updates.lens()), "] differ from indices [",
                       to_string(indices.lens()), "]");
    for (std::size_t d = 0; d < data.rank(); ++d)
        CONFLUX_USER_CHECK(d == std::size_t(axis) || indices.lens()[d] <= data.lens()[d], name(),
                           ": indices [", to_string(indices.lens()), "] exceed data [",
                           to_string(data.lens()), "] in axis ", d);
    return {data.type(), data.lens()};
}

argument scatter_elements::eval(const shape& out, const std::vector<argument>& in) const {
    const auto ax = std::size_t(axis);
    const dims& index_lens = in.at(1).get_shape().lens();
    const auto idx = to_vector<std::int64_t>(in[1]);
    const argument upd = in.at(2).contiguous();
    const dims strides = shape::standard_strides(out.lens());
    const std::size_t r = index_lens.size();
    argument result = copy_of_data(out, in[0]);
    if (idx.empty()) return result;
    visit_storage(out.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        S* y = result.typed<S>();
        const S* u = upd.typed<S>();
        // Odometer over the indices' lens tracking the output offset of every axis but `axis`.
        dims count(r, 0);
        std::size_t base = 0;
        for (std::size_t e = 0; e < idx.size(); ++e) {
            const std::size_t at =
                base + normalised_index(name(), idx[e], out.lens()[ax], ax) * strides[ax];
            y[at] = combine(reduction, y[at], u[e]);
            for (std::size_t d = r; d-- > 0;) {
                const std::size_t step = d == ax ? 0 : strides[d];
                base += step;
                if (++count[d] < index_lens[d]) break;
                base -= step * index_lens[d];
                count[d] = 0;
            }
        }
    });
    return result;
}

} // namespace conflux::op
