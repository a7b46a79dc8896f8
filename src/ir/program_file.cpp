#include "conflux/ir/program_file.hpp"

#include "conflux/util/errors.hpp"
#include "conflux/util/read_file.hpp"

#define XXH_INLINE_ALL // header-only: the binary needs no libxxhash on the GPU machine
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace conflux {

namespace {

constexpr char magic[8] = {'\x89', 'C', 'F', 'X', '\r', '\n', '\x1a', '\n'};
constexpr std::size_t preamble_bytes = 24;
constexpr std::size_t digest_bytes = sizeof(XXH128_canonical_t);
constexpr std::size_t blob_alignment = 64;

std::size_t align_up(std::size_t n) {
    return (n + blob_alignment - 1) / blob_alignment * blob_alignment;
}

void put_u32(std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(char((v >> (8 * i)) & 0xff));
}

void put_u64(std::string& out, std::uint64_t v) {
    put_u32(out, std::uint32_t(v));
    put_u32(out, std::uint32_t(v >> 32));
}

std::uint32_t get_u32(const unsigned char* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
           std::uint32_t(p[3]) << 24;
}

std::uint64_t get_u64(const unsigned char* p) {
    return std::uint64_t(get_u32(p)) | std::uint64_t(get_u32(p + 4)) << 32;
}

std::string quoted(const std::filesystem::path& path) {
    return "program file '" + path.string() + "'";
}

} // namespace

void write_program_file(const std::filesystem::path& path, nlohmann::json header,
                        const std::vector<std::pair<std::string, nlohmann::json>>& sections,
                        const blob_list& blobs) {
    CONFLUX_ASSERT(header.is_object(), "a program file's header must be an object");
    std::vector<std::vector<std::uint8_t>> bodies;
    nlohmann::json table = nlohmann::json::array();
    std::size_t offset = 0;
    for (const auto& [name, value] : sections) {
        bodies.push_back(nlohmann::json::to_cbor(value));
        table.push_back({{"name", name}, {"offset", offset}, {"bytes", bodies.back().size()}});
        offset += bodies.back().size();
    }
    header["sections"] = std::move(table);
    nlohmann::json blob_table = nlohmann::json::array();
    std::size_t blob_offset = 0;
    for (const auto& b : blobs.blobs) {
        blob_table.push_back({{"offset", blob_offset}, {"bytes", b.size()}});
        blob_offset = align_up(blob_offset + b.size());
    }
    header["blobs"] = std::move(blob_table);
    const std::string header_text = header.dump(1) + "\n";
    CONFLUX_USER_CHECK(header_text.size() < (std::size_t(1) << 31), quoted(path),
                       ": the header is too large");

    std::size_t total = preamble_bytes + header_text.size();
    for (const auto& body : bodies)
        total += body.size();
    for (const auto& b : blobs.blobs)
        total = align_up(total) + b.size();
    total += digest_bytes;
    std::string preamble(magic, sizeof magic);
    put_u32(preamble, program_file_format_version);
    put_u32(preamble, std::uint32_t(header_text.size()));
    put_u64(preamble, total);

    // The temporary is unique per process, so two saves to one path do not write one file.
    const std::filesystem::path temporary = path.string() + ".tmp-" + std::to_string(::getpid());
    XXH3_state_t* state = XXH3_createState();
    CONFLUX_ASSERT(state != nullptr, "XXH3_createState failed");
    XXH3_128bits_reset(state);
    try {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        CONFLUX_USER_CHECK(out.good(), quoted(path), ": cannot create '", temporary.string(), "' (",
                           std::strerror(errno), ")");
        auto put = [&](const void* data, std::size_t bytes) {
            XXH3_128bits_update(state, data, bytes);
            out.write(static_cast<const char*>(data), std::streamsize(bytes));
        };
        put(preamble.data(), preamble.size());
        put(header_text.data(), header_text.size());
        std::size_t written = preamble.size() + header_text.size();
        for (const auto& body : bodies) {
            put(body.data(), body.size());
            written += body.size();
        }
        static const std::uint8_t zeros[blob_alignment] = {};
        for (const auto& b : blobs.blobs) {
            put(zeros, align_up(written) - written);
            written = align_up(written);
            put(b.data(), b.size());
            written += b.size();
        }
        XXH128_canonical_t digest;
        XXH128_canonicalFromHash(&digest, XXH3_128bits_digest(state));
        out.write(reinterpret_cast<const char*>(&digest), sizeof digest);
        out.close();
        CONFLUX_USER_CHECK(!out.fail(), quoted(path), ": writing '", temporary.string(),
                           "' failed (", std::strerror(errno), ")");
        std::error_code ec;
        std::filesystem::rename(temporary, path, ec);
        CONFLUX_USER_CHECK(!ec, quoted(path), ": cannot replace it (", ec.message(), ")");
    } catch (...) {
        XXH3_freeState(state);
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw;
    }
    XXH3_freeState(state);
}

bool is_program_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    char head[sizeof magic] = {};
    in.read(head, sizeof head);
    return in.gcount() == sizeof head && std::memcmp(head, magic, sizeof magic) == 0;
}

