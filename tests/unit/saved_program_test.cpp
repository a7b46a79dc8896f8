// Compiled-program files (.cfx): a program compiled for sm_90 here (NVRTC needs no GPU), saved,
// loaded, and compared with the one that was compiled; and every kind of bad file, each a
// user_error naming the file and the reason. Running a loaded program is tests/gpu's and the GPU
// suite's (scripts/gpu_suite.sh: outputs bit-identical to the compiling process).
#include "conflux/cuda/saved_program.hpp"
#include "conflux/ir/random_argument.hpp"
#include "conflux/onnx/import.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/ref/evaluate.hpp"

#include "test_files.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace saved_program_test {

using namespace conflux;
using namespace conflux::test;
namespace fs = std::filesystem;

namespace {

class saved_program_file : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("conflux_cfx_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    static cuda::compiled_program compile_model(const std::string& relative,
                                                const std::string& arch = "sm_90",
                                                std::optional<dtype> precision = {}) {
        cuda::compile_options options;
        options.arch = arch;
        options.precision = precision;
        options.use_kernel_cache = false;
        options.use_problem_cache = false;
        return cuda::compile(
            conflux::onnx::import_model(std::string(CONFLUX_SOURCE_DIR) + "/" + relative), options);
    }

    // The message of the user_error loading `path` gives (a failure when it loads).
    static std::string load_error(const fs::path& path) {
        try {
            (void)load_program(path);
        } catch (const user_error& e) {
            return e.what();
        }
        ADD_FAILURE() << path << " loaded";
        return {};
    }

    static std::string load_error_with_reference(const fs::path& path) {
        try {
            (void)load_program(path, true);
        } catch (const user_error& e) {
            return e.what();
        }
        ADD_FAILURE() << path << " loaded";
        return {};
    }

    fs::path dir_;
};

std::string listing(const cuda::compiled_program& p) {
    std::ostringstream os;
    p.print(os);
    return os.str();
}

void expect_contains(const std::string& text, const std::string& part) {
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

} // namespace

TEST_F(saved_program_file, a_loaded_program_is_the_compiled_one) {
    struct model_case {
        const char* path;
        std::optional<dtype> precision;
    };
    for (const model_case& m :
         {model_case{"examples/conv_block.onnx", {}},
          model_case{"tests/models/data/grouped_query_attention/model.onnx", dtype::f16},
          // Attention with grouped heads and rotary positions; depthwise convolutions and
          // squeeze-and-excitation.
          model_case{"tests/zoo/data/hf_llama_dynamo/model.onnx", dtype::f16},
          model_case{"tests/zoo/data/tv_mobilenet_v3_small_dynamo/model.onnx", {}}}) {
        SCOPED_TRACE(m.path);
        const cuda::compiled_program compiled = compile_model(m.path, "sm_90", m.precision);
        const fs::path file = dir_ / "model.cfx";
        save_program(file, compiled, m.path);
        const saved_program saved = load_program(file);
        ASSERT_TRUE(saved.cuda.has_value());
        EXPECT_EQ(saved.target, "cuda");
        EXPECT_EQ(saved.header.at("arch"), "sm_90");
        EXPECT_EQ(saved.header.at("model"), m.path);
        const cuda::compiled_program& loaded = *saved.cuda;
        EXPECT_EQ(listing(loaded), listing(compiled));
        EXPECT_EQ(loaded.parameter_names(), compiled.parameter_names());
        EXPECT_EQ(loaded.parameter_shapes(), compiled.parameter_shapes());
        EXPECT_EQ(loaded.output_names(), compiled.output_names());
        EXPECT_EQ(loaded.output_shapes(), compiled.output_shapes());
        EXPECT_EQ(loaded.trace(), compiled.trace());
        EXPECT_EQ(loaded.anchor_candidates(), compiled.anchor_candidates());
        EXPECT_EQ(loaded.stats().kernels, compiled.stats().kernels);
        EXPECT_EQ(loaded.stats().literal_bytes, compiled.stats().literal_bytes);
        EXPECT_EQ(loaded.stats().tf32_anchors, compiled.stats().tf32_anchors);
        // The kernels: the same sources and the same binaries, byte for byte.
        const auto a = compiled.write_cubins(dir_ / "compiled");
        const auto b = loaded.write_cubins(dir_ / "loaded");
        const auto sa = compiled.write_sources(dir_ / "compiled");
        const auto sb = loaded.write_sources(dir_ / "loaded");
        ASSERT_EQ(a.size(), b.size());
        ASSERT_FALSE(a.empty());
        for (std::size_t i = 0; i < a.size(); ++i) {
            EXPECT_EQ(slurp(a[i]), slurp(b[i])) << a[i];
            EXPECT_EQ(slurp(sa[i]), slurp(sb[i])) << sa[i];
        }
        // Saved again, the loaded program gives the same file but for the time it was written.
        const fs::path again = dir_ / "again.cfx";
        save_program(again, loaded, m.path);
        const std::string first = slurp(file), second = slurp(again);
        ASSERT_EQ(first.size(), second.size());
        std::size_t differ = 0;
        for (std::size_t i = 0; i < first.size(); ++i)
            differ += first[i] != second[i];
        EXPECT_LE(differ, 16u + 20u) << "bytes differ beyond the digest and the creation time";
        fs::remove_all(dir_ / "compiled");
        fs::remove_all(dir_ / "loaded");
    }
}

