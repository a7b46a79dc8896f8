// Shapes and arguments as JSON values, for saved programs (.cfx). The bytes of an argument travel
// as a JSON binary value, which binary encodings (CBOR) store as they are: a program's weights
// are not turned into text. Reading checks everything, because a file is input: a field that is
// missing or of the wrong kind, an unknown dtype, a shape past the bounds, data of the wrong size
// is a user_error saying which field of `what` is wrong.
#pragma once

#include "conflux/ir/argument.hpp"
#include "conflux/ir/shape.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace conflux {

// {"type": "f16", "lens": [...], "strides": [...]}, or {"tuple": [...]}.
nlohmann::json shape_to_json(const shape& s);
shape shape_from_json(const nlohmann::json& j, const std::string& what);

// Large bytes kept out of the JSON: a program's weights and kernel binaries are stored as raw
// blobs beside it (a .cfx's blob area), and the JSON holds {"blob": index}. Parsing JSON binary
// values copies them byte by byte; a blob is used where it lies (a loaded literal is a view of
// the mapped file, no copy).
struct blob_list {
    // What is written: spans of memory that must stay alive until the file is written.
    std::vector<std::span<const std::uint8_t>> blobs;
    nlohmann::json add(const void* data, std::size_t bytes);
};
// What is read: per blob, its bytes, owned or kept alive by the pointer.
using blob_table = std::vector<std::pair<std::shared_ptr<std::byte>, std::size_t>>;

// {"shape": ..., "data": bytes}: the argument's memory as it is (strides kept, so a broadcast
// literal stays as small as it is), or {"tuple": [...]}. The bytes are a JSON binary value, or a
// blob of `blobs` when given.
nlohmann::json argument_to_json(const argument& a, blob_list* blobs = nullptr);
// Reads either form; a blob reference needs `blobs` (a user_error without it or out of range).
argument argument_from_json(const nlohmann::json& j, const std::string& what,
                            const blob_table* blobs = nullptr);
// The bytes `j` holds, as argument_from_json reads them: a binary value or a blob reference.
std::pair<std::shared_ptr<std::byte>, std::size_t>
bytes_from_json(const nlohmann::json& j, const std::string& what, const blob_table* blobs);

// The field `key` of the object `j`, a user_error naming `what`.key when j is not an object or
// has no such field.
const nlohmann::json& json_field(const nlohmann::json& j, const char* key, const std::string& what);
// Typed reads of a field, with the same errors when the value has another kind.
std::string json_string(const nlohmann::json& j, const char* key, const std::string& what);
std::size_t json_size(const nlohmann::json& j, const char* key, const std::string& what);
bool json_bool(const nlohmann::json& j, const char* key, const std::string& what);
std::int64_t json_int(const nlohmann::json& j, const char* key, const std::string& what);
double json_number(const nlohmann::json& j, const char* key, const std::string& what);
// A number (an integer too: a value written by hand as 1 rather than 1.0) that an f32 holds:
// non-finite values pass, finite ones beyond f32's range do not.
float json_float(const nlohmann::json& j, const char* key, const std::string& what);
dtype json_dtype(const nlohmann::json& j, const char* key, const std::string& what);
const nlohmann::json& json_array(const nlohmann::json& j, const char* key, const std::string& what);
// Arrays whose every element is read as the scalar reads above read one.
dims json_sizes(const nlohmann::json& j, const char* key, const std::string& what);
std::vector<std::int64_t> json_ints(const nlohmann::json& j, const char* key,
                                    const std::string& what);
std::vector<double> json_numbers(const nlohmann::json& j, const char* key, const std::string& what);
std::vector<std::string> json_strings(const nlohmann::json& j, const char* key,
                                      const std::string& what);
const nlohmann::json::binary_t& json_binary(const nlohmann::json& j, const char* key,
                                            const std::string& what);

} // namespace conflux
