// Tensor data stored outside the model file (TensorProto.data_location = EXTERNAL), as PyTorch's
// exporter writes by default (`model.onnx.data`) and as models over protobuf's 2 GiB limit must.
// Each tensor names a file relative to the model's directory and a byte range in it:
// external_data entries `location` (required), `offset` (default 0) and `length` (default: the
// tensor's size; when given it must equal it).
//
// A model is not trusted with paths: a location that is absolute, climbs out of the model's
// directory (`..`, or a symbolic link resolving outside it), names something other than a
// regular file, or a range past the file's end is a user_error naming the tensor and the reason.
// Files are opened once per import (without blocking, so a FIFO is refused rather than waited
// on), and each tensor is read straight into its literal's memory.
#pragma once

#include "conflux/ir/argument.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace onnx {
class TensorProto;
}

namespace conflux::onnx {

class external_data {
public:
    // `model_dir`: the directory locations are relative to; nullopt when the model did not come
    // from a file (any external tensor is then an error saying so).
    explicit external_data(std::optional<std::filesystem::path> model_dir);
    ~external_data();
    external_data(const external_data&) = delete;
    external_data& operator=(const external_data&) = delete;

    // Fills `out` (already shaped as the tensor's dims and dtype) from the tensor's range.
    void read(const ::onnx::TensorProto& t, const std::string& name, argument& out);

private:
    struct open_file {
        int fd = -1;
        std::uint64_t size = 0;
    };
    // The file for `location`, opened and checked once.
    const open_file& file(const std::string& location, const std::string& name);

    std::optional<std::filesystem::path> dir_;
    std::optional<std::filesystem::path> canonical_dir_;
    std::map<std::string, open_file> files_;
};

} // namespace conflux::onnx