TEST_F(saved_program_file, the_header_says_what_the_file_holds) {
    const fs::path file = dir_ / "conv.cfx";
    save_program(file, compile_model("examples/conv_block.onnx", "sm_80"), "conv_block.onnx");
    const std::string bytes = slurp(file);
    // Readable without Conflux: the JSON header follows the 16-byte preamble.
    expect_contains(bytes.substr(0, 4096), "\"target\": \"cuda\"");
    expect_contains(bytes.substr(0, 4096), "\"arch\": \"sm_80\"");
    expect_contains(bytes.substr(0, 4096), "\"cuda_runtime\"");
    expect_contains(bytes.substr(0, 4096), "\"conflux\": \"" CONFLUX_VERSION "\"");
    const saved_program saved = load_program(file);
    EXPECT_EQ(saved.cuda->stats().arch, "sm_80");
}

TEST_F(saved_program_file, every_bad_file_is_one_clear_user_error) {
    const fs::path good = dir_ / "good.cfx";
    save_program(good, compile_model("examples/conv_block.onnx"), "conv_block.onnx");
    const std::string bytes = slurp(good);
    ASSERT_GT(bytes.size(), 1000u);
    auto variant = [&](const std::string& name, const std::string& content) {
        const fs::path p = dir_ / name;
        write_text(p, content);
        return p;
    };

    expect_contains(load_error(std::string(CONFLUX_SOURCE_DIR) + "/examples/conv_block.onnx"),
                    "not a Conflux program file (.cfx)");
    expect_contains(load_error(variant("empty.cfx", "")), "not a Conflux program file");
    expect_contains(load_error(variant("text.cfx", "hello, world\n")), "not a Conflux program");
    expect_contains(load_error(dir_ / "missing.cfx"), "cannot open it");
    expect_contains(load_error(dir_), "directory");
    const fs::path fifo = dir_ / "fifo.cfx";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    expect_contains(load_error(fifo), "FIFO");

    for (std::size_t keep :
         {std::size_t(9), std::size_t(20), std::size_t(200), bytes.size() / 2, bytes.size() - 1}) {
        const std::string message =
            load_error(variant("cut" + std::to_string(keep) + ".cfx", bytes.substr(0, keep)));
        SCOPED_TRACE(message);
        expect_contains(message, "truncated");
        expect_contains(message, "cut" + std::to_string(keep) + ".cfx");
    }
    // One flipped bit anywhere: the header, the CBOR sections, a blob (the weights and
    // cubins are at the end), the digest itself.
    for (std::size_t at : {std::size_t(40), std::size_t(600), bytes.size() / 2, bytes.size() - 100,
                           bytes.size() - 1}) {
        std::string flipped = bytes;
        flipped[at] = char(flipped[at] ^ 0x10);
        const std::string message = load_error(variant("flip.cfx", flipped));
        SCOPED_TRACE(at);
        expect_contains(message, "corrupted");
        expect_contains(message, "flip.cfx");
    }
    std::string newer = bytes;
    newer[8] = char(program_file_format_version + 1);
    expect_contains(load_error(variant("newer.cfx", newer)), "is newer than this Conflux reads");
    std::string older = bytes;
    older[8] = 0;
    expect_contains(load_error(variant("older.cfx", older)), "older than this Conflux reads");
}

