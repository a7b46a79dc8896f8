// Reads an op's attributes back from the JSON its attributes() wrote (a saved program), for the
// ops' from_attributes. A file is input: every read checks the kind and range of its field and
// fails with a user_error naming it ("attributes.stride: ..."); the program reader adds which
// instruction of which module it was.
#pragma once

#include "conflux/ir/serialize.hpp"
#include "conflux/util/errors.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace conflux::op {

class attribute_reader {
public:
    explicit attribute_reader(const nlohmann::json& j) : j_(j) {}

    std::int64_t integer(const char* key) const { return json_int(j_, key, what_); }
    std::size_t size(const char* key) const { return json_size(j_, key, what_); }
    bool flag(const char* key) const { return json_bool(j_, key, what_); }
    float real(const char* key) const { return json_float(j_, key, what_); }
    dtype type(const char* key) const { return json_dtype(j_, key, what_); }
    std::vector<std::int64_t> integers(const char* key) const { return json_ints(j_, key, what_); }
    dims sizes(const char* key) const { return json_sizes(j_, key, what_); }
    std::vector<double> reals(const char* key) const { return json_numbers(j_, key, what_); }

    // One of `values`, written as `name` writes it.
    template <class E, std::size_t N>
    E choice(const char* key, const E (&values)[N], std::string_view (*name)(E)) const {
        const std::string s = json_string(j_, key, what_);
        for (E v : values)
            if (name(v) == s) return v;
        throw_user_error(what_, ".", key, ": unknown value '", s, "'");
    }

    // Fields that attributes() writes only when they differ from their default (so that the
    // printed text of programs that do not use them stays as it was) are optional here.
    bool has(const char* key) const { return j_.is_object() && j_.contains(key); }
    bool flag_or(const char* key, bool fallback) const { return has(key) ? flag(key) : fallback; }
    float real_or(const char* key, float fallback) const { return has(key) ? real(key) : fallback; }

private:
    const nlohmann::json& j_;
    const std::string what_ = "attributes";
};

} // namespace conflux::op
