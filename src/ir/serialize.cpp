#include "conflux/ir/serialize.hpp"

#include "conflux/util/errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

namespace conflux {

namespace {

// CBOR stores a non-negative integer as unsigned; one built in code may be a signed value.
bool is_size(const nlohmann::json& v) {
    return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
}

std::optional<std::size_t> as_size(const nlohmann::json& v) {
    if (!is_size(v)) return std::nullopt;
    return v.get<std::size_t>();
}

std::optional<std::int64_t> as_int(const nlohmann::json& v) {
    if (v.is_number_unsigned() &&
        v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        return std::nullopt;
    if (!v.is_number_integer()) return std::nullopt;
    return v.get<std::int64_t>();
}

std::optional<std::string> as_string(const nlohmann::json& v) {
    if (!v.is_string()) return std::nullopt;
    return v.get<std::string>();
}

std::optional<double> as_number(const nlohmann::json& v) {
    if (!v.is_number()) return std::nullopt;
    return v.get<double>();
}

// Converting a finite double beyond f32's range to float is undefined behaviour.
std::optional<float> as_float(const nlohmann::json& v) {
    auto d = as_number(v);
    if (!d || (std::isfinite(*d) && std::fabs(*d) > double(std::numeric_limits<float>::max())))
        return std::nullopt;
    return float(*d);
}

// A value as an error message shows it: a scalar as written, anything else by its kind (a
// damaged field may hold a whole tensor).
std::string describe(const nlohmann::json& v) {
    return v.is_primitive() && !v.is_binary()
               ? v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
               : v.type_name();
}

template <class Read>
auto read_field(const nlohmann::json& j, const char* key, const std::string& what,
                const char* expected, Read read) {
    const auto& v = json_field(j, key, what);
    auto x = read(v);
    CONFLUX_USER_CHECK(x.has_value(), what, ".", key, ": expected ", expected, ", found ",
                       describe(v));
    return *x;
}

template <class Read>
auto read_array(const nlohmann::json& j, const char* key, const std::string& what,
                const char* expected, Read read) {
    std::vector<typename decltype(read(j))::value_type> out;
    for (const auto& v : json_array(j, key, what)) {
        auto x = read(v);
        CONFLUX_USER_CHECK(x.has_value(), what, ".", key, ": expected ", expected, ", found ",
                           describe(v));
        out.push_back(*x);
    }
    return out;
}

} // namespace

const nlohmann::json& json_field(const nlohmann::json& j, const char* key,
                                 const std::string& what) {
    CONFLUX_USER_CHECK(j.is_object(), what, ": expected an object, found ", j.type_name());
    auto it = j.find(key);
    CONFLUX_USER_CHECK(it != j.end(), what, ": the field '", key, "' is missing");
    return *it;
}

std::string json_string(const nlohmann::json& j, const char* key, const std::string& what) {
    const auto& v = json_field(j, key, what);
    CONFLUX_USER_CHECK(v.is_string(), what, ".", key, ": expected a string, found ", v.type_name());
    return v.get<std::string>();
}

std::size_t json_size(const nlohmann::json& j, const char* key, const std::string& what) {
    return read_field(j, key, what, "a non-negative integer", as_size);
}

bool json_bool(const nlohmann::json& j, const char* key, const std::string& what) {
    const auto& v = json_field(j, key, what);
    CONFLUX_USER_CHECK(v.is_boolean(), what, ".", key, ": expected true or false, found ",
                       v.type_name());
    return v.get<bool>();
}

std::int64_t json_int(const nlohmann::json& j, const char* key, const std::string& what) {
    return read_field(j, key, what, "a 64-bit integer", as_int);
}

double json_number(const nlohmann::json& j, const char* key, const std::string& what) {
    return read_field(j, key, what, "a number", as_number);
}

float json_float(const nlohmann::json& j, const char* key, const std::string& what) {
    return read_field(j, key, what, "a number within f32's range", as_float);
}

dtype json_dtype(const nlohmann::json& j, const char* key, const std::string& what) {
    const std::string name = json_string(j, key, what);
    const auto t = parse_dtype(name);
    CONFLUX_USER_CHECK(t.has_value(), what, ".", key, ": unknown element type '", name, "'");
    return *t;
}

const nlohmann::json& json_array(const nlohmann::json& j, const char* key,
                                 const std::string& what) {
    const auto& v = json_field(j, key, what);
    CONFLUX_USER_CHECK(v.is_array(), what, ".", key, ": expected an array, found ", v.type_name());
    return v;
}

dims json_sizes(const nlohmann::json& j, const char* key, const std::string& what) {
    return read_array(j, key, what, "non-negative integers", as_size);
}

std::vector<std::int64_t> json_ints(const nlohmann::json& j, const char* key,
                                    const std::string& what) {
    return read_array(j, key, what, "64-bit integers", as_int);
}

std::vector<double> json_numbers(const nlohmann::json& j, const char* key,
                                 const std::string& what) {
    return read_array(j, key, what, "numbers", as_number);
}

std::vector<std::string> json_strings(const nlohmann::json& j, const char* key,
                                      const std::string& what) {
    return read_array(j, key, what, "strings", as_string);
}

const nlohmann::json::binary_t& json_binary(const nlohmann::json& j, const char* key,
                                            const std::string& what) {
    const auto& v = json_field(j, key, what);
    CONFLUX_USER_CHECK(v.is_binary(), what, ".", key, ": expected binary data, found ",
                       v.type_name());
    return v.get_binary();
}

nlohmann::json shape_to_json(const shape& s) {
    if (s.is_tuple()) {
        nlohmann::json elements = nlohmann::json::array();
        for (const auto& e : s.sub_shapes())
            elements.push_back(shape_to_json(e));
        return {{"tuple", std::move(elements)}};
    }
    return {
        {"type", std::string(to_string(s.type()))}, {"lens", s.lens()}, {"strides", s.strides()}};
}

shape shape_from_json(const nlohmann::json& j, const std::string& what) {
    if (j.is_object() && j.contains("tuple")) {
        std::vector<shape> elements;
        for (const auto& e : json_array(j, "tuple", what))
            elements.push_back(
                shape_from_json(e, what + ".tuple[" + std::to_string(elements.size()) + "]"));
        return shape(std::move(elements));
    }
    const dtype t = json_dtype(j, "type", what);
    dims lens = json_sizes(j, "lens", what);
    dims strides = json_sizes(j, "strides", what);
    CONFLUX_USER_CHECK(lens.size() == strides.size(), what, ": ", lens.size(), " lens but ",
                       strides.size(), " strides");
    return {t, std::move(lens), std::move(strides)};
}

nlohmann::json blob_list::add(const void* data, std::size_t bytes) {
    blobs.emplace_back(static_cast<const std::uint8_t*>(data), bytes);
    return {{"blob", blobs.size() - 1}};
}

nlohmann::json argument_to_json(const argument& a, blob_list* blobs) {
    const shape& s = a.get_shape();
    if (s.is_tuple()) {
        nlohmann::json elements = nlohmann::json::array();
        for (const auto& e : a.sub_arguments())
            elements.push_back(argument_to_json(e, blobs));
        return {{"tuple", std::move(elements)}};
    }
    CONFLUX_ASSERT(!a.empty(), "argument_to_json: an argument without data");
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(a.data());
    nlohmann::json data = blobs != nullptr
                              ? blobs->add(bytes, s.bytes())
                              : nlohmann::json(nlohmann::json::binary_t(
                                    std::vector<std::uint8_t>(bytes, bytes + s.bytes())));
    return {{"shape", shape_to_json(s)}, {"data", std::move(data)}};
}

std::pair<std::shared_ptr<std::byte>, std::size_t>
bytes_from_json(const nlohmann::json& j, const std::string& what, const blob_table* blobs) {
    if (j.is_binary()) {
        const auto& b = j.get_binary();
        std::shared_ptr<std::byte> copy(new std::byte[std::max<std::size_t>(b.size(), 1)],
                                        std::default_delete<std::byte[]>());
        if (!b.empty()) std::memcpy(copy.get(), b.data(), b.size());
        return {std::move(copy), b.size()};
    }
    const std::size_t index = json_size(j, "blob", what);
    CONFLUX_USER_CHECK(blobs != nullptr && index < blobs->size(), what, ": blob ", index,
                       " does not exist");
    return (*blobs)[index];
}

argument argument_from_json(const nlohmann::json& j, const std::string& what,
                            const blob_table* blobs) {
    if (j.is_object() && j.contains("tuple")) {
        std::vector<argument> elements;
        for (const auto& e : json_array(j, "tuple", what))
            elements.push_back(argument_from_json(
                e, what + ".tuple[" + std::to_string(elements.size()) + "]", blobs));
        return argument(std::move(elements));
    }
    const shape s = shape_from_json(json_field(j, "shape", what), what + ".shape");
    auto [data, bytes] = bytes_from_json(json_field(j, "data", what), what + ".data", blobs);
    CONFLUX_USER_CHECK(bytes == s.bytes(), what, ".data: ", bytes, " bytes, but its shape ",
                       to_string(s), " takes ", s.bytes());
    return argument(s, std::move(data));
}

} // namespace conflux