TEST_F(saved_program_file, content_that_is_not_a_program_is_a_user_error_naming_the_field) {
    // Well-formed containers (the digest matches) around wrong content.
    const fs::path p = dir_ / "odd.cfx";
    write_program_file(p, {{"target", "tpu"}}, {});
    expect_contains(load_error(p), "'tpu' is not a target");
    write_program_file(p, {{"conflux", "0.1.0"}}, {});
    expect_contains(load_error(p), "'target' is missing");
    write_program_file(p, {{"target", "cuda"}}, {});
    expect_contains(load_error(p), "header: the field 'precision' is missing");
    write_program_file(p, {{"target", "cuda"}, {"precision", "f16"}}, {});
    expect_contains(load_error(p), "no 'stats' section");

    // A model with temporaries in the arena.
    const fs::path good = dir_ / "good.cfx";
    save_program(good, compile_model("tests/models/data/grouped_query_attention/model.onnx"),
                 "gqa.onnx");
    const program_file file = program_file::open(good);
    nlohmann::json cuda = file.section("cuda");
    const nlohmann::json stats = file.section("stats");
    auto write = [&](const nlohmann::json& section) {
        blob_list blobs;
        for (const auto& [data, bytes] : file.blobs())
            blobs.add(data.get(), bytes);
        write_program_file(p, file.header(), {{"stats", stats}, {"cuda", section}}, blobs);
    };
    auto rewrite = [&](const nlohmann::json& section) {
        write(section);
        return load_error(p);
    };
    write(cuda);
    EXPECT_NO_THROW((void)load_program(p));
    ASSERT_FALSE(cuda["temporaries"].empty());
    nlohmann::json bad = cuda;
    bad["steps"][0]["kernel"] = 1000;
    expect_contains(rewrite(bad), "steps[0]: kernel 1000 out of range");
    bad = cuda;
    bad["steps"][0]["args"][0]["byte_offset"] = std::size_t(1) << 40;
    expect_contains(rewrite(bad), "steps[0]: an operand reaches past");
    bad = cuda;
    bad["literals"][0]["data"]["blob"] = 100000;
    expect_contains(rewrite(bad), "blob 100000 does not exist");
    bad = cuda;
    bad.erase("kernels");
    expect_contains(rewrite(bad), "section 'cuda': the field 'kernels' is missing");
    bad = cuda;
    bad["plan"]["arena_bytes"] = 0;
    expect_contains(rewrite(bad), "outside the arena");
    // CBOR text that is not UTF-8 (found by fuzz_cfx_load: it failed only when printed).
    bad = cuda;
    bad["kernels"][0]["entry"] = std::string("cx_k\x9b");
    expect_contains(rewrite(bad),
                    "section 'cuda' holds a string at /kernels/0/entry that is not UTF-8");
    bad = cuda;
    bad["kernels"][0]["entry"] = std::string("cx_\xe0\x80\x80"); // an overlong NUL
    expect_contains(rewrite(bad), "not UTF-8");
    bad = cuda;
    bad["kernels"][0]["entry"] = std::string("cx_\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"); // é € 😀
    // Well-formed multi-byte text is not refused for its encoding.
    {
        write(bad);
        try {
            (void)load_program(p);
        } catch (const user_error& e) {
            EXPECT_EQ(std::string(e.what()).find("UTF-8"), std::string::npos) << e.what();
        }
    }
}

TEST_F(saved_program_file, a_failed_save_leaves_the_old_file) {
    const fs::path file = dir_ / "keep.cfx";
    write_text(file, "precious");
    const fs::path blocked = dir_ / "no_such_dir" / "x.cfx";
    EXPECT_THROW(save_program(blocked, compile_model("examples/conv_block.onnx"), "m"), user_error);
    EXPECT_EQ(slurp(file), "precious");
    EXPECT_FALSE(fs::exists(blocked));
}

TEST_F(saved_program_file, a_reference_program_and_a_stored_model_load_as_saved) {
    const std::string model =
        std::string(CONFLUX_SOURCE_DIR) + "/tests/models/data/grouped_query_attention/model.onnx";
    program optimised = conflux::onnx::import_model(model);
    run_passes(optimised.main(),
               target_independent_passes(reduced_precision{dtype::f16}, fuse_attention{}));
    const fs::path ref_file = dir_ / "ref.cfx";
    save_program(ref_file, optimised, "gqa.onnx");
    saved_program ref = load_program(ref_file);
    EXPECT_EQ(ref.target, "ref");
    EXPECT_FALSE(ref.cuda.has_value());
    ASSERT_TRUE(ref.reference.has_value());
    EXPECT_EQ(ref.reference->to_string(), optimised.to_string());
    // Weights as blobs: the loaded literals are the saved bytes.
    std::mt19937_64 rng(1);
    ref::parameter_map params;
    for (instruction_ref p : optimised.main().parameters())
        params.emplace(p->get_operator().get_if<op::param>()->name_,
                       random_argument(p->get_shape(), rng));
    const auto a = ref::evaluate(optimised, params);
    const auto b = ref::evaluate(*ref.reference, params);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_TRUE(a[i].same_values(b[i]));

    // A cuda program with the model as imported beside it, for verify.
    const program imported = conflux::onnx::import_model(model);
    const fs::path cuda_file = dir_ / "cuda.cfx";
    save_program(
        cuda_file,
        compile_model("tests/models/data/grouped_query_attention/model.onnx", "sm_90", dtype::f16),
        "gqa.onnx", dtype::f16, &imported);
    const saved_program without = load_program(cuda_file);
    EXPECT_FALSE(without.reference.has_value());
    EXPECT_EQ(without.precision, dtype::f16);
    const saved_program with = load_program(cuda_file, true);
    ASSERT_TRUE(with.reference.has_value());
    EXPECT_EQ(with.reference->to_string(), imported.to_string());
    const fs::path bare = dir_ / "bare.cfx";
    save_program(bare, *with.cuda, "gqa.onnx");
    expect_contains(load_error_with_reference(bare), "saved without the model");
}

