// .npy reading and writing. Files for the reader are assembled byte by byte here so the tests
// do not depend on numpy; the writer is checked byte for byte against what numpy writes.
#include "conflux/ir/npy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace npy_test {

using namespace conflux;
namespace fs = std::filesystem;

namespace {

// A scratch directory per test (ctest runs tests as parallel processes).
class npy : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("conflux_npy_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    fs::path dir_;
};

std::string npy_bytes(int major, const std::string& dict, const std::string& data) {
    std::string header = dict;
    std::size_t len_bytes = major == 1 ? 2 : 4;
    std::size_t total = 8 + len_bytes + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    std::string out = "\x93NUMPY";
    out.push_back(char(major));
    out.push_back(0);
    for (std::size_t i = 0; i < len_bytes; ++i)
        out.push_back(char((header.size() >> (8 * i)) & 0xff));
    return out + header + data;
}

template <class T> std::string raw(std::initializer_list<T> values) {
    std::string s(values.size() * sizeof(T), '\0');
    std::memcpy(s.data(), std::data(values), s.size());
    return s;
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string error_of(const std::string& path) {
    try {
        read_npy(path);
    } catch (const user_error& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST_F(npy, writes_what_numpy_writes) {
    // np.save(f, np.arange(6, dtype='<f4').reshape(2, 3)): the dict, room for the first axis to
    // grow to 21 digits, padding to a 64-byte boundary, '\n', then the data.
    auto a = from_vector<float>(dtype::f32, {2, 3}, std::vector<float>{0, 1, 2, 3, 4, 5});
    write_npy(path("a.npy"), a);
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                           std::string(118 - dict.size() - 1, ' ') + "\n" +
                           raw<float>({0, 1, 2, 3, 4, 5});
    EXPECT_EQ(read_file(path("a.npy")), expected);
}

TEST_F(npy, header_ends_on_a_64_byte_boundary) {
    write_npy(path("a.npy"),
              from_vector<std::int64_t>(dtype::i64, {3}, std::vector<std::int64_t>{7, 8, 9}));
    std::string bytes = read_file(path("a.npy"));
    EXPECT_NE(bytes.find("'shape': (3,), }"), std::string::npos) << bytes;
    ASSERT_EQ(bytes.size(), 128u + 24u);
    EXPECT_EQ(bytes[127], '\n');

    write_npy(path("s.npy"), from_vector<float>(dtype::f32, {}, std::vector<float>{1}));
    bytes = read_file(path("s.npy"));
    ASSERT_EQ(bytes.size(), 128u + 4u);
    EXPECT_EQ(bytes[127], '\n');
}

TEST_F(npy, round_trips_every_dtype) {
    std::vector<double> values{0, 1, -2, 3.5, 100, -0.25};
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::i8, dtype::u8,
                    dtype::i32, dtype::i64, dtype::boolean}) {
        SCOPED_TRACE(std::string(to_string(t)));
        auto v = values;
        if (is_integral(t))
            for (auto& x : v)
                x = x < 0 ? -x : std::floor(x);
        if (t == dtype::boolean)
            for (auto& x : v)
                x = x > 2 ? 1 : 0;
        auto a = from_vector<double>(t, {3, 2}, v);
        write_npy(path("x.npy"), a);
        auto b = read_npy(path("x.npy"));
        // bf16 has no numpy type and comes back as the f32 holding the same values.
        EXPECT_EQ(b.get_shape().type(), t == dtype::bf16 ? dtype::f32 : t);
        EXPECT_EQ(b.get_shape().lens(), (dims{3, 2}));
        EXPECT_EQ(to_vector<double>(b), to_vector<double>(a));
    }
}

TEST_F(npy, round_trips_scalars_and_empty_arrays) {
    write_npy(path("s.npy"), from_vector<float>(dtype::f32, {}, std::vector<float>{2.5f}));
    auto s = read_npy(path("s.npy"));
    EXPECT_TRUE(s.get_shape().scalar());
    EXPECT_EQ(to_vector<float>(s), std::vector<float>{2.5f});

    write_npy(path("e.npy"), argument{shape{dtype::i32, {0, 4}}});
    auto e = read_npy(path("e.npy"));
    EXPECT_EQ(e.get_shape().lens(), (dims{0, 4}));
    EXPECT_EQ(e.get_shape().type(), dtype::i32);
}

TEST_F(npy, writes_non_standard_arguments_in_logical_order) {
    // [[0, 1, 2], [3, 4, 5]] transposed through strides: logical [[0, 3], [1, 4], [2, 5]].
    auto a = from_vector<float>(dtype::f32, {2, 3}, std::vector<float>{0, 1, 2, 3, 4, 5});
    argument t = a.view(shape{dtype::f32, {3, 2}, {1, 3}});
    write_npy(path("t.npy"), t);
    auto b = read_npy(path("t.npy"));
    EXPECT_TRUE(b.get_shape().standard());
    EXPECT_EQ(to_vector<float>(b), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST_F(npy, reads_fortran_order_through_strides) {
    // Logical [[1, 2, 3], [4, 5, 6]] stored column-major.
    write_file(path("f.npy"),
               npy_bytes(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
                         raw<double>({1, 4, 2, 5, 3, 6})));
    auto a = read_npy(path("f.npy"));
    EXPECT_EQ(a.get_shape().lens(), (dims{2, 3}));
    EXPECT_EQ(a.get_shape().strides(), (dims{1, 2}));
    EXPECT_EQ(to_vector<double>(a), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST_F(npy, reads_versions_two_and_three) {
    for (int major : {2, 3}) {
        write_file(path("v.npy"),
                   npy_bytes(major, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
                             raw<std::int32_t>({-5, 6})));
        auto a = read_npy(path("v.npy"));
        EXPECT_EQ(to_vector<std::int64_t>(a), (std::vector<std::int64_t>{-5, 6})) << major;
    }
}

TEST_F(npy, reads_byte_order_variants_and_loose_headers) {
    // Keys in another order, double quotes, no trailing comma, native '=' and '<u1'.
    write_file(path("u.npy"),
               npy_bytes(1, "{\"shape\": (2, 2), \"fortran_order\": False, \"descr\": \"<u1\"}",
                         raw<std::uint8_t>({1, 2, 250, 4})));
    auto u = read_npy(path("u.npy"));
    EXPECT_EQ(u.get_shape().type(), dtype::u8);
    EXPECT_EQ(to_vector<int>(u), (std::vector<int>{1, 2, 250, 4}));

    write_file(path("n.npy"),
               npy_bytes(1, "{'descr': '=f2', 'fortran_order': False, 'shape': (1,), }",
                         raw<std::uint16_t>({0x3c00})));
    auto n = read_npy(path("n.npy"));
    EXPECT_EQ(n.get_shape().type(), dtype::f16);
    EXPECT_EQ(to_vector<float>(n), std::vector<float>{1.0f});
}

TEST_F(npy, normalises_bool_bytes) {
    write_file(path("b.npy"),
               npy_bytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                         raw<std::uint8_t>({0, 1, 7})));
    auto b = read_npy(path("b.npy"));
    EXPECT_EQ(b.get_shape().type(), dtype::boolean);
    EXPECT_EQ(to_vector<int>(b), (std::vector<int>{0, 1, 1}));
}

TEST_F(npy, truncated_data_is_an_error_naming_the_file) {
    write_file(path("t.npy"),
               npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                         raw<float>({1, 2, 3})));
    auto msg = error_of(path("t.npy"));
    EXPECT_NE(msg.find("t.npy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST_F(npy, truncated_header_is_an_error) {
    std::string full = npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                                 raw<float>({1, 2}));
    write_file(path("h.npy"), full.substr(0, 30));
    auto msg = error_of(path("h.npy"));
    EXPECT_NE(msg.find("h.npy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST_F(npy, bad_files_are_user_errors) {
    write_file(path("m.npy"), "PK\x03\x04 not an npy file");
    EXPECT_NE(error_of(path("m.npy")).find("not a .npy file"), std::string::npos);

    write_file(
        path("be.npy"),
        npy_bytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", raw<float>({1})));
    auto msg = error_of(path("be.npy"));
    EXPECT_NE(msg.find("big-endian"), std::string::npos) << msg;
    EXPECT_NE(msg.find("be.npy"), std::string::npos) << msg;

    write_file(path("c.npy"),
               npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                         raw<float>({1, 0})));
    EXPECT_NE(error_of(path("c.npy")).find("unsupported .npy dtype '<c8'"), std::string::npos);

    write_file(
        path("g.npy"),
        npy_bytes(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", raw<float>({1})));
    EXPECT_NE(error_of(path("g.npy")).find("corrupt"), std::string::npos);

    EXPECT_NE(error_of(path("missing.npy")).find("cannot open"), std::string::npos);
}

// A shape whose element count wraps (2^62+1 times 4 is 4 modulo 2^64) must not be read as 4
// elements matching 16 data bytes.
TEST_F(npy, a_shape_past_the_size_bound_is_a_user_error) {
    write_file(
        path("w.npy"),
        npy_bytes(1,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387905, 4), }",
                  raw<float>({1, 2, 3, 4})));
    auto msg = error_of(path("w.npy"));
    EXPECT_NE(msg.find("w.npy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4611686018427387905"), std::string::npos) << msg;

    write_file(path("n.npy"),
               npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
                         raw<float>({1})));
    EXPECT_NE(error_of(path("n.npy")).find("n.npy"), std::string::npos);
}

TEST_F(npy, unwritable_path_is_a_user_error) {
    auto a = from_vector<float>(dtype::f32, {1}, std::vector<float>{1});
    EXPECT_THROW(write_npy(path("no/such/dir/a.npy"), a), user_error);
}

} // namespace npy_test
