// The CUDA runtime layer as far as it runs without a GPU: device discovery, error channels, the
// kernel cache, parallel compilation, and the checks run_on_device makes before it needs a
// device. Tests that launch kernels live in tests/gpu.
#include "conflux/cuda/target.hpp"
#include "conflux/ops/dot.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/jit/compile_kernels.hpp"
#include "cuda/jit/kernel_cache.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/device_info.hpp"
#include "cuda/runtime/loaded_kernels.hpp"
#include "unit/test_helpers.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace conflux::cuda {
namespace cuda_runtime_test {

namespace fs = std::filesystem;
using test::user_error_of;

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// A fresh directory, removed with everything in it at the end of the test.
struct temp_dir {
    fs::path path;
    temp_dir() {
        static std::atomic<int> counter{0};
        path = fs::temp_directory_path() / ("conflux-runtime-test-" + std::to_string(::getpid()) +
                                            "-" + std::to_string(counter++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(path, ec);
    }
};

// Sets (or unsets, with nullopt) an environment variable for one test.
struct scoped_env {
    std::string name;
    std::optional<std::string> saved;
    scoped_env(std::string n, const std::optional<std::string>& value) : name(std::move(n)) {
        if (const char* old = std::getenv(name.c_str())) saved = old;
        if (value)
            ::setenv(name.c_str(), value->c_str(), 1);
        else
            ::unsetenv(name.c_str());
    }
    ~scoped_env() {
        if (saved)
            ::setenv(name.c_str(), saved->c_str(), 1);
        else
            ::unsetenv(name.c_str());
    }
};

kernel_source scale_kernel(int i) {
    kernel_source k;
    k.entry = "cx_rt_scale" + std::to_string(i);
    k.code = "extern \"C\" __global__ void " + k.entry +
             "(const float* in0, float* out0) {\n"
             "    out0[threadIdx.x] = in0[threadIdx.x] * " +
             std::to_string(i + 1) + ".0f;\n}\n";
    k.launch.block = {32, 1, 1};
    k.inputs = 1;
    k.outputs = 1;
    return k;
}

kernel_source broken_kernel(const std::string& entry) {
    kernel_source k;
    k.entry = entry;
    k.code = "extern \"C\" __global__ void " + entry + "() { undeclared_" + entry + "(); }";
    return k;
}

std::vector<kernel_source> scale_kernels(int n) {
    std::vector<kernel_source> out;
    for (int i = 0; i < n; ++i)
        out.push_back(scale_kernel(i));
    return out;
}

std::vector<char> file_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::vector<char>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool is_elf(const std::vector<char>& cubin) {
    return cubin.size() > 4 && cubin[0] == 0x7f && std::string(cubin.data() + 1, 3) == "ELF";
}

// ---- devices and errors ------------------------------------------------------------------------

TEST(CudaRuntime, DeviceCountIsZeroWithoutAGpuAndNeverThrows) {
    int count = -1;
    ASSERT_NO_THROW(count = available_devices());
    if (count > 0) GTEST_SKIP() << "a GPU is present; tests/gpu covers this machine";
    EXPECT_EQ(count, 0);
    const std::string reason = no_device_reason();
    EXPECT_FALSE(reason.empty());
    try {
        query_device(0);
        FAIL() << "expected an error";
    } catch (const user_error& e) {
        EXPECT_TRUE(contains(e.what(), reason)) << e.what();
    }
}

TEST(CudaRuntime, CudaCheckReportsMachineProblemsAsUserErrorsAndTheRestAsInternal) {
    EXPECT_NO_THROW(cuda_check(cudaSuccess, "nothing"));
    try {
        cuda_check(cudaErrorMemoryAllocation, "allocation for tensor x");
        FAIL() << "expected an error";
    } catch (const user_error& e) {
        EXPECT_TRUE(contains(e.what(), "cudaErrorMemoryAllocation")) << e.what();
        EXPECT_TRUE(contains(e.what(), "allocation for tensor x")) << e.what();
    }
    EXPECT_THROW(cuda_check(cudaErrorNoDevice, "x"), user_error);
    EXPECT_THROW(cuda_check(cudaErrorInsufficientDriver, "x"), user_error);
    EXPECT_THROW(cuda_check(cudaErrorNoKernelImageForDevice, "x"), user_error);
    try {
        cuda_check(cudaErrorInvalidConfiguration, "launch of kernel k3_reduce (@3 = reduce)");
        FAIL() << "expected an error";
    } catch (const internal_error& e) {
        EXPECT_TRUE(contains(e.what(), "cudaErrorInvalidConfiguration")) << e.what();
        EXPECT_TRUE(contains(e.what(), "k3_reduce (@3 = reduce)")) << e.what();
    }
    EXPECT_THROW(cuda_check(cudaErrorIllegalAddress, "x"), internal_error);
}

TEST(CudaRuntime, MemoryStreamsAndKernelsNeedADeviceAndSaySo) {
    if (available_devices() > 0) GTEST_SKIP() << "a GPU is present; tests/gpu covers this machine";
    device_buffer none(0);
    EXPECT_EQ(none.data(), nullptr);
    EXPECT_EQ(none.size(), 0u);
    EXPECT_THROW(device_buffer(16), user_error);
    EXPECT_THROW(stream{}, user_error);
    const compiled_kernel k = nvrtc_compile(scale_kernel(0), "sm_90");
    try {
        loaded_kernel loaded(k, 0, "k0_scale (@0 = mul)");
        FAIL() << "expected an error";
    } catch (const user_error& e) {
        EXPECT_TRUE(contains(e.what(), "k0_scale (@0 = mul)")) << e.what();
    }
}

// One output per kind, kind(x), of an f32 [4, 8] parameter x; compiled for sm_90.
compiled_program compile_elementwise(const std::vector<op::elementwise_kind>& kinds) {
    program p;
    module& m = p.main();
    auto x = m.add_parameter("x", shape{dtype::f32, {4, 8}});
    std::vector<instruction_ref> outputs;
    for (op::elementwise_kind k : kinds)
        outputs.push_back(m.add_instruction(op::make_elementwise(k), {x}));
    m.add_return(outputs);
    compile_options options;
    options.arch = "sm_90";
    options.use_kernel_cache = false;
    options.use_problem_cache = false;
    return compile(std::move(p), options);
}

// A one-kernel program: relu of an f32 [4, 8] parameter.
compiled_program compile_relu() {
    return compile_elementwise({op::elementwise_kind::relu});
}

TEST(CudaRuntime, ProfileNeedsADeviceAndSaysSoLikeRun) {
    if (available_devices() > 0) GTEST_SKIP() << "a GPU is present; tests/gpu covers this machine";
    compiled_program c = compile_relu();
    const std::map<std::string, argument> params = {{"x", argument(shape{dtype::f32, {4, 8}})}};
    std::string run_error, profile_error;
    try {
        c.run(params);
    } catch (const user_error& e) {
        run_error = e.what();
    }
    try {
        c.profile(params, {1, 3});
    } catch (const user_error& e) {
        profile_error = e.what();
    }
    EXPECT_TRUE(contains(run_error, "no CUDA device")) << run_error;
    EXPECT_EQ(profile_error, run_error);
}

// Two outputs of one f32 [4, 8] parameter: relu(x) and -x.
compiled_program compile_two_outputs() {
    return compile_elementwise({op::elementwise_kind::relu, op::elementwise_kind::neg});
}

TEST(CudaRuntime, RunOnDeviceNeedsADeviceAndSaysSoLikeRun) {
    if (available_devices() > 0) GTEST_SKIP() << "a GPU is present; tests/gpu covers this machine";
    compiled_program c = compile_relu();
    const std::string run_error = user_error_of([&] {
        c.run({{"x", argument(shape{dtype::f32, {4, 8}})}});
    });
    // Host memory stands in for device buffers: the names and pointers pass the checks that
    // need no GPU, then the missing device is reported.
    alignas(16) float in[32] = {}, out[32] = {};
    for (bool graph : {true, false}) {
        const std::string error = user_error_of([&] {
            c.run_on_device({{"x", in}}, {{"output0", out}}, {.cuda_graph = graph});
        });
        EXPECT_TRUE(contains(error, "no CUDA device")) << error;
        EXPECT_EQ(error, run_error);
    }
}

TEST(CudaRuntime, OutputShapesGiveEachOutputsLayoutAndSize) {
    compiled_program c = compile_two_outputs();
    ASSERT_EQ(c.output_names(), (std::vector<std::string>{"output0", "output1"}));
    ASSERT_EQ(c.output_shapes().size(), 2u);
    for (const shape& s : c.output_shapes()) {
        EXPECT_EQ(s.type(), dtype::f32);
        EXPECT_EQ(s.lens(), (dims{4, 8}));
        EXPECT_EQ(s.bytes(), 4u * 8 * sizeof(float));
    }
}

// What verify judges f32 outputs by: the count of f32 anchors that ran on TF32 tensor cores.
TEST(CudaRuntime, StatsCountTheF32AnchorsThatRunOnTf32TensorCores) {
    auto matmuls = [](dtype t, std::size_t count, bool exact_fp32) {
        program p;
        module& m = p.main();
        auto x = m.add_parameter("x", shape{t, {64, 64}});
        instruction_ref v = x;
        for (std::size_t i = 0; i < count; ++i)
            v = m.add_instruction(op::dot{}, {v, x});
        m.add_return({v});
        compile_options options;
        options.arch = "sm_90";
        options.use_kernel_cache = false;
        options.use_problem_cache = false;
        options.tune = tune_mode::none;
        options.exact_fp32 = exact_fp32;
        return compile(std::move(p), options).stats().tf32_anchors;
    };
    EXPECT_EQ(matmuls(dtype::f32, 2, false), 2u);
    EXPECT_EQ(matmuls(dtype::f32, 2, true), 0u) << "--exact-fp32 runs f32 on the SIMT path";
    EXPECT_EQ(matmuls(dtype::f16, 2, false), 0u) << "f16 anchors are not TF32";
}

// Checked before the device is, so they hold on any machine.
TEST(CudaRuntime, RunOnDeviceNamesTheTensorItCannotBind) {
    compiled_program c = compile_two_outputs();
    // One array with gaps between the tensors, so which ranges overlap does not depend on how
    // the compiler lays out the stack.
    alignas(16) float pool[192] = {};
    float* const x = pool;
    float* const a = pool + 64;
    float* const b = pool + 128;
    auto error = [&](const std::map<std::string, const void*>& in,
                     const std::map<std::string, void*>& out) {
        return user_error_of([&] { c.run_on_device(in, out); });
    };
    const std::map<std::string, void*> outputs = {{"output0", a}, {"output1", b}};
    std::string e = error({{"x", x}, {"y", x}}, outputs);
    EXPECT_TRUE(contains(e, "unknown input 'y'") && contains(e, "'x'")) << e;
    e = error({}, outputs);
    EXPECT_TRUE(contains(e, "no device pointer given for input 'x'")) << e;
    e = error({{"x", x}}, {{"output0", a}, {"output1", b}, {"out", b}});
    EXPECT_TRUE(contains(e, "unknown output 'out'") && contains(e, "'output0', 'output1'")) << e;
    e = error({{"x", x}}, {{"output0", a}});
    EXPECT_TRUE(contains(e, "no device pointer given for output 'output1'")) << e;
    e = error({{"x", nullptr}}, outputs);
    EXPECT_TRUE(contains(e, "input 'x' is a null pointer but holds 128 bytes")) << e;
    e = error({{"x", x}}, {{"output0", a}, {"output1", nullptr}});
    EXPECT_TRUE(contains(e, "output 'output1' is a null pointer")) << e;
    e = error({{"x", reinterpret_cast<const char*>(x) + 4}}, outputs);
    EXPECT_TRUE(contains(e, "input 'x'") && contains(e, "not aligned to 16 bytes")) << e;
    // An output overlapping an input (by one element) or another output.
    e = error({{"x", x}}, {{"output0", a}, {"output1", x + 28}});
    EXPECT_TRUE(contains(e, "output 'output1'") && contains(e, "overlaps input 'x'")) << e;
    e = error({{"x", x}}, {{"output0", a}, {"output1", a + 4}});
    EXPECT_TRUE(contains(e, "output 'output1'") && contains(e, "overlaps output 'output0'")) << e;
    // Adjacent ranges do not overlap; the next error (if any) is about the device.
    alignas(16) float both[64] = {};
    e = error({{"x", x}}, {{"output0", both}, {"output1", both + 32}});
    EXPECT_FALSE(contains(e, "overlaps")) << e;
    if (available_devices() == 0) {
        EXPECT_TRUE(contains(e, "no CUDA device")) << e;
    }
}

TEST(CudaRuntime, WriteCubinsWritesOneElfPerKernelNamedByItsEntry) {
    compiled_program c = compile_relu();
    const temp_dir dir;
    const auto paths = c.write_cubins(dir.path / "sub");
    ASSERT_EQ(paths.size(), c.stats().kernels);
    for (const fs::path& path : paths) {
        EXPECT_EQ(path.extension(), ".cubin");
        std::ifstream in(path, std::ios::binary);
        char magic[4] = {};
        in.read(magic, 4);
        EXPECT_EQ(std::string(magic, 4), "\x7f"
                                         "ELF")
            << path;
    }
}

// ---- parallel compilation ----------------------------------------------------------------------

TEST(CudaRuntime, CompileKernelsDeduplicatesAndKeepsInputOrder) {
    temp_dir dir;
    kernel_cache cache(dir.path);
    std::vector<kernel_source> sources = scale_kernels(8);
    // Duplicates before, between and after the originals they repeat.
    sources.insert(sources.begin(), scale_kernel(5));
    sources.insert(sources.begin() + 4, scale_kernel(2));
    sources.push_back(scale_kernel(7));
    sources.push_back(scale_kernel(0));

    std::vector<std::pair<std::size_t, std::size_t>> progress;
    compile_kernels_options options;
    options.cache = &cache;
    options.threads = 4;
    options.progress = [&](std::size_t done, std::size_t total) {
        progress.emplace_back(done, total);
    };
    const auto compiled = compile_kernels(sources, options);

    ASSERT_EQ(compiled.size(), sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
        EXPECT_EQ(compiled[i].entry, sources[i].entry) << i;
        EXPECT_TRUE(is_elf(compiled[i].cubin)) << i;
    }
    // Each scale kernel's code differs, so the same cubin means the same source.
    for (std::size_t i = 0; i < sources.size(); ++i)
        for (std::size_t j = 0; j < sources.size(); ++j)
            EXPECT_EQ(compiled[i].cubin == compiled[j].cubin, sources[i].entry == sources[j].entry)
                << i << " " << j;
    EXPECT_EQ(cache.misses(), 8u); // each distinct kernel compiled once
    EXPECT_EQ(cache.stores(), 8u);
    EXPECT_EQ(cache.hits(), 0u);
    ASSERT_EQ(progress.size(), 8u);
    for (std::size_t i = 0; i < progress.size(); ++i)
        EXPECT_EQ(progress[i], std::make_pair(i + 1, std::size_t{8}));
}

TEST(CudaRuntime, CompileKernelsWithoutACacheOnOneThread) {
    compile_kernels_options options;
    options.threads = 1;
    const auto compiled = compile_kernels(scale_kernels(2), options);
    ASSERT_EQ(compiled.size(), 2u);
    EXPECT_EQ(compiled[1].entry, "cx_rt_scale1");
    EXPECT_TRUE(is_elf(compiled[1].cubin));
    EXPECT_TRUE(compile_kernels({}, options).empty());
}

TEST(CudaRuntime, CompileKernelsRethrowsTheFirstFailureNamingTheKernel) {
    std::vector<kernel_source> sources = scale_kernels(8);
    sources[3] = broken_kernel("cx_rt_broken_a");
    sources[6] = broken_kernel("cx_rt_broken_b");
    compile_kernels_options options;
    options.threads = 4;
    try {
        compile_kernels(sources, options);
        FAIL() << "expected an error";
    } catch (const internal_error& e) {
        EXPECT_TRUE(contains(e.what(), "cx_rt_broken_a")) << e.what();
        EXPECT_FALSE(contains(e.what(), "cx_rt_broken_b")) << e.what();
    }
}

TEST(CudaRuntime, CompileKernelsNamesTheKernelWhenTheErrorDoesNot) {
    compile_kernels_options options;
    options.threads = 2;
    options.progress = [](std::size_t, std::size_t) { throw std::runtime_error("no terminal"); };
    try {
        compile_kernels(scale_kernels(1), options);
        FAIL() << "expected an error";
    } catch (const internal_error& e) {
        EXPECT_TRUE(contains(e.what(), "cx_rt_scale0")) << e.what();
        EXPECT_TRUE(contains(e.what(), "no terminal")) << e.what();
    }
}

// ---- the kernel cache --------------------------------------------------------------------------

TEST(KernelCache, ASecondCompileIsAllHitsAndSkipsNvrtc) {
    temp_dir dir;
    const auto sources = scale_kernels(8);
    compile_kernels_options options;
    options.threads = 4;

    kernel_cache first(dir.path);
    ASSERT_TRUE(first.enabled());
    options.cache = &first;
    const auto compiled = compile_kernels(sources, options);
    EXPECT_EQ(first.misses(), 8u);
    EXPECT_EQ(first.stores(), 8u);

    kernel_cache second(dir.path); // as a later process would
    options.cache = &second;
    const auto cached = compile_kernels(sources, options);
    EXPECT_EQ(second.hits(), 8u);
    EXPECT_EQ(second.misses(), 0u);
    EXPECT_EQ(second.stores(), 0u);
    ASSERT_EQ(cached.size(), compiled.size());
    for (std::size_t i = 0; i < cached.size(); ++i) {
        EXPECT_EQ(cached[i].entry, compiled[i].entry);
        EXPECT_EQ(cached[i].cubin, compiled[i].cubin);
    }
    // Only whole entries are left behind: no temporary or probe files.
    std::size_t files = 0;
    for (const auto& e : fs::directory_iterator(dir.path)) {
        EXPECT_EQ(e.path().extension(), ".cxkc") << e.path();
        ++files;
    }
    EXPECT_EQ(files, 8u);
}

TEST(KernelCache, AHitDoesNotRunNvrtcAtAll) {
    temp_dir dir;
    kernel_cache cache(dir.path);
    // NVRTC would reject this source, so only the cache can produce its cubin.
    const kernel_source broken = broken_kernel("cx_rt_cached_broken");
    const std::vector<char> planted = {'n', 'o', 't', ' ', 'e', 'l', 'f'};
    cache.store(broken, "sm_90", planted);
    compile_kernels_options options;
    options.cache = &cache;
    const auto compiled = compile_kernels({broken}, options);
    ASSERT_EQ(compiled.size(), 1u);
    EXPECT_EQ(compiled[0].cubin, planted);
    EXPECT_EQ(cache.hits(), 1u);
}

TEST(KernelCache, TheKeyCoversArchCodeEntryAndToolchain) {
    temp_dir dir;
    kernel_cache cache(dir.path);
    const kernel_source k = scale_kernel(0);
    cache.store(k, "sm_90", {'a', 'b'});
    EXPECT_TRUE(cache.load(k, "sm_90"));
    EXPECT_FALSE(cache.load(k, "sm_80"));
    kernel_source other_code = k;
    other_code.code += "// changed\n";
    EXPECT_FALSE(cache.load(other_code, "sm_90"));
    kernel_source other_entry = k;
    other_entry.entry = "cx_rt_renamed";
    EXPECT_FALSE(cache.load(other_entry, "sm_90"));
    // Launch dimensions are not part of the cubin.
    kernel_source other_launch = k;
    other_launch.launch.grid = {7, 1, 1};
    EXPECT_TRUE(cache.load(other_launch, "sm_90"));

    const std::string key = kernel_cache_key(k, "sm_90");
    EXPECT_TRUE(contains(key, "nvrtc " + nvrtc_version())) << key;
    for (const auto& option : nvrtc_options("sm_90"))
        EXPECT_TRUE(contains(key, option)) << key;
    EXPECT_TRUE(contains(key, k.code)) << key;
    EXPECT_EQ(cache.entry_path(k, "sm_90").parent_path(), dir.path);
}

TEST(KernelCache, CorruptTruncatedOrForeignFilesAreMissesAndGetOverwritten) {
    temp_dir dir;
    const kernel_source k = scale_kernel(3);
    compile_kernels_options options;
    std::vector<char> good;
    fs::path path;
    {
        kernel_cache cache(dir.path);
        options.cache = &cache;
        compile_kernels({k}, options);
        path = cache.entry_path(k, "sm_90");
        good = file_bytes(path);
        ASSERT_GT(good.size(), 64u);
    }
    const auto mutated = [&](auto change) {
        std::vector<char> bytes = good;
        change(bytes);
        return bytes;
    };
    const std::vector<std::pair<std::string, std::vector<char>>> bad_files = {
        {"empty", {}},
        {"foreign", {'h', 'e', 'l', 'l', 'o', '\n'}},
        {"bad magic", mutated([](auto& b) { b[0] = 'X'; })},
        {"truncated header", mutated([](auto& b) { b.resize(9); })},
        {"truncated cubin", mutated([](auto& b) { b.pop_back(); })},
        {"trailing bytes", mutated([](auto& b) { b.push_back('\0'); })},
        {"flipped cubin byte", mutated([](auto& b) { b[b.size() - 10] ^= 0x40; })},
        {"flipped key byte", mutated([](auto& b) { b[20] ^= 0x01; })},
        {"huge key length", mutated([](auto& b) {
             for (int i = 5; i < 13; ++i)
                 b[static_cast<std::size_t>(i)] = static_cast<char>(0xff);
         })},
    };
    for (const auto& [what, bytes] : bad_files) {
        write_bytes(path, bytes);
        kernel_cache cache(dir.path);
        EXPECT_FALSE(cache.load(k, "sm_90")) << what;
        options.cache = &cache;
        const auto compiled = compile_kernels({k}, options);
        EXPECT_TRUE(is_elf(compiled[0].cubin)) << what;
        EXPECT_EQ(cache.stores(), 1u) << what;
        EXPECT_EQ(file_bytes(path), good) << what;
        EXPECT_TRUE(cache.load(k, "sm_90")) << what;
    }
}

TEST(KernelCache, AnEntryUnderAnotherKeysNameIsAMiss) {
    temp_dir dir;
    kernel_cache cache(dir.path);
    const kernel_source a = scale_kernel(1), b = scale_kernel(2);
    cache.store(a, "sm_90", {'a'});
    // What a hash collision looks like: b's file holds a's entry.
    fs::copy_file(cache.entry_path(a, "sm_90"), cache.entry_path(b, "sm_90"));
    EXPECT_FALSE(cache.load(b, "sm_90"));
    EXPECT_TRUE(cache.load(a, "sm_90"));
}

TEST(KernelCache, ConcurrentStoresOfOneEntryLeaveAWholeEntry) {
    temp_dir dir;
    kernel_cache cache(dir.path);
    const kernel_source k = scale_kernel(4);
    const std::vector<char> cubin(100000, 'c');
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 10; ++i) {
                cache.store(k, "sm_90", cubin);
                const auto loaded = cache.load(k, "sm_90");
                EXPECT_TRUE(loaded && *loaded == cubin);
            }
        });
    for (auto& t : threads)
        t.join();
    EXPECT_TRUE(cache.enabled());
    EXPECT_EQ(cache.hits(), 80u);
}