TEST_F(saved_program_file, tma_tensor_maps_are_saved_and_bad_ones_are_user_errors) {
    // f16 matrix products forced onto a _tma config: its kernels take tensor maps, which the
    // file keeps (the runtime encodes them from the bound pointers when it runs).
    cuda::compile_options options;
    options.arch = "sm_90";
    options.precision = dtype::f16;
    options.perf_config = "128x128x64_w8x1_s4_k1_wgmma_pp_tma";
    options.use_kernel_cache = false;
    options.use_problem_cache = false;
    const auto compiled = cuda::compile(
        conflux::onnx::import_model(std::string(CONFLUX_SOURCE_DIR) +
                                    "/tests/models/data/matmul_gelu_heads/model.onnx"),
        options);
    const fs::path good = dir_ / "tma.cfx";
    save_program(good, compiled, "matmul_gelu_heads.onnx");
    const program_file file = program_file::open(good);
    const nlohmann::json cuda = file.section("cuda");
    std::size_t with_maps = cuda["kernels"].size();
    for (std::size_t i = 0; i < cuda["kernels"].size(); ++i)
        if (!cuda["kernels"][i]["tensor_maps"].empty()) {
            with_maps = i;
            break;
        }
    ASSERT_LT(with_maps, cuda["kernels"].size()) << "no kernel with tensor maps";
    const nlohmann::json maps = cuda["kernels"][with_maps]["tensor_maps"];
    ASSERT_EQ(maps.size(), 2u);
    EXPECT_EQ(maps[0]["argument"], 0);
    EXPECT_EQ(maps[1]["argument"], 1);
    EXPECT_EQ(maps[0]["box"][0], 64);

    // Loaded and saved again: the same maps.
    const fs::path again = dir_ / "again.cfx";
    save_program(again, *load_program(good).cuda, "matmul_gelu_heads.onnx");
    EXPECT_EQ(program_file::open(again).section("cuda")["kernels"][with_maps]["tensor_maps"], maps);

    const fs::path p = dir_ / "bad.cfx";
    auto rewrite = [&](const nlohmann::json& section) {
        blob_list blobs;
        for (const auto& [data, bytes] : file.blobs())
            blobs.add(data.get(), bytes);
        write_program_file(p, file.header(), {{"stats", file.section("stats")}, {"cuda", section}},
                           blobs);
        return load_error(p);
    };
    auto with = [&](const char* key, std::size_t index, const nlohmann::json& value) {
        nlohmann::json bad = cuda;
        nlohmann::json& field = bad["kernels"][with_maps]["tensor_maps"][0][key];
        if (field.is_array())
            field[index] = value;
        else
            field = value;
        return bad;
    };
    expect_contains(rewrite(with("box", 1, 300)), "boxes 1 to 256");
    expect_contains(rewrite(with("strides", 0, 100)), "not a multiple of 16");
    expect_contains(rewrite(with("argument", 0, 99)), "not one of the kernel's pointers");
    expect_contains(rewrite(with("swizzle_bytes", 0, 48)), "32, 64 or 128 expected");
    expect_contains(rewrite(with("dims", 0, 0)), "sizes 1 to 2^32");
    expect_contains(rewrite(with("box", 0, 128)), "do not fit the swizzle");
    // A map over more memory than its operand has (rows beyond the matrix): refused on load,
    // not left to read past an allocation on the GPU.
    expect_contains(rewrite(with("dims", 1, 1u << 20)), "spans");
    nlohmann::json bad = cuda;
    bad["kernels"][with_maps]["tensor_maps"][0]["dims"].push_back(4);
    expect_contains(rewrite(bad), "one box size per axis");
}

} // namespace saved_program_test
