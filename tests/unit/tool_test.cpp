// The conflux command-line tool as a user meets it: exit codes, and error messages that name the
// input and the reason. Runs the built binary (CONFLUX_TOOL) on the bundled example model.
#include "conflux/ir/npy.hpp"

#include "conflux/cuda/target.hpp"

#include "onnx_model_builder.hpp"
#include "test_files.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace tool_test {

using namespace conflux;
using namespace conflux::test;
namespace fs = std::filesystem;

namespace {

class tool : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("conflux_tool_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    // env: NAME='VALUE' assignments for the child only.
    tool_result run(const std::string& args, const std::string& env = "") const {
        return run_tool(args, dir_, env);
    }

    static std::string example() {
        const std::string path = std::string(CONFLUX_SOURCE_DIR) + "/examples/conv_block.onnx";
        return "'" + path + "'";
    }

    fs::path dir_;
};

} // namespace

TEST_F(tool, help_works_on_every_command) {
    for (const char* args : {"--help", "read --help", "run --help", "cache --help"}) {
        auto r = run(args);
        EXPECT_EQ(r.exit_code, 0) << args;
        EXPECT_NE(r.out.find("Usage:"), std::string::npos) << args;
    }
    EXPECT_NE(run("run --help").out.find("--output-dir"), std::string::npos);
}

TEST_F(tool, syntax_errors_exit_non_zero_without_being_user_errors) {
    auto r = run("run");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.exit_code, 2);
    EXPECT_NE(r.err.find("MODEL is required"), std::string::npos) << r.err;
    EXPECT_NE(run("frobnicate").exit_code, 0);
    EXPECT_NE(run("run x.onnx --target tpu").exit_code, 0);
}

