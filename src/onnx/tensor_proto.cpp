// TensorProto -> argument. Data comes either as little-endian raw_data or in the typed repeated
// fields; ONNX stores every type narrower than 32 bits (f16/bf16 bit patterns, i8, u8, bool)
// in int32_data.
#include "conflux/util/read_file.hpp"
#include "onnx/external_data.hpp"
#include "onnx/node_context.hpp"

#include "conflux/util/checked_size.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace conflux::onnx {

using ::onnx::TensorProto;

std::optional<dtype> to_dtype(int onnx_type) {
    switch (onnx_type) {
    case TensorProto::FLOAT:
        return dtype::f32;
    case TensorProto::FLOAT16:
        return dtype::f16;
    case TensorProto::BFLOAT16:
        return dtype::bf16;
    case TensorProto::DOUBLE:
        return dtype::f64;
    case TensorProto::INT8:
        return dtype::i8;
    case TensorProto::UINT8:
        return dtype::u8;
    case TensorProto::INT32:
        return dtype::i32;
    case TensorProto::INT64:
        return dtype::i64;
    case TensorProto::BOOL:
        return dtype::boolean;
    default:
        return std::nullopt;
    }
}

std::string onnx_type_name(int onnx_type) {
    if (::onnx::TensorProto_DataType_IsValid(onnx_type))
        return ::onnx::TensorProto_DataType_Name(TensorProto::DataType(onnx_type));
    return "data type " + std::to_string(onnx_type);
}

namespace {

template <class Field>
void copy_typed(const Field& field, const std::string& name, const char* field_name,
                argument& out) {
    const auto& s = out.get_shape();
    CONFLUX_USER_CHECK(std::size_t(field.size()) == s.elements(), "tensor '", name,
                       "': ", field_name, " holds ", field.size(), " values, expected ",
                       s.elements());
    visit_storage(s.type(), [&](auto tag) {
        using S = typename decltype(tag)::type;
        S* p = out.typed<S>();
        for (int i = 0; i < field.size(); ++i) {
            if constexpr (std::is_same_v<S, float16> || std::is_same_v<S, bfloat16>) {
                // int32_data carries the 16-bit pattern, not the value.
                p[i].bits = std::uint16_t(field.Get(i));
            } else {
                p[i] = convert_value<S>(field.Get(i));
            }
        }
    });
}

} // namespace

argument to_argument(const TensorProto& t, external_data* external) {
    const std::string name = t.name().empty() ? std::string("<unnamed>") : t.name();
    const bool is_external = t.data_location() == TensorProto::EXTERNAL;
    CONFLUX_USER_CHECK(is_external || t.external_data_size() == 0, "tensor '", name,
                       "' lists external data but its data_location is not EXTERNAL");
    CONFLUX_USER_CHECK(!t.has_segment(), "tensor '", name,
                       "' is segmented, which is not supported");
    auto type = to_dtype(t.data_type());
    CONFLUX_USER_CHECK(type.has_value(), "tensor '", name, "' has element type ",
                       onnx_type_name(t.data_type()), ", which is not supported");

    dims lens;
    for (auto d : t.dims()) {
        CONFLUX_USER_CHECK(d >= 0, "tensor '", name, "' has a negative dim (", d, ")");
        lens.push_back(std::size_t(d));
    }
    // Bounded before anything is multiplied; the data checks below then bound it by the file.
    const std::size_t elements = checked_elements(lens, "tensor '" + name + "'");

    shape s{*type, lens};
    const std::size_t esize = size_of(*type);
    if (is_external) {
        CONFLUX_USER_CHECK(!t.has_raw_data(), "tensor '", name,
                           "' has both external data and raw_data");
        CONFLUX_USER_CHECK(external != nullptr, "tensor '", name,
                           "' uses external data, which a tensor file cannot");
        argument out{s};
        external->read(t, name, out);
        return out;
    }
    if (t.has_raw_data()) {
        const auto& raw = t.raw_data();
        CONFLUX_USER_CHECK(raw.size() == elements * esize, "tensor '", name, "': raw_data holds ",
                           raw.size(), " bytes, expected ", elements * esize, " for ",
                           to_string(s));
        argument out{s};
        if (*type == dtype::boolean) {
            // Any nonzero byte is true; copying other bit patterns into a bool is undefined.
            for (std::size_t i = 0; i < elements; ++i)
                out.typed<bool>()[i] = raw[i] != 0;
        } else if (elements != 0) {
            std::memcpy(out.data(), raw.data(), raw.size());
        }
        return out;
    }

    // Check the value count before allocating: data that is not a tensor (an optional or a
    // sequence read as a TensorProto) can claim dims of hundreds of gigabytes.
    std::size_t values = 0;
    switch (*type) {
    case dtype::f32:
        values = std::size_t(t.float_data_size());
        break;
    case dtype::f64:
        values = std::size_t(t.double_data_size());
        break;
    case dtype::i64:
        values = std::size_t(t.int64_data_size());
        break;
    default:
        values = std::size_t(t.int32_data_size());
        break;
    }
    CONFLUX_USER_CHECK(values == elements, "tensor '", name, "' holds ", values,
                       " values but its dims ", to_string(lens), " need ", elements);
    argument out{s};
    switch (*type) {
    case dtype::f32:
        copy_typed(t.float_data(), name, "float_data", out);
        break;
    case dtype::f64:
        copy_typed(t.double_data(), name, "double_data", out);
        break;
    case dtype::i64:
        copy_typed(t.int64_data(), name, "int64_data", out);
        break;
    default:
        copy_typed(t.int32_data(), name, "int32_data", out);
        break;
    }
    return out;
}

argument read_tensor_file(const std::string& path, std::string* name) {
    // Protobuf cannot parse a message of 2 GiB or more.
    const std::string bytes = read_regular_file(path, (std::uint64_t{1} << 31) - 1, "tensor file");
    TensorProto t;
    CONFLUX_USER_CHECK(bytes.size() < std::size_t(std::numeric_limits<int>::max()) &&
                           t.ParseFromArray(bytes.data(), int(bytes.size())),
                       path, ": not a valid ONNX TensorProto file");
    if (name) *name = t.name();
    try {
        return to_argument(t);
    } catch (const user_error& e) {
        throw user_error(one_line(path + ": " + e.what()));
    }
}

argument read_tensor_file(const std::string& path) {
    return read_tensor_file(path, nullptr);
}

} // namespace conflux::onnx
