// Typed attribute access. Some old exporters leave AttributeProto.type unset; then the field
// that is filled decides, so such models still import.
#include "onnx/node_context.hpp"

namespace conflux::onnx {

using ::onnx::AttributeProto;

namespace {

bool is_type(const AttributeProto& a, AttributeProto::AttributeType want, bool filled) {
    return a.type() == want || (a.type() == AttributeProto::UNDEFINED && filled);
}

std::string type_name(const AttributeProto& a) {
    if (::onnx::AttributeProto_AttributeType_IsValid(a.type()))
        return ::onnx::AttributeProto_AttributeType_Name(a.type());
    return std::to_string(int(a.type()));
}

} // namespace

const AttributeProto* node_context::attribute(std::string_view name) const {
    for (const auto& a : node_.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

std::optional<std::int64_t> node_context::attr_int(std::string_view name) const {
    const auto* a = attribute(name);
    if (!a) return std::nullopt;
    if (!is_type(*a, AttributeProto::INT, a->has_i()))
        fail("attribute '", name, "' should be INT, got ", type_name(*a));
    return a->i();
}

std::int64_t node_context::attr_int(std::string_view name, std::int64_t def) const {
    return attr_int(name).value_or(def);
}

std::optional<float> node_context::attr_float(std::string_view name) const {
    const auto* a = attribute(name);
    if (!a) return std::nullopt;
    // An integer written where a float is expected is harmless; accept it.
    if (is_type(*a, AttributeProto::INT, a->has_i()) && !a->has_f()) return float(a->i());
    if (!is_type(*a, AttributeProto::FLOAT, a->has_f()))
        fail("attribute '", name, "' should be FLOAT, got ", type_name(*a));
    return a->f();
}

float node_context::attr_float(std::string_view name, float def) const {
    return attr_float(name).value_or(def);
}

std::string node_context::attr_string(std::string_view name, const std::string& def) const {
    const auto* a = attribute(name);
    if (!a) return def;
    if (!is_type(*a, AttributeProto::STRING, a->has_s()))
        fail("attribute '", name, "' should be STRING, got ", type_name(*a));
    return a->s();
}

std::optional<std::vector<std::int64_t>> node_context::attr_ints(std::string_view name) const {
    const auto* a = attribute(name);
    if (!a) return std::nullopt;
    if (!is_type(*a, AttributeProto::INTS, true))
        fail("attribute '", name, "' should be INTS, got ", type_name(*a));
    return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<std::int64_t> node_context::attr_ints(std::string_view name,
                                                  const std::vector<std::int64_t>& def) const {
    auto v = attr_ints(name);
    return v ? *v : def;
}

std::optional<std::vector<float>> node_context::attr_floats(std::string_view name) const {
    const auto* a = attribute(name);
    if (!a) return std::nullopt;
    if (!is_type(*a, AttributeProto::FLOATS, true))
        fail("attribute '", name, "' should be FLOATS, got ", type_name(*a));
    return std::vector<float>(a->floats().begin(), a->floats().end());
}

std::optional<argument> node_context::attr_tensor(std::string_view name) const {
    const auto* a = attribute(name);
    if (!a) return std::nullopt;
    if (!is_type(*a, AttributeProto::TENSOR, a->has_t()))
        fail("attribute '", name, "' should be TENSOR, got ", type_name(*a));
    try {
        return to_argument(a->t(), external_);
    } catch (const user_error& e) {
        fail("attribute '", name, "': ", e.what());
    }
}

} // namespace conflux::onnx
