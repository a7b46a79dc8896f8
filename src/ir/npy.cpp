// The .npy format: magic "\x93NUMPY", a version byte pair, a little-endian header length (2 bytes
// in 1.0, 4 bytes in 2.0/3.0), then a Python dict literal naming descr, fortran_order and shape,
// padded with spaces to an alignment boundary and ended by '\n'; the raw data follows.
#include "conflux/ir/npy.hpp"

#include "conflux/util/checked_size.hpp"

#include "conflux/util/read_file.hpp"

#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string_view>

namespace conflux {

namespace {

static_assert(std::endian::native == std::endian::little,
              "npy I/O copies little-endian data as it is");

constexpr std::string_view magic = "\x93NUMPY";

struct npy_header {
    std::string descr;
    bool fortran_order = false;
    dims lens;
};

// A small reader for the one Python literal numpy writes: a dict of str keys whose values are
// str, bool or a tuple of ints.
class header_parser {
public:
    header_parser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

    npy_header parse() {
        npy_header h;
        bool have_descr = false, have_order = false, have_shape = false;
        expect('{');
        while (true) {
            skip_space();
            if (peek() == '}') break;
            std::string key = parse_string();
            expect(':');
            if (key == "descr") {
                h.descr = parse_string();
                have_descr = true;
            } else if (key == "fortran_order") {
                h.fortran_order = parse_bool();
                have_order = true;
            } else if (key == "shape") {
                h.lens = parse_tuple();
                have_shape = true;
            } else {
                fail("unknown header key '" + key + "'");
            }
            skip_space();
            if (peek() == ',') {
                ++pos_;
                continue;
            }
            skip_space();
            if (peek() != '}') fail("expected ',' or '}' in header");
        }
        if (!have_descr || !have_order || !have_shape)
            fail("header lacks one of 'descr', 'fortran_order', 'shape'");
        return h;
    }

private:
    [[noreturn]] void fail(const std::string& why) const {
        throw_user_error("'", path_, "': corrupt .npy header: ", why);
    }
    void skip_space() {
        while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                       text_[pos_] == '\n' || text_[pos_] == '\r'))
            ++pos_;
    }
    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
    void expect(char c) {
        skip_space();
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++pos_;
    }
    std::string parse_string() {
        skip_space();
        char quote = peek();
        if (quote != '\'' && quote != '"') fail("expected a quoted string");
        ++pos_;
        auto end = text_.find(quote, pos_);
        if (end == std::string_view::npos) fail("unterminated string");
        std::string s{text_.substr(pos_, end - pos_)};
        pos_ = end + 1;
        return s;
    }
    bool parse_bool() {
        skip_space();
        if (text_.substr(pos_, 4) == "True") {
            pos_ += 4;
            return true;
        }
        if (text_.substr(pos_, 5) == "False") {
            pos_ += 5;
            return false;
        }
        fail("fortran_order is neither True nor False");
    }
    dims parse_tuple() {
        dims lens;
        expect('(');
        while (true) {
            skip_space();
            if (peek() == ')') break;
            if (peek() < '0' || peek() > '9') fail("shape holds a non-integer");
            std::size_t v = 0;
            while (peek() >= '0' && peek() <= '9') {
                std::size_t next = v * 10 + std::size_t(peek() - '0');
                if (next / 10 != v) fail("shape value overflows");
                v = next;
                ++pos_;
            }
            if (peek() == 'L') ++pos_; // Python 2 long literal
            lens.push_back(v);
            skip_space();
            if (peek() == ',')
                ++pos_;
            else if (peek() != ')')
                fail("expected ',' or ')' in shape");
        }
        ++pos_;
        return lens;
    }

    std::string_view text_;
    const std::string& path_;
    std::size_t pos_ = 0;
};

dtype parse_descr(const std::string& descr, const std::string& path) {
    CONFLUX_USER_CHECK(descr.size() >= 3, "'", path, "': unsupported .npy dtype '", descr, "'");
    char order = descr[0];
    std::string_view kind = std::string_view(descr).substr(1);
    bool single_byte = kind == "i1" || kind == "u1" || kind == "b1";
    CONFLUX_USER_CHECK(
        order == '<' || order == '|' || order == '=' || (order == '>' && single_byte), "'", path,
        "': big-endian .npy data ('", descr,
        "') is not supported; save it little-endian (e.g. a.astype('<", descr.substr(1), "'))");
    CONFLUX_USER_CHECK(order == '<' || order == '|' || order == '=' || order == '>', "'", path,
                       "': unsupported .npy byte order in '", descr, "'");
    if (kind == "f2") return dtype::f16;
    if (kind == "f4") return dtype::f32;
    if (kind == "f8") return dtype::f64;
    if (kind == "i1") return dtype::i8;
    if (kind == "u1") return dtype::u8;
    if (kind == "i4") return dtype::i32;
    if (kind == "i8") return dtype::i64;
    if (kind == "b1") return dtype::boolean;
    throw_user_error("'", path, "': unsupported .npy dtype '", descr,
                     "' (supported: f2 f4 f8 i1 u1 i4 i8 b1)");
}

// Far above any input a GPU takes; the bound keeps a sparse or runaway file from being read
// into memory whole.
constexpr std::uint64_t max_npy_bytes = std::uint64_t{16} << 30;

std::string read_file_bytes(const std::string& path) {
    return read_regular_file(path, max_npy_bytes, ".npy file");
}