TEST(KernelCache, AnUncreatableDirectoryDisablesItWithOneWarning) {
    temp_dir dir;
    write_bytes(dir.path / "a_file", {'x'});
    std::vector<std::string> warnings;
    kernel_cache cache(dir.path / "a_file" / "kernels",
                       [&](const std::string& w) { warnings.push_back(w); });
    EXPECT_FALSE(cache.enabled());
    compile_kernels_options options;
    options.cache = &cache;
    options.threads = 4;
    const auto compiled = compile_kernels(scale_kernels(4), options);
    ASSERT_EQ(compiled.size(), 4u);
    EXPECT_TRUE(is_elf(compiled[3].cubin));
    EXPECT_EQ(cache.hits(), 0u);
    EXPECT_EQ(cache.stores(), 0u);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(contains(warnings[0], "a_file")) << warnings[0];
}

TEST(KernelCache, AnUnwritableDirectoryDisablesItWithOneWarning) {
    temp_dir dir;
    const fs::path readonly = dir.path / "readonly";
    fs::create_directories(readonly);
    ASSERT_EQ(::chmod(readonly.c_str(), 0500), 0);
    if (::access(readonly.c_str(), W_OK) == 0)
        GTEST_SKIP() << "this user (root?) can write to a mode 0500 directory";
    std::vector<std::string> warnings;
    kernel_cache cache(readonly, [&](const std::string& w) { warnings.push_back(w); });
    EXPECT_FALSE(cache.enabled());
    compile_kernels_options options;
    options.cache = &cache;
    const auto compiled = compile_kernels(scale_kernels(2), options);
    EXPECT_TRUE(is_elf(compiled[1].cubin));
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_TRUE(contains(warnings[0], readonly.string())) << warnings[0];
}