TEST_F(tool, cuda_target_runs_on_a_gpu_and_says_clearly_when_there_is_none) {
    const std::string cache = "--kernel-cache '" + (dir_ / "kernels").string() + "'";
    auto r = run("run " + example() + " --target cuda " + cache);
    if (conflux::cuda::available_devices() == 0) {
        EXPECT_EQ(r.exit_code, 2);
        EXPECT_NE(r.err.find("conflux: error: no CUDA device: "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("compiled for sm_90"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("--target ref"), std::string::npos) << r.err;
    } else {
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.out.find("(target cuda)"), std::string::npos) << r.out;
    }
}

TEST_F(tool, auto_target_falls_back_to_ref_without_a_gpu) {
    auto r = run("run " + example());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (conflux::cuda::available_devices() == 0) {
        EXPECT_NE(r.err.find("note: no CUDA device"), std::string::npos) << r.err;
        EXPECT_NE(r.out.find("(target ref)"), std::string::npos) << r.out;
    }
}

TEST_F(tool, cuda_compile_needs_no_gpu_and_prints_kernels_and_the_memory_plan) {
    const std::string cache = "--kernel-cache '" + (dir_ / "kernels").string() + "'";
    auto first = run("compile " + example() + " --target cuda --arch sm_90 " + cache);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_NE(first.out.find("cuda program for sm_90"), std::string::npos) << first.out;
    EXPECT_NE(first.out.find("memory plan: arena"), std::string::npos) << first.out;
    EXPECT_NE(first.out.find("(0 from the kernel cache)"), std::string::npos) << first.out;
    // The second compile of the same model finds every kernel in the cache.
    auto second = run("compile " + example() + " --target cuda --arch sm_90 " + cache);
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(second.out.find("(0 from the kernel cache)"), std::string::npos) << second.out;
}

// Every launch's kernel, by the entry name the listing shows, as source and as cubin (an ELF
// file); the reference target has no kernels to write.
TEST_F(tool, dump_kernels_writes_the_source_and_cubin_of_every_listed_kernel) {
    const std::string cache = "--kernel-cache '" + (dir_ / "kernels").string() + "'";
    const fs::path out = dir_ / "dump";
    auto r = run("compile " + example() + " --target cuda --arch sm_90 --tune none " + cache +
                 " --dump-kernels '" + out.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::size_t listed = 0;
    for (std::size_t at = r.out.find("  cx_"); at != std::string::npos;
         at = r.out.find("  cx_", at + 1)) {
        const std::string entry = r.out.substr(at + 2, r.out.find(' ', at + 2) - at - 2);
        ++listed;
        const std::string source = slurp(out / (entry + ".cu"));
        const std::size_t def = source.find("extern \"C\" __global__ void ");
        EXPECT_NE(def, std::string::npos) << entry;
        EXPECT_NE(source.find(entry + "(", def), std::string::npos) << entry;
        EXPECT_EQ(slurp(out / (entry + ".cubin")).substr(0, 4), "\x7f"
                                                                "ELF")
            << entry;
    }
    EXPECT_GT(listed, 0u) << r.out;
    EXPECT_NE(r.out.find("(.cu and .cubin) to"), std::string::npos) << r.out;
    auto ref = run("compile " + example() + " --target ref --dump-kernels '" + out.string() + "'");
    EXPECT_EQ(ref.exit_code, 2) << ref.out;
    EXPECT_NE(ref.err.find("--dump-kernels"), std::string::npos) << ref.err;
}

TEST_F(tool, problem_keys_are_the_same_in_every_process) {
    auto key_of = [&] {
        auto r = run("compile " + example() + " --target cuda --trace-compile --tune none " +
                     "--problem-cache '" + (dir_ / "problems.sqlite").string() + "'");
        EXPECT_EQ(r.exit_code, 0) << r.err;
        const auto at = r.out.find(": key ");
        EXPECT_NE(at, std::string::npos) << r.out;
        return at == std::string::npos ? std::string()
                                       : r.out.substr(at, r.out.find('\n', at) - at);
    };
    const std::string first = key_of();
    EXPECT_FALSE(first.empty());
    EXPECT_EQ(key_of(), first);
}

TEST_F(tool, trace_compile_names_problem_config_and_split) {
    const std::string cache = "--kernel-cache '" + (dir_ / "kernels").string() + "'";
    auto r = run("compile " + example() + " --target cuda --trace-compile " + cache);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // conv -> add -> relu -> reshape tail: one kernel with the heuristic's config.
    EXPECT_NE(r.out.find("trace: main: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("conv2d f32"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" -> fused"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1 kernels, 1 launches"), std::string::npos) << r.out;
    // A split-K config cannot fuse it: gemm | pointwise | layout copy, and the trace says why.
    auto split = run("compile " + example() + " --target cuda --trace-compile " +
                     "--perf-config 16x64x16_w1x2_s2_k2 " + cache);
    ASSERT_EQ(split.exit_code, 0) << split.err;
    EXPECT_NE(split.out.find("-> 3-way (gemm | pointwise | layout copy): split-K 2 would apply "
                             "the epilogue to partial sums"),
              std::string::npos)
        << split.out;
    auto exact = run("compile " + example() + " --target cuda --trace-compile --exact-fp32 " +
                     "--perf-config 64x64x32_w2x2_s3_k1 " + cache);
    ASSERT_EQ(exact.exit_code, 0) << exact.err;
    EXPECT_NE(exact.out.find("--exact-fp32 needs a _simt or depthwise config"), std::string::npos)
        << exact.out;
    EXPECT_NE(exact.out.find("_simt ->"), std::string::npos) << exact.out;
}

TEST_F(tool, a_perf_config_that_does_not_parse_is_a_user_error) {
    auto r = run("compile " + example() + " --target cuda --perf-config fastest");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--perf-config 'fastest' is not a perf config"), std::string::npos)
        << r.err;
}

TEST_F(tool, an_attention_config_that_does_not_parse_is_a_user_error) {
    // The example has no attention: the name is checked all the same.
    auto r = run("compile " + example() + " --target cuda --attention-config w3_m9_n1");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--attention-config 'w3_m9_n1' is not an attention config"),
              std::string::npos)
        << r.err;
    auto good = run("compile " + example() + " --target cuda --attention-config w8_m2_n64");
    EXPECT_EQ(good.exit_code, 0) << good.err;
}

TEST_F(tool, an_unknown_arch_is_a_user_error) {
    auto r = run("compile " + example() + " --target cuda --arch sm_1");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--arch 'sm_1'"), std::string::npos) << r.err;
}

TEST_F(tool, verify_needs_the_cuda_target) {
    auto r = run("verify " + example() + " --target ref");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("verify compares the cuda target"), std::string::npos) << r.err;
}