// The file's bytes, mapped read-only for the program_file's lifetime.
struct program_file::mapping {
    unsigned char* data = nullptr;
    std::size_t size = 0;
    ~mapping() {
        if (data != nullptr) ::munmap(data, size);
    }
};

program_file::program_file() = default;
program_file::program_file(program_file&&) noexcept = default;
program_file& program_file::operator=(program_file&&) noexcept = default;
program_file::~program_file() = default;

program_file program_file::open(const std::filesystem::path& path) {
    program_file f;
    f.path_ = path;
    f.map_ = std::make_shared<mapping>();
    const std::string what = quoted(path);
    {
        // O_NONBLOCK: a FIFO given as the path is refused below instead of blocking here.
        const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        CONFLUX_USER_CHECK(fd >= 0, what, ": cannot open it (", std::strerror(errno), ")");
        struct stat st {};
        const bool statted = ::fstat(fd, &st) == 0;
        const int stat_errno = errno;
        if (!statted || !S_ISREG(st.st_mode)) {
            ::close(fd);
            CONFLUX_USER_CHECK(statted, what, ": cannot stat it (", std::strerror(stat_errno), ")");
            throw_user_error(what, ": ", describe_file_type(unsigned(st.st_mode)));
        }
        f.map_->size = std::size_t(st.st_size);
        if (f.map_->size >= sizeof magic) {
            // Populated read-only (the digest reads every page anyway; populating a writable
            // private mapping would copy every page), then made writable: code that changes a
            // loaded weight in place changes its own copy of the page, never the file.
            void* p = ::mmap(nullptr, f.map_->size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
            const int map_errno = errno;
            ::close(fd);
            CONFLUX_USER_CHECK(p != MAP_FAILED, what, ": cannot map it (", std::strerror(map_errno),
                               ")");
            if (::mprotect(p, f.map_->size, PROT_READ | PROT_WRITE) != 0) {
                const int protect_errno = errno;
                ::munmap(p, f.map_->size);
                throw_user_error(what, ": cannot map it writable (", std::strerror(protect_errno),
                                 ")");
            }
            f.map_->data = static_cast<unsigned char*>(p);
        } else {
            ::close(fd);
        }
    }
    const unsigned char* data = f.map_->data;
    const std::size_t size = f.map_->size;
    CONFLUX_USER_CHECK(size >= sizeof magic && std::memcmp(data, magic, sizeof magic) == 0, what,
                       ": not a Conflux program file (.cfx): it does not start with the .cfx "
                       "signature");
    CONFLUX_USER_CHECK(size >= preamble_bytes + digest_bytes, what, ": truncated (", size,
                       " bytes, shorter than the smallest .cfx)");
    const std::uint32_t version = get_u32(data + 8);
    CONFLUX_USER_CHECK(version <= program_file_format_version, what, ": format version ", version,
                       " is newer than this Conflux reads (", program_file_format_version,
                       "); use a newer Conflux or compile the model again");
    CONFLUX_USER_CHECK(version == program_file_format_version, what, ": format version ", version,
                       " is older than this Conflux reads (", program_file_format_version,
                       "); compile the model again");
    const std::uint64_t expected = get_u64(data + 16);
    CONFLUX_USER_CHECK(size >= expected, what, ": truncated (", size, " bytes of ", expected, ")");
    CONFLUX_USER_CHECK(size == expected, what, ": corrupted (", size, " bytes, but it says ",
                       expected, ")");
    const std::size_t header_bytes = get_u32(data + 12);
    CONFLUX_USER_CHECK(preamble_bytes + header_bytes + digest_bytes <= size, what, ": truncated (",
                       size, " bytes, but the header alone takes ",
                       preamble_bytes + header_bytes + digest_bytes, ")");

    XXH128_canonical_t stored;
    std::memcpy(&stored, data + size - digest_bytes, digest_bytes);
    const XXH128_hash_t digest = XXH3_128bits(data, size - digest_bytes);
    CONFLUX_USER_CHECK(XXH128_isEqual(digest, XXH128_hashFromCanonical(&stored)), what,
                       ": corrupted or truncated (its digest does not match its content)");

    try {
        f.header_ =
            nlohmann::json::parse(data + preamble_bytes, data + preamble_bytes + header_bytes);
    } catch (const nlohmann::json::exception& e) {
        throw_user_error(what, ": the header is not JSON (", e.what(), ")");
    }
    // Read with the serialisation's checked readers: a damaged entry names its field.
    const std::string where = what + ": header";
    const std::size_t body = preamble_bytes + header_bytes;
    const std::size_t end = size - digest_bytes;
    std::size_t sections_end = body;
    const nlohmann::json& sections = json_array(f.header_, "sections", where);
    for (std::size_t i = 0; i < sections.size(); ++i) {
        const std::string w = where + ".sections[" + std::to_string(i) + "]";
        const std::string name = json_string(sections[i], "name", w);
        const std::size_t offset = json_size(sections[i], "offset", w);
        const std::size_t bytes = json_size(sections[i], "bytes", w);
        CONFLUX_USER_CHECK(offset <= end - body && bytes <= end - body - offset, what,
                           ": section '", name, "' lies outside the file");
        f.sections_.push_back({name, {body + offset, bytes}});
        sections_end = std::max(sections_end, body + offset + bytes);
    }
    const std::size_t blob_area = align_up(sections_end);
    const nlohmann::json& blobs = json_array(f.header_, "blobs", where);
    for (std::size_t i = 0; i < blobs.size(); ++i) {
        const std::string w = where + ".blobs[" + std::to_string(i) + "]";
        const std::size_t offset = json_size(blobs[i], "offset", w);
        const std::size_t bytes = json_size(blobs[i], "bytes", w);
        CONFLUX_USER_CHECK(blob_area <= end && offset <= end - blob_area &&
                               bytes <= end - blob_area - offset && offset % blob_alignment == 0,
                           what, ": blob ", i, " lies outside the file");
        // Aliasing: the blob's pointer owns a share of the whole mapping.
        f.blobs_.emplace_back(
            std::shared_ptr<std::byte>(
                f.map_, reinterpret_cast<std::byte*>(f.map_->data + blob_area + offset)),
            bytes);
    }
    return f;
}

const std::filesystem::path& program_file::path() const {
    return path_;
}

const nlohmann::json& program_file::header() const {
    return header_;
}

bool program_file::has_section(const std::string& name) const {
    for (const auto& s : sections_)
        if (s.first == name) return true;
    return false;
}

namespace {

// Whether s is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
// CBOR text strings must be, but the CBOR reader does not check: a string that is not would be
// carried into names and listings and fail only when printed.
bool is_utf8(const std::string& s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        std::size_t extra = 0;
        std::uint32_t code = 0, least = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            extra = 1, code = c & 0x1f, least = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            extra = 2, code = c & 0x0f, least = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            extra = 3, code = c & 0x07, least = 0x10000;
        } else {
            return false;
        }
        for (std::size_t k = 1; k <= extra; ++k) {
            if (i + k >= s.size()) return false;
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d & 0xc0) != 0x80) return false;
            code = (code << 6) | (d & 0x3f);
        }
        if (code < least || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
        i += extra + 1;
    }
    return true;
}