TEST(KernelCache, TheDefaultDirectoryFollowsTheEnvironment) {
    scoped_env cache_env("CONFLUX_KERNEL_CACHE", "/explicit/cache");
    scoped_env xdg("XDG_CACHE_HOME", "/xdg");
    scoped_env home("HOME", "/home/someone");
    EXPECT_EQ(default_kernel_cache_dir(), fs::path("/explicit/cache"));
    {
        scoped_env unset("CONFLUX_KERNEL_CACHE", std::nullopt);
        EXPECT_EQ(default_kernel_cache_dir(), fs::path("/xdg/conflux/kernels"));
        {
            scoped_env relative("XDG_CACHE_HOME", "relative"); // invalid per the XDG spec
            EXPECT_EQ(default_kernel_cache_dir(), fs::path("/home/someone/.cache/conflux/kernels"));
        }
        scoped_env no_xdg("XDG_CACHE_HOME", std::nullopt);
        EXPECT_EQ(default_kernel_cache_dir(), fs::path("/home/someone/.cache/conflux/kernels"));
        scoped_env no_home("HOME", std::nullopt);
        EXPECT_TRUE(default_kernel_cache_dir().empty());
        std::vector<std::string> warnings;
        kernel_cache cache(std::nullopt, [&](const std::string& w) { warnings.push_back(w); });
        EXPECT_FALSE(cache.enabled());
        EXPECT_EQ(warnings.size(), 1u);
    }
    temp_dir dir;
    scoped_env here("CONFLUX_KERNEL_CACHE", (dir.path / "from_env").string());
    kernel_cache cache;
    EXPECT_TRUE(cache.enabled());
    EXPECT_EQ(cache.dir(), dir.path / "from_env");
    EXPECT_TRUE(fs::is_directory(dir.path / "from_env"));
}

TEST(KernelCache, Fnv1aMatchesTheReferenceValues) {
    EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
    EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ull);
}

} // namespace cuda_runtime_test
} // namespace conflux::cuda