TEST_F(tool, missing_model_is_a_user_error) {
    auto r = run("run '" + (dir_ / "nope.onnx").string() + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("conflux: error: model '"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nope.onnx"), std::string::npos) << r.err;
}

TEST_F(tool, malformed_options_are_user_errors) {
    auto r = run("run " + example() + " --input-dim x:1,three");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--input-dim 'x:1,three'"), std::string::npos) << r.err;
    r = run("run " + example() + " --input x");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("expected NAME=FILE"), std::string::npos) << r.err;
}

TEST_F(tool, an_unparsable_einsum_equation_is_one_line_naming_the_node) {
    model_builder b(12);
    b.input("a", ::onnx::TensorProto::FLOAT, {2, 3});
    b.input("b", ::onnx::TensorProto::FLOAT, {3, 4});
    set_string(b.node("Einsum", {"a", "b"}, {"y"}, "contract"), "equation", "ij,jk->i%");
    b.output("y");
    const auto model = dir_ / "einsum.onnx";
    b.save(model.string());
    auto r = run("read '" + model.string() + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "conflux: error: Einsum (node 'contract', opset 12): equation 'ij,jk->i%': "
                     "the term of the output has the character '%' (labels are the letters a-z "
                     "and A-Z)\n");
}

TEST_F(tool, read_prints_the_program) {
    auto r = run("read " + example());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("module main"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("convolution"), std::string::npos) << r.out;
}

TEST_F(tool, run_fills_missing_inputs_and_says_so) {
    auto r = run("run " + example() + " --seed 3");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("input 'x' not given"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("y: f32[1,256,8]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("mean"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("time:"), std::string::npos) << r.out;
    // The seed decides the values.
    EXPECT_EQ(run("run " + example() + " --seed 3").out.substr(0, r.out.find("time:")),
              r.out.substr(0, r.out.find("time:")));
}

TEST_F(tool, unknown_input_name_lists_the_model_inputs) {
    auto r = run("run " + example() + " --input nosuch=whatever.npy");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("'nosuch'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("x (f32[1,3,16,16])"), std::string::npos) << r.err;
}

TEST_F(tool, mismatched_input_names_expected_and_got) {
    auto file = (dir_ / "x.npy").string();
    write_npy(file, from_vector<double>(dtype::f64, {1, 3}, std::vector<double>{1, 2, 3}));
    auto r = run("run " + example() + " --input x=" + file);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("input 'x'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("expected f32[1,3,16,16], got f64[1,3]"), std::string::npos) << r.err;
}

TEST_F(tool, run_writes_outputs_that_read_back) {
    auto in = (dir_ / "x.npy").string();
    write_npy(in, from_vector<float>(dtype::f32, {1, 3, 16, 16}, std::vector<float>(768, 0.5f)));
    auto out_dir = dir_ / "outputs" / "nested";
    auto r =
        run("run " + example() + " --input x=" + in + " --output-dir '" + out_dir.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("not given"), std::string::npos) << r.err;
    auto y = read_npy((out_dir / "y.npy").string());
    EXPECT_EQ(y.get_shape().lens(), (dims{1, 256, 8}));
    for (float v : to_vector<float>(y))
        EXPECT_GE(v, 0.0f); // after relu
}

TEST_F(tool, cache_commands_list_export_import_and_clear_the_problem_cache) {
    const auto store = dir_ / "problems.sqlite";
    const std::string option = " --problem-cache '" + store.string() + "'";
    auto r = run("cache path" + option);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, store.string() + "\n");
    r = run("cache path", "CONFLUX_PROBLEM_CACHE='" + (dir_ / "from_env.sqlite").string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, (dir_ / "from_env.sqlite").string() + "\n");

    const auto in = dir_ / "in.json";
    std::ofstream(in) << R"({"conflux_problem_cache": 1, "entries": [
        {"slot": "conv a", "key": "conv a | sm_90/132 | gemm-5", "device": "sm_90/132",
         "generator_version": "gemm-5", "config": "128x128x32_w2x2_s3_k1", "time_ms": 0.5},
        {"slot": "dot b", "key": "dot b | sm_90/132 | gemm-5", "device": "sm_90/132",
         "generator_version": "gemm-5", "config": "64x64x32_w2x2_s3_k1", "time_ms": 0}]})";
    r = run("cache import '" + in.string() + "'" + option);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("imported 2 entries"), std::string::npos) << r.out;

    r = run("cache list" + option);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("128x128x32_w2x2_s3_k1  0.5 ms"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("conv a | sm_90/132 | gemm-5"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("2 entries"), std::string::npos) << r.out;

    const auto out = dir_ / "out.json";
    r = run("cache export '" + out.string() + "'" + option);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(slurp(out).find("64x64x32_w2x2_s3_k1"), std::string::npos);

    r = run("cache clear" + option);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("removed 2 entries"), std::string::npos) << r.out;
    r = run("cache list" + option);
    EXPECT_NE(r.out.find("0 entries"), std::string::npos) << r.out;
    // What was exported comes back.
    r = run("cache import '" + out.string() + "'" + option);
    EXPECT_NE(r.out.find("imported 2 entries"), std::string::npos) << r.out;
}

