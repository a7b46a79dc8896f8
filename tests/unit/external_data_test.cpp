// Weights stored outside the model file (ONNX external data), as PyTorch's exporter writes them
// by default, and every way a model can point them somewhere they must not be read from.
#include "conflux/ir/builtin_ops.hpp"
#include "conflux/onnx/import.hpp"
#include "onnx/onnx.pb.h"
#include "onnx_model_builder.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace external_data_test {

using namespace conflux;
using namespace conflux::test;
namespace fs = std::filesystem;

namespace {

using ::onnx::TensorProto;

struct external_data_test : ::testing::Test {
    fs::path dir;
    void SetUp() override {
        static std::atomic<int> counter{0};
        dir = fs::temp_directory_path() /
              ("conflux-external-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
        fs::remove_all(dir);
        fs::create_directories(dir / "model");
    }
    void TearDown() override { fs::remove_all(dir); }

    // Floats as raw little-endian bytes, as exporters write them.
    static std::string bytes_of(const std::vector<float>& v) {
        std::string b(v.size() * sizeof(float), '\0');
        std::memcpy(b.data(), v.data(), b.size());
        return b;
    }
    static void write(const fs::path& p, const std::string& content) {
        std::ofstream(p, std::ios::binary) << content;
    }

    // y = x + w, with w (f32[n]) stored at `location` (entries as given).
    model_builder add_model(std::size_t n,
                            const std::vector<std::pair<std::string, std::string>>& entries) {
        model_builder b;
        b.input("x", TensorProto::FLOAT, {std::int64_t(n)});
        auto* w = b.graph->add_initializer();
        w->set_name("w");
        w->set_data_type(TensorProto::FLOAT);
        w->add_dims(std::int64_t(n));
        w->set_data_location(TensorProto::EXTERNAL);
        for (const auto& [k, v] : entries) {
            auto* e = w->add_external_data();
            e->set_key(k);
            e->set_value(v);
        }
        b.node("Add", {"x", "w"}, {"y"});
        b.output("y");
        return b;
    }
    fs::path save(const model_builder& b) {
        const fs::path p = dir / "model" / "model.onnx";
        write(p, b.bytes());
        return p;
    }
    std::string error_of(const fs::path& model) {
        try {
            conflux::onnx::import_model(model.string());
        } catch (const user_error& e) {
            return e.what();
        }
        ADD_FAILURE() << "expected a user_error";
        return {};
    }
    static std::vector<float> weights_of(const program& p) {
        for (const auto& ins : p.main())
            if (const auto* lit = ins.get_operator().get_if<op::literal>())
                return to_vector<float>(lit->value);
        return {};
    }
};

TEST_F(external_data_test, weights_are_read_from_the_file_next_to_the_model_at_their_offset) {
    // Two tensors' worth in one file, as torch.onnx.export writes model.onnx.data.
    write(dir / "model" / "model.onnx.data", bytes_of({9, 9, 1.5f, -2, 3.25f}));
    const fs::path m =
        save(add_model(3, {{"location", "model.onnx.data"}, {"offset", "8"}, {"length", "12"}}));
    const program p = conflux::onnx::import_model(m.string());
    EXPECT_EQ(weights_of(p), (std::vector<float>{1.5f, -2, 3.25f}));
    // Without offset and length: from the start, the tensor's size; a relative path to the
    // model works the same from its own directory.
    save(add_model(2, {{"location", "model.onnx.data"}}));
    const fs::path cwd = fs::current_path();
    fs::current_path(dir / "model");
    const program q = conflux::onnx::import_model("model.onnx");
    fs::current_path(cwd);
    EXPECT_EQ(weights_of(q), (std::vector<float>{9, 9}));
}

TEST_F(external_data_test, a_subdirectory_of_the_model_directory_is_allowed) {
    fs::create_directories(dir / "model" / "weights");
    write(dir / "model" / "weights" / "w.bin", bytes_of({4, 5}));
    EXPECT_EQ(weights_of(conflux::onnx::import_model(
                  save(add_model(2, {{"location", "weights/./w.bin"}})).string())),
              (std::vector<float>{4, 5}));
}

TEST_F(external_data_test, locations_outside_the_model_directory_are_refused) {
    write(dir / "outside.bin", bytes_of({1, 2}));
    EXPECT_EQ(error_of(save(add_model(2, {{"location", (dir / "outside.bin").string()}}))),
              "tensor 'w': external data file '" + (dir / "outside.bin").string() +
                  "' is not a path relative to the model's directory");
    EXPECT_EQ(error_of(save(add_model(2, {{"location", "../outside.bin"}}))),
              "tensor 'w': external data file '../outside.bin' is outside the model's directory");
    EXPECT_EQ(error_of(save(add_model(2, {{"location", "a/../../outside.bin"}}))),
              "tensor 'w': external data file 'a/../../outside.bin' is outside the model's "
              "directory");
    // A link inside the directory that points out of it.
    fs::create_symlink(dir / "outside.bin", dir / "model" / "link.bin");
    EXPECT_EQ(error_of(save(add_model(2, {{"location", "link.bin"}}))),
              "tensor 'w': external data file 'link.bin' is outside the model's directory");
}

TEST_F(external_data_test, missing_files_short_files_and_bad_ranges_are_user_errors) {
    EXPECT_EQ(error_of(save(add_model(2, {{"location", "none.bin"}}))),
              "tensor 'w': external data file 'none.bin' cannot be opened (No such file or "
              "directory)");
    write(dir / "model" / "w.bin", bytes_of({1, 2, 3}));
    EXPECT_EQ(error_of(save(add_model(4, {{"location", "w.bin"}}))),
              "tensor 'w': its 16 bytes of external data at offset 0 of 'w.bin' lie past the "
              "file's end (12 bytes)");
    EXPECT_EQ(error_of(save(add_model(2, {{"location", "w.bin"}, {"offset", "8"}}))),
              "tensor 'w': its 8 bytes of external data at offset 8 of 'w.bin' lie past the "
              "file's end (12 bytes)");
    EXPECT_EQ(
        error_of(save(add_model(2, {{"location", "w.bin"}, {"offset", "18446744073709551615"}}))),
        "tensor 'w': its 8 bytes of external data at offset 18446744073709551615 of "
        "'w.bin' lie past the file's end (12 bytes)");
    EXPECT_EQ(error_of(save(add_model(2, {{"location", "w.bin"}, {"length", "4"}}))),
              "tensor 'w': external data length 4 does not match the 8 bytes of f32[2]");
    EXPECT_EQ(error_of(save(add_model(2, {{"location", "w.bin"}, {"offset", "-4"}}))),
              "tensor 'w': external data offset '-4' is not a byte count");
    EXPECT_EQ(error_of(save(add_model(2, {{"offset", "0"}}))),
              "tensor 'w' uses external data but gives no location");
}

TEST_F(external_data_test, directories_and_fifos_are_refused_without_blocking) {
    fs::create_directories(dir / "model" / "sub");
    EXPECT_EQ(error_of(save(add_model(2, {{"location", "sub"}}))),
              "tensor 'w': external data file 'sub' is not usable: it is a directory, not a "
              "regular file");
    ASSERT_EQ(::mkfifo((dir / "model" / "fifo.bin").c_str(), 0600), 0);
    EXPECT_EQ(error_of(save(add_model(2, {{"location", "fifo.bin"}}))),
              "tensor 'w': external data file 'fifo.bin' is not usable: it is a FIFO (named "
              "pipe), not a regular file");
}

TEST_F(external_data_test, a_model_from_memory_needs_a_directory_for_its_external_data) {
    write(dir / "model" / "w.bin", bytes_of({7, 8}));
    const model_builder b = add_model(2, {{"location", "w.bin"}});
    try {
        b.import();
        ADD_FAILURE() << "expected a user_error";
    } catch (const user_error& e) {
        EXPECT_STREQ(e.what(), "tensor 'w': external data file 'w.bin' cannot be found: the "
                               "model was not read from a file");
    }
    conflux::onnx::import_options options;
    options.external_data_dir = dir / "model";
    EXPECT_EQ(weights_of(b.import(options)), (std::vector<float>{7, 8}));
}

TEST_F(external_data_test, external_entries_without_the_external_location_are_refused) {
    model_builder b = add_model(2, {{"location", "w.bin"}});
    b.graph->mutable_initializer(0)->set_data_location(TensorProto::DEFAULT);
    EXPECT_EQ(error_of(save(b)),
              "tensor 'w' lists external data but its data_location is not EXTERNAL");
}

} // namespace

} // namespace external_data_test
