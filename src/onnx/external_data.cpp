#include "onnx/external_data.hpp"

#include "conflux/util/errors.hpp"
#include "conflux/util/read_file.hpp"
#include "onnx/onnx.pb.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace conflux::onnx {

namespace fs = std::filesystem;

namespace {

std::uint64_t parse_size(const std::string& text, const std::string& key, const std::string& name) {
    std::uint64_t v = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    CONFLUX_USER_CHECK(!text.empty() && ec == std::errc{} && ptr == end, "tensor '", name,
                       "': external data ", key, " '", text, "' is not a byte count");
    return v;
}

// Whether `p` lies inside `dir` (both absolute and normal).
bool is_inside(const fs::path& p, const fs::path& dir) {
    auto d = dir.begin(), q = p.begin();
    for (; d != dir.end() && !d->empty(); ++d, ++q)
        if (q == p.end() || *q != *d) return false;
    return true;
}

} // namespace

external_data::external_data(std::optional<fs::path> model_dir) : dir_(std::move(model_dir)) {}

external_data::~external_data() {
    for (auto& [location, f] : files_)
        if (f.fd >= 0) ::close(f.fd);
}

const external_data::open_file& external_data::file(const std::string& location,
                                                    const std::string& name) {
    if (auto it = files_.find(location); it != files_.end()) return it->second;
    auto fail = [&](const auto&... why) {
        throw_user_error("tensor '", name, "': external data file '", location, "' ", why...);
    };
    if (!dir_) fail("cannot be found: the model was not read from a file");
    const fs::path rel(location);
    if (location.empty() || rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
        fail("is not a path relative to the model's directory");
    for (const auto& part : rel.lexically_normal())
        if (part == "..") fail("is outside the model's directory");
    std::error_code ec;
    if (!canonical_dir_) {
        canonical_dir_ = fs::weakly_canonical(fs::absolute(*dir_, ec), ec);
        if (ec)
            fail("cannot be found: the model's directory cannot be resolved (", ec.message(), ")");
    }
    const fs::path path = *dir_ / rel;
    // A link inside the directory may still point anywhere.
    const fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
    if (ec || !is_inside(resolved, *canonical_dir_)) fail("is outside the model's directory");

    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) fail("cannot be opened (", std::strerror(errno), ")");
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const unsigned mode = st.st_mode;
        ::close(fd);
        fail("is not usable: ", describe_file_type(mode), ", not a regular file");
    }
    return files_.emplace(location, open_file{fd, std::uint64_t(st.st_size)}).first->second;
}

void external_data::read(const ::onnx::TensorProto& t, const std::string& name, argument& out) {
    std::optional<std::string> location;
    std::uint64_t offset = 0;
    std::optional<std::uint64_t> length;
    for (const auto& entry : t.external_data()) {
        if (entry.key() == "location")
            location = entry.value();
        else if (entry.key() == "offset")
            offset = parse_size(entry.value(), "offset", name);
        else if (entry.key() == "length")
            length = parse_size(entry.value(), "length", name);
        // "checksum" and keys of newer exporters describe the data, they do not locate it.
    }
    CONFLUX_USER_CHECK(location.has_value(), "tensor '", name,
                       "' uses external data but gives no location");
    const std::uint64_t bytes = out.get_shape().bytes();
    CONFLUX_USER_CHECK(!length || *length == bytes, "tensor '", name, "': external data length ",
                       *length, " does not match the ", bytes, " bytes of ",
                       to_string(out.get_shape()));
    const open_file& f = file(*location, name);
    CONFLUX_USER_CHECK(offset <= f.size && bytes <= f.size - offset, "tensor '", name, "': its ",
                       bytes, " bytes of external data at offset ", offset, " of '", *location,
                       "' lie past the file's end (", f.size, " bytes)");
    auto* dst = reinterpret_cast<char*>(out.data());
    for (std::uint64_t done = 0; done < bytes;) {
        const ssize_t n =
            ::pread(f.fd, dst + done, std::size_t(bytes - done), off_t(offset + done));
        if (n < 0 && errno == EINTR) continue;
        CONFLUX_USER_CHECK(n > 0, "tensor '", name, "': reading external data file '", *location,
                           "' failed (", n < 0 ? std::strerror(errno) : "it got shorter", ")");
        done += std::uint64_t(n);
    }
    if (out.get_shape().type() == dtype::boolean) {
        // Any nonzero byte is true; other bit patterns in a bool are undefined.
        auto* p = reinterpret_cast<unsigned char*>(dst);
        for (std::uint64_t i = 0; i < bytes; ++i)
            p[i] = p[i] != 0;
    }
}

} // namespace conflux::onnx