TEST_F(tool, cache_import_of_a_bad_file_is_a_user_error) {
    const std::string option = " --problem-cache '" + (dir_ / "problems.sqlite").string() + "'";
    std::ofstream(dir_ / "bad.json") << "{\"entries\": []}";
    auto r = run("cache import '" + (dir_ / "bad.json").string() + "'" + option);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("conflux: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("bad.json"), std::string::npos) << r.err;
}

TEST_F(tool, cache_warns_about_a_bad_store_and_goes_on) {
    const auto store = dir_ / "problems.sqlite";
    // SQLite's header, then garbage: a corrupt store (a file that is not a database at all is
    // refused instead, see bad_files_test.cpp).
    std::ofstream(store) << std::string("SQLite format 3\0", 16)
                         << "this is not a database, but it is long enough to look like one......"
                            "................................................................";
    auto r = run("cache list --problem-cache '" + store.string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: problem cache " + store.string() + " is not a valid"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("0 entries"), std::string::npos) << r.out;
}

TEST_F(tool, skip_pass_leaves_the_named_pass_out_and_an_unknown_name_is_a_user_error) {
    auto all = run("compile " + example() + " --target ref --print-passes");
    ASSERT_EQ(all.exit_code, 0) << all.err;
    EXPECT_NE(all.out.find("pass: fuse_gemm"), std::string::npos) << all.out;
    auto skipped =
        run("compile " + example() + " --target ref --print-passes --skip-pass fuse_gemm");
    ASSERT_EQ(skipped.exit_code, 0) << skipped.err;
    EXPECT_EQ(skipped.out.find("pass: fuse_gemm"), std::string::npos) << skipped.out;
    EXPECT_NE(skipped.out.find("pass: fuse_pointwise"), std::string::npos) << skipped.out;
    // The reference target's results do not depend on which passes ran.
    auto with = run("run " + example() + " --target ref --optimize");
    auto without = run("run " + example() + " --target ref --optimize --skip-pass fuse_gemm");
    ASSERT_EQ(with.exit_code, 0) << with.err;
    ASSERT_EQ(without.exit_code, 0) << without.err;
    const auto summary = [](const std::string& out) { return out.substr(0, out.find("time:")); };
    EXPECT_EQ(summary(with.out), summary(without.out));
    EXPECT_NE(summary(with.out).find("y: f32[1,256,8]"), std::string::npos) << with.out;
    auto bad = run("compile " + example() + " --target cuda --arch sm_90 --skip-pass fusion");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--skip-pass: no pass named 'fusion' (the passes are: simplify"),
              std::string::npos)
        << bad.err;
}

TEST_F(tool, narrow_outputs_give_sixteen_bit_outputs_and_need_a_reduced_precision) {
    auto wide = run("run --target ref --fp16 " + example());
    ASSERT_EQ(wide.exit_code, 0) << wide.err;
    EXPECT_NE(wide.out.find("y: f32[1,256,8]"), std::string::npos) << wide.out;
    auto narrow = run("run --target ref --fp16 --narrow-outputs " + example());
    ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
    EXPECT_NE(narrow.out.find("y: f16[1,256,8]"), std::string::npos) << narrow.out;
    auto bad = run("run --target ref --narrow-outputs " + example());
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--narrow-outputs: the outputs are narrowed to the precision of "
                           "--fp16 or --bf16, and neither is given"),
              std::string::npos)
        << bad.err;
    // The cuda target's program (compiled without a GPU) gives f16 outputs too.
    auto listing = run("compile --target cuda --arch sm_90 --tune none --no-kernel-cache --bf16 "
                       "--narrow-outputs " +
                       example());
    ASSERT_EQ(listing.exit_code, 0) << listing.err;
    EXPECT_NE(listing.out.find("out output y bf16[1,256,8]"), std::string::npos) << listing.out;
}

