#include "conflux/ir/shape.hpp"

#include "conflux/util/checked_size.hpp"

#include <algorithm>
#include <numeric>

namespace conflux {

dims shape::standard_strides(const dims& lens) {
    dims strides(lens.size(), 1);
    for (std::size_t i = lens.size(); i > 1; --i)
        strides[i - 2] = strides[i - 1] * std::max<std::size_t>(lens[i - 1], 1);
    return strides;
}

namespace {

// Every shape is checked where it is made, so no later product of its lens or strides (element
// counts, byte sizes, offsets, the strides of a reshape) can wrap. Sizes come from models,
// options and files: a shape past the bound is the user's error; the op or node that asked for
// it is named by whoever catches it (the importer prefixes the node).
void check_lens(const dims& lens) {
    CONFLUX_USER_CHECK(bounded_extent(lens).has_value(), "shape [", to_string(lens),
                       "] has more than ", max_tensor_elements_text,
                       " elements, the most a tensor may have");
}

// The largest offset the strides reach, or nullopt past the bound. Axes of len 0 and 1 reach
// nothing, whatever their stride.
std::optional<std::size_t> bounded_last_offset(const dims& lens, const dims& strides) {
    std::size_t last = 0;
    for (std::size_t i = 0; i < lens.size(); ++i) {
        if (lens[i] <= 1) continue;
        auto reach = mul_size(lens[i] - 1, strides[i]);
        if (!reach) return std::nullopt;
        auto sum = add_size(last, *reach);
        if (!sum) return std::nullopt;
        last = *sum;
    }
    return last;
}

} // namespace

shape::shape(dtype type, dims lens) : type_(type), lens_(std::move(lens)) {
    check_lens(lens_);
    strides_ = standard_strides(lens_);
}

shape::shape(dtype type, dims lens, dims strides)
    : type_(type), lens_(std::move(lens)), strides_(std::move(strides)) {
    CONFLUX_ASSERT(lens_.size() == strides_.size(), "lens and strides differ in rank");
    check_lens(lens_);
    CONFLUX_USER_CHECK(bounded_last_offset(lens_, strides_).has_value(), "shape [",
                       to_string(lens_), "] with strides [", to_string(strides_),
                       "] spans more than ", max_tensor_elements_text,
                       " elements, the most a tensor may have");
}

shape::shape(std::vector<shape> elements) : tuple_(true), sub_shapes_(std::move(elements)) {}

std::size_t shape::elements() const {
    return std::accumulate(lens_.begin(), lens_.end(), std::size_t{1}, std::multiplies<>{});
}

std::size_t shape::element_space() const {
    if (elements() == 0) return 0;
    std::size_t last = 0;
    for (std::size_t i = 0; i < lens_.size(); ++i)
        last += (lens_[i] - 1) * strides_[i];
    return last + 1;
}

bool shape::standard() const {
    if (elements() <= 1) return true;
    auto expected = standard_strides(lens_);
    for (std::size_t i = 0; i < lens_.size(); ++i)
        if (lens_[i] != 1 && strides_[i] != expected[i]) return false;
    return true;
}

bool shape::packed() const {
    if (elements() <= 1) return true;
    // Sort axes of len > 1 by stride; each stride must be the product of the faster lens.
    std::vector<std::size_t> axes;
    for (std::size_t i = 0; i < lens_.size(); ++i)
        if (lens_[i] != 1) axes.push_back(i);
    std::sort(axes.begin(), axes.end(),
              [&](std::size_t a, std::size_t b) { return strides_[a] < strides_[b]; });
    std::size_t expected = 1;
    for (auto a : axes) {
        if (strides_[a] != expected) return false;
        expected *= lens_[a];
    }
    return true;
}

bool shape::transposed() const {
    return packed() && !standard();
}

bool shape::broadcasted() const {
    for (std::size_t i = 0; i < lens_.size(); ++i)
        if (lens_[i] > 1 && strides_[i] == 0) return true;
    return false;
}

std::size_t shape::index(const dims& idx) const {
    std::size_t off = 0;
    for (std::size_t i = 0; i < idx.size(); ++i)
        off += idx[i] * strides_[i];
    return off;
}

std::size_t shape::index_of_element(std::size_t i) const {
    std::size_t off = 0;
    for (std::size_t k = lens_.size(); k-- > 0;) {
        off += (i % lens_[k]) * strides_[k];
        i /= lens_[k];
    }
    return off;
}

dims shape::multi_index(std::size_t i) const {
    dims idx(lens_.size());
    for (std::size_t k = lens_.size(); k-- > 0;) {
        idx[k] = i % lens_[k];
        i /= lens_[k];
    }
    return idx;
}

std::string to_string(const dims& d) {
    std::string s;
    for (std::size_t i = 0; i < d.size(); ++i)
        s += (i ? "," : "") + std::to_string(d[i]);
    return s;
}

std::string to_string(const shape& s) {
    if (s.is_tuple()) {
        std::string out = "(";
        for (std::size_t i = 0; i < s.sub_shapes().size(); ++i)
            out += (i ? ", " : "") + to_string(s.sub_shapes()[i]);
        return out + ")";
    }
    std::string out = std::string(to_string(s.type())) + "[" + to_string(s.lens()) + "]";
    if (!s.standard()) out += "{" + to_string(s.strides()) + "}";
    return out;
}

} // namespace conflux