std::uint32_t read_le(std::string_view bytes, std::size_t pos, std::size_t n) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
        v |= std::uint32_t(std::uint8_t(bytes[pos + i])) << (8 * i);
    return v;
}

const char* descr_of(dtype t) {
    switch (t) {
    case dtype::f16:
        return "<f2";
    case dtype::f32:
    case dtype::bf16: // numpy has no bf16; f32 holds every bf16 value exactly
        return "<f4";
    case dtype::f64:
        return "<f8";
    case dtype::i8:
        return "|i1";
    case dtype::u8:
        return "|u1";
    case dtype::i32:
        return "<i4";
    case dtype::i64:
        return "<i8";
    case dtype::boolean:
        return "|b1";
    }
    throw_internal_error("no .npy descr for dtype ", int(t));
}

} // namespace

argument read_npy(const std::string& path) {
    std::string bytes = read_file_bytes(path);
    CONFLUX_USER_CHECK(bytes.size() >= 10 && std::string_view(bytes).substr(0, 6) == magic, "'",
                       path, "' is not a .npy file (bad magic)");
    auto major = std::uint8_t(bytes[6]);
    CONFLUX_USER_CHECK(major >= 1 && major <= 3, "'", path, "': unsupported .npy version ",
                       int(major), ".", int(std::uint8_t(bytes[7])));
    std::size_t len_bytes = major == 1 ? 2 : 4;
    CONFLUX_USER_CHECK(bytes.size() >= 8 + len_bytes, "'", path, "' is truncated (in the header)");
    std::size_t header_len = read_le(bytes, 8, len_bytes);
    std::size_t data_start = 8 + len_bytes + header_len;
    CONFLUX_USER_CHECK(bytes.size() >= data_start, "'", path, "' is truncated (header says ",
                       header_len, " bytes, file has ", bytes.size() - 8 - len_bytes, ")");

    npy_header h =
        header_parser(std::string_view(bytes).substr(8 + len_bytes, header_len), path).parse();
    dtype type = parse_descr(h.descr, path);
    // Before any product of the dims: (2^62+1, 4) multiplies out to 4 elements and would pass
    // as 16 data bytes.
    checked_elements(h.lens, "'" + path + "'");

    // Fortran order is column-major: the first axis is fastest, so the strides are the prefix
    // products of the lens. The data is kept as it is and read through those strides.
    dims strides = shape::standard_strides(h.lens);
    if (h.fortran_order) {
        std::size_t s = 1;
        for (std::size_t i = 0; i < h.lens.size(); ++i) {
            strides[i] = s;
            s *= h.lens[i];
        }
    }
    shape s{type, h.lens, strides};
    std::size_t want = s.elements() * size_of(type);
    std::size_t have = bytes.size() - data_start;
    CONFLUX_USER_CHECK(have >= want, "'", path, "' is truncated: ", to_string(s.as_standard()),
                       " needs ", want, " data bytes, file has ", have);
    CONFLUX_USER_CHECK(have == want, "'", path, "' is corrupt: ", have - want,
                       " bytes follow the data of ", to_string(s.as_standard()));

    argument a{s};
    if (want != 0) std::memcpy(a.data(), bytes.data() + data_start, want);
    if (type == dtype::boolean) {
        // A bool object must hold 0 or 1; normalise whatever byte numpy (or anyone) wrote.
        auto* p = reinterpret_cast<unsigned char*>(a.data());
        for (std::size_t i = 0; i < want; ++i)
            p[i] = p[i] != 0 ? 1 : 0;
    }
    return a;
}

void write_npy(const std::string& path, const argument& value) {
    const shape& s = value.get_shape();
    dtype type = s.type();
    dtype file_type = type == dtype::bf16 ? dtype::f32 : type;

    std::ostringstream dict;
    dict << "{'descr': '" << descr_of(type) << "', 'fortran_order': False, 'shape': (";
    for (std::size_t i = 0; i < s.rank(); ++i) {
        dict << s.lens()[i];
        if (s.rank() == 1 || i + 1 < s.rank()) dict << ",";
        if (i + 1 < s.rank()) dict << " ";
    }
    dict << "), }";
    std::string header = dict.str();
    // Like np.save: room for the first axis to grow in place to 21 digits, then padding so that
    // the data starts on a 64-byte boundary (magic 6 + version 2 + length 2 bytes precede the
    // header). The files are then byte-identical to numpy's.
    if (s.rank() > 0) header.append(21 - std::to_string(s.lens()[0]).size(), ' ');
    std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    CONFLUX_ASSERT(header.size() <= 0xffff, "npy header too long");

    std::string out;
    out.append(magic);
    out.push_back('\x01');
    out.push_back('\x00');
    out.push_back(char(header.size() & 0xff));
    out.push_back(char(header.size() >> 8));
    out += header;

    std::size_t n = s.elements();
    if (type == dtype::bf16) {
        auto values = to_vector<float>(value);
        out.append(reinterpret_cast<const char*>(values.data()), n * sizeof(float));
    } else if (n != 0) {
        argument packed = value.contiguous();
        out.append(reinterpret_cast<const char*>(packed.data()), n * size_of(file_type));
    }

    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    CONFLUX_USER_CHECK(f, "cannot write '", path, "': ", std::strerror(errno));
    f.write(out.data(), std::streamsize(out.size()));
    f.close();
    CONFLUX_USER_CHECK(f, "cannot write '", path, "': ", std::strerror(errno));
}

} // namespace conflux