TEST_F(tool, compile_saves_a_program_that_run_and_perf_load) {
    const std::string cfx = (dir_ / "conv.cfx").string();
    auto r = run("compile --target cuda --arch sm_90 --no-kernel-cache " + example() + " -o '" +
                 cfx + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("saved the program to"), std::string::npos) << r.out;
    // Options that shape a compile do not apply to a compiled program: an error, not ignored.
    r = run("run '" + cfx + "' --fp16");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--fp16: '" + cfx + "' is a compiled program (.cfx), compiled already"),
              std::string::npos)
        << r.err;
    r = run("perf '" + cfx + "' --tune none");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--tune"), std::string::npos) << r.err;
    r = run("run --target ref '" + cfx + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("holds a program compiled for cuda"), std::string::npos) << r.err;
    r = run("compile '" + cfx + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("is a compiled program (.cfx) already"), std::string::npos) << r.err;
    if (cuda::available_devices() == 0) {
        // Loading needs no GPU; running says there is none, and what to run instead.
        r = run("run '" + cfx + "'");
        EXPECT_EQ(r.exit_code, 2);
        EXPECT_NE(r.err.find("conflux: loaded"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("run the ONNX model it was compiled from with --target ref"),
                  std::string::npos)
            << r.err;
    }
    const std::string bytes = slurp(cfx);
    write_text(dir_ / "cut.cfx", bytes.substr(0, bytes.size() / 3));
    r = run("run '" + (dir_ / "cut.cfx").string() + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("cut.cfx': truncated"), std::string::npos) << r.err;
}

TEST_F(tool, a_reference_program_saves_and_runs_as_the_optimised_model) {
    const std::string cfx = (dir_ / "ref.cfx").string();
    auto r = run("compile --target ref " + example() + " -o '" + cfx + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run("run '" + cfx + "' --output-dir '" + (dir_ / "saved").string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("target ref"), std::string::npos) << r.out;
    r = run("run --target ref --optimize " + example() + " --output-dir '" +
            (dir_ / "model").string() + "'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(slurp(dir_ / "saved" / "y.npy"), slurp(dir_ / "model" / "y.npy"));
    r = run("perf '" + cfx + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("holds a program for ref"), std::string::npos) << r.err;
    r = run("compile --target ref " + example() + " --with-reference -o '" + cfx + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--with-reference"), std::string::npos) << r.err;
}

TEST_F(tool, verify_of_a_saved_program_needs_the_model_stored_with_it) {
    const std::string bare = (dir_ / "bare.cfx").string();
    const std::string with = (dir_ / "with.cfx").string();
    ASSERT_EQ(run("compile --target cuda --no-kernel-cache " + example() + " -o '" + bare + "'")
                  .exit_code,
              0);
    ASSERT_EQ(run("compile --target cuda --no-kernel-cache " + example() +
                  " --with-reference -o '" + with + "'")
                  .exit_code,
              0);
    auto r = run("verify '" + bare + "'");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("saved without the model (compile with --with-reference"),
              std::string::npos)
        << r.err;
    // The model is stored (bigger file); without a GPU verify then stops at running it.
    EXPECT_GT(fs::file_size(with), fs::file_size(bare));
    if (cuda::available_devices() == 0) {
        r = run("verify '" + with + "'");
        EXPECT_EQ(r.exit_code, 2);
        EXPECT_NE(r.err.find("no CUDA device"), std::string::npos) << r.err;
    }
}

} // namespace tool_test