// The first string (key or value) in j that is not UTF-8, as a JSON pointer; empty if none.
std::string first_non_utf8(const nlohmann::json& j, const std::string& at = "") {
    if (j.is_string()) return is_utf8(j.get_ref<const std::string&>()) ? "" : at.empty() ? "/" : at;
    if (j.is_object()) {
        for (const auto& [key, value] : j.items()) {
            if (!is_utf8(key)) return at + "/(a key)";
            if (auto bad = first_non_utf8(value, at + "/" + key); !bad.empty()) return bad;
        }
    } else if (j.is_array()) {
        for (std::size_t i = 0; i < j.size(); ++i)
            if (auto bad = first_non_utf8(j[i], at + "/" + std::to_string(i)); !bad.empty())
                return bad;
    }
    return "";
}

} // namespace

nlohmann::json program_file::section(const std::string& name) const {
    for (const auto& [n, place] : sections_) {
        if (n != name) continue;
        const unsigned char* begin = map_->data + place.first;
        nlohmann::json j;
        try {
            j = nlohmann::json::from_cbor(begin, begin + place.second);
        } catch (const nlohmann::json::exception& e) {
            throw_user_error(quoted(path_), ": section '", name, "' does not parse (", e.what(),
                             ")");
        }
        if (const std::string bad = first_non_utf8(j); !bad.empty())
            throw_user_error(quoted(path_), ": section '", name, "' holds a string at ", bad,
                             " that is not UTF-8");
        return j;
    }
    throw_user_error(quoted(path_), ": it has no '", name, "' section");
}

} // namespace conflux
