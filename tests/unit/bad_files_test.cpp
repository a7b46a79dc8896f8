// Files that are not what they claim to be: FIFOs, devices, directories, oversized or sparse
// files given as inputs, models or cache exports; a kernel cache whose directory others can
// write; a problem cache path that is a symlink to someone else's file. Each must be refused
// promptly (never hang, never read without bound) with a message naming the path, or, for the
// kernel cache, leave the cache unused with one warning.
//
// Anything that could block runs in a child process with a deadline (fork + alarm, or the CLI
// under `timeout`), so a regression fails the test instead of hanging it.
#include "conflux/cuda/problem_cache.hpp"
#include "conflux/ir/npy.hpp"
#include "conflux/util/errors.hpp"
#include "conflux/util/read_file.hpp"

#include "cuda/jit/kernel_cache.hpp"
#include "test_files.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace bad_files_test {

using namespace conflux;
using namespace conflux::test;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto pos = text.find(part); pos != std::string::npos; pos = text.find(part, pos + 1))
        ++n;
    return n;
}

unsigned mode_of(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
}

// Why problem_cache::open refuses `path`; "(opened)" when it does not.
std::string refused(const fs::path& path) {
    try {
        cuda::problem_cache::open(path, [](const std::string&) {});
    } catch (const user_error& e) {
        return e.what();
    }
    return "(opened)";
}

// Runs f in a child process that SIGALRM kills after `seconds`; true when f returned in time.
// What f checks it reports through its exit code: f returns false for a failed check.
bool returns_within(unsigned seconds, const std::function<bool()>& f) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::alarm(seconds);
        bool ok = false;
        try {
            ok = f();
        } catch (...) {
        }
        ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

class bad_files : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("conflux_bad_files_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        fs::permissions(dir_, fs::perms::owner_all); // 0700 whatever the umask
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    // The CLI under `timeout`: a hang ends as a kill instead of blocking the test run.
    tool_result run(const std::string& args, unsigned seconds = 60) const {
        return run_tool(args, dir_, "", seconds);
    }

    static std::string example() {
        const std::string path = std::string(CONFLUX_SOURCE_DIR) + "/examples/conv_block.onnx";
        return "'" + path + "'";
    }

    fs::path fifo(const std::string& name) const {
        const fs::path p = dir_ / name;
        EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0) << p;
        return p;
    }

    fs::path dir_;
};

std::string read_error(const fs::path& path, std::uint64_t max_size) {
    try {
        read_regular_file(path, max_size, "test file");
    } catch (const user_error& e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace

// ---- the bounded regular-file reader ------------------------------------------------------------

TEST_F(bad_files, a_regular_file_is_read_whole_and_up_to_its_bound) {
    std::string content;
    for (int i = 0; i < 10000; ++i)
        content += static_cast<char>(i * 7 + 3);
    write_text(dir_ / "f.bin", content);
    EXPECT_EQ(read_regular_file(dir_ / "f.bin", content.size(), "test file"), content);
    EXPECT_EQ(read_regular_file(dir_ / "f.bin", 1 << 20, "test file"), content);
    // A symlink to a regular file is followed: that is what users expect of an input path.
    fs::create_symlink(dir_ / "f.bin", dir_ / "link.bin");
    EXPECT_EQ(read_regular_file(dir_ / "link.bin", 1 << 20, "test file"), content);
    write_text(dir_ / "empty.bin", "");
    EXPECT_EQ(read_regular_file(dir_ / "empty.bin", 0, "test file"), "");
}

TEST_F(bad_files, the_reader_refuses_fifos_devices_directories_and_oversized_files) {
    const fs::path pipe = fifo("pipe.npy");
    // Opening a FIFO for reading blocks until a writer comes; the reader must not.
    EXPECT_TRUE(returns_within(10, [&] {
        const std::string e = read_error(pipe, 1 << 20);
        return contains(e, "test file '" + pipe.string() +
                               "': it is a FIFO (named pipe), not a "
                               "regular file");
    }));
    fs::create_symlink("/dev/zero", dir_ / "zero.npy");
    EXPECT_TRUE(returns_within(10, [&] {
        return contains(read_error(dir_ / "zero.npy", 1 << 20), "it is a character device");
    }));
    fs::create_directory(dir_ / "d.npy");
    EXPECT_TRUE(contains(read_error(dir_ / "d.npy", 1 << 20), "it is a directory")) << dir_;
    write_text(dir_ / "big.bin", std::string(101, 'x'));
    const std::string big = read_error(dir_ / "big.bin", 100);
    EXPECT_TRUE(contains(big, "big.bin': it is larger than 100 bytes")) << big;
    const std::string missing = read_error(dir_ / "missing.bin", 100);
    EXPECT_TRUE(contains(missing, "missing.bin': cannot open it (No such file")) << missing;
}

TEST_F(bad_files, the_reader_can_refuse_symlinks_and_files_others_can_write) {
    write_text(dir_ / "f", "abc");
    fs::create_symlink(dir_ / "f", dir_ / "link");
    std::string why;
    const file_read_options strict{.max_size = 100, .follow_symlinks = false, .private_file = true};
    ::chmod((dir_ / "f").c_str(), 0600);
    EXPECT_EQ(try_read_regular_file(dir_ / "f", strict, why), std::optional<std::string>("abc"));
    EXPECT_FALSE(try_read_regular_file(dir_ / "link", strict, why));
    EXPECT_EQ(why, "it is a symbolic link, not a regular file");
    ::chmod((dir_ / "f").c_str(), 0620);
    EXPECT_FALSE(try_read_regular_file(dir_ / "f", strict, why));
    EXPECT_EQ(why, "others can write it");
}

// ---- the command line: inputs and models ------------------------------------------------------

TEST_F(bad_files, an_input_that_is_a_fifo_is_refused_at_once) {
    const fs::path pipe = fifo("x.npy");
    const auto r = run("run " + example() + " --target ref --input x=" + pipe.string(), 30);
    EXPECT_EQ(r.exit_code, 2) << r.err; // 137 would mean it blocked until killed
    EXPECT_TRUE(contains(r.err, "'" + pipe.string() + "': it is a FIFO")) << r.err;
    EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
}

TEST_F(bad_files, inputs_that_are_devices_directories_or_too_large_are_refused) {
    fs::create_symlink("/dev/zero", dir_ / "zero.npy");
    auto r =
        run("run " + example() + " --target ref --input x=" + (dir_ / "zero.npy").string(), 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "zero.npy': it is a character device")) << r.err;

    fs::create_directory(dir_ / "dir.pb");
    r = run("run " + example() + " --target ref --input x=" + (dir_ / "dir.pb").string(), 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "dir.pb': it is a directory")) << r.err;

    // A sparse file: 16 GiB + 1 byte that take no disk space and must not be read.
    { std::ofstream(dir_ / "huge.npy"); }
    fs::resize_file(dir_ / "huge.npy", (std::uintmax_t{16} << 30) + 1);
    r = run("run " + example() + " --target ref --input x=" + (dir_ / "huge.npy").string(), 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "huge.npy': it is larger than 16 GiB")) << r.err;
}

TEST_F(bad_files, a_model_that_is_a_fifo_or_a_device_is_refused_at_once) {
    const fs::path pipe = fifo("m.onnx");
    auto r = run("read '" + pipe.string() + "'", 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "model '" + pipe.string() + "': it is a FIFO")) << r.err;
    fs::create_symlink("/dev/zero", dir_ / "zero.onnx");
    r = run("read '" + (dir_ / "zero.onnx").string() + "'", 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "zero.onnx': it is a character device")) << r.err;
}

// ---- problem cache import ----------------------------------------------------------------------

TEST_F(bad_files, cache_import_of_bad_files_and_bad_entries_is_a_user_error) {
    const std::string option = " --problem-cache '" + (dir_ / "problems.sqlite").string() + "'";
    const auto entry = [](const std::string& fields) {
        return "{\"conflux_problem_cache\": 1, \"entries\": [{\"slot\": \"s\", \"key\": \"k\", "
               "\"device\": \"sm_90/132\", \"generator_version\": \"gemm-5\"" +
               fields + "}]}";
    };
    const std::string config = ", \"config\": \"c\"";
    struct bad_case {
        std::string name, text, expected;
    };
    const std::vector<bad_case> cases = {
        {"overflow.json", entry(config + ", \"time_ms\": 1e999"), "is not valid JSON"},
        {"negative.json", entry(config + ", \"time_ms\": -1"),
         "entry 0: \"time_ms\" is not a finite non-negative number"},
        {"string_time.json", entry(config + ", \"time_ms\": \"1\""),
         "entry 0: \"time_ms\" is not a finite non-negative number"},
        {"no_time.json", entry(config), "entry 0 has no \"time_ms\""},
        {"no_config.json", entry(", \"time_ms\": 1"), "entry 0 has no \"config\""},
        {"number_config.json", entry(", \"config\": 7, \"time_ms\": 1"),
         "entry 0: \"config\" is not a string"},
        {"huge_config.json",
         entry(", \"config\": \"" + std::string(5000, 'c') + "\", \"time_ms\": 1"),
         "entry 0: \"config\" is longer than 4096 characters"},
        {"escape.json", entry(", \"config\": \"\\u001b[2J\", \"time_ms\": 1"),
         "entry 0: \"config\" holds a control character"},
        {"garbage.json", "\x01\x02\xff garbage", "is not valid JSON"},
        {"deep.json", std::string(100000, '[') + std::string(100000, ']'),
         "is not a Conflux problem cache export"},
    };
    for (const auto& c : cases) {
        write_text(dir_ / c.name, c.text);
        const auto r = run("cache import '" + (dir_ / c.name).string() + "'" + option);
        EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.err;
        EXPECT_TRUE(contains(r.err, c.name)) << r.err;
        EXPECT_TRUE(contains(r.err, c.expected)) << c.name << ": " << r.err;
        EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
    }
    fs::create_directory(dir_ / "dir.json");
    auto r = run("cache import '" + (dir_ / "dir.json").string() + "'" + option);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "dir.json': it is a directory")) << r.err;

    const fs::path pipe = fifo("pipe.json");
    r = run("cache import '" + pipe.string() + "'" + option, 30);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "pipe.json': it is a FIFO")) << r.err;

    // None of them changed the store; a good file still imports.
    write_text(dir_ / "good.json", entry(config + ", \"time_ms\": 0.5"));
    r = run("cache import '" + (dir_ / "good.json").string() + "'" + option);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "imported 1 entries")) << r.out;
    r = run("cache list" + option);
    EXPECT_TRUE(contains(r.out, "1 entries")) << r.out;
}

// ---- the kernel cache --------------------------------------------------------------------------

namespace {

cuda::kernel_source some_kernel(int i) {
    cuda::kernel_source k;
    k.entry = "cx_bad_files_" + std::to_string(i);
    k.code = "extern \"C\" __global__ void " + k.entry +
             "(float* out0) { out0[0] = " + std::to_string(i) + ".0f; }\n";
    k.outputs = 1;
    return k;
}

struct warnings {
    std::vector<std::string> lines;
    cuda::kernel_cache::warn_fn fn() {
        return [this](const std::string& m) { lines.push_back(m); };
    }
};

} // namespace

TEST_F(bad_files, a_new_kernel_cache_is_private_and_its_entries_are_0600) {
    const fs::path cache_dir = dir_ / "a" / "b" / "kernels";
    warnings w;
    cuda::kernel_cache cache(cache_dir, w.fn());
    ASSERT_TRUE(cache.enabled()) << (w.lines.empty() ? "" : w.lines[0]);
    EXPECT_TRUE(w.lines.empty());
    for (const fs::path& d : {dir_ / "a", dir_ / "a" / "b", cache_dir})
        EXPECT_EQ(mode_of(d), 0700u) << d;
    const auto k = some_kernel(1);
    cache.store(k, "sm_90", {'c', 'u', 'b', 'i', 'n'});
    EXPECT_EQ(mode_of(cache.entry_path(k, "sm_90")), 0600u);
    EXPECT_EQ(cache.load(k, "sm_90"), (std::vector<char>{'c', 'u', 'b', 'i', 'n'}));
}

TEST_F(bad_files, a_group_writable_kernel_cache_is_not_used_and_warns_once) {
    const fs::path cache_dir = dir_ / "kernels";
    const auto k = some_kernel(2);
    fs::path entry;
    {
        cuda::kernel_cache trusted(cache_dir);
        ASSERT_TRUE(trusted.enabled());
        trusted.store(k, "sm_90", {'o', 'l', 'd'});
        entry = trusted.entry_path(k, "sm_90");
    }
    ::chmod(cache_dir.c_str(), 0770);
    // Someone in the group replaces the entry (a valid one: the file format has no secret).
    {
        cuda::kernel_cache writer(dir_ / "other");
        writer.store(k, "sm_90", {'e', 'v', 'i', 'l'});
        fs::copy_file(writer.entry_path(k, "sm_90"), entry, fs::copy_options::overwrite_existing);
    }
    warnings w;
    cuda::kernel_cache cache(cache_dir, w.fn());
    EXPECT_FALSE(cache.enabled());
    EXPECT_FALSE(cache.load(k, "sm_90"));
    cache.store(some_kernel(3), "sm_90", {'x'});
    EXPECT_FALSE(cache.load(some_kernel(3), "sm_90"));
    EXPECT_FALSE(fs::exists(cache.entry_path(some_kernel(3), "sm_90")));
    ASSERT_EQ(w.lines.size(), 1u);
    EXPECT_TRUE(contains(w.lines[0], "kernel cache disabled")) << w.lines[0];
    EXPECT_TRUE(contains(w.lines[0], "directory " + cache_dir.string() +
                                         " is writable by its "
                                         "group (mode 0770)"))
        << w.lines[0];
    EXPECT_FALSE(contains(w.lines[0], "\n"));

    ::chmod(cache_dir.c_str(), 0757);
    warnings w2;
    cuda::kernel_cache world(cache_dir, w2.fn());
    EXPECT_FALSE(world.enabled());
    ASSERT_EQ(w2.lines.size(), 1u);
    EXPECT_TRUE(contains(w2.lines[0], "is writable by everyone")) << w2.lines[0];
}

TEST_F(bad_files, a_kernel_cache_of_another_user_is_not_used) {
    fs::path foreign;
    if (::geteuid() == 0) {
        foreign = dir_ / "foreign";
        fs::create_directory(foreign);
        ASSERT_EQ(::chown(foreign.c_str(), 65534, 65534), 0);
    } else {
        foreign = "/"; // root's, and never written: the check comes before any write
    }
    warnings w;
    cuda::kernel_cache cache(foreign, w.fn());
    EXPECT_FALSE(cache.enabled());
    EXPECT_FALSE(cache.load(some_kernel(4), "sm_90"));
    ASSERT_EQ(w.lines.size(), 1u);
    EXPECT_TRUE(contains(w.lines[0], "directory " + foreign.string() + " belongs to another user"))
        << w.lines[0];
}

TEST_F(bad_files, kernel_cache_entries_that_are_fifos_symlinks_or_shared_are_misses) {
    const fs::path cache_dir = dir_ / "kernels";
    const auto k = some_kernel(5);
    fs::path entry;
    {
        cuda::kernel_cache cache(cache_dir);
        ASSERT_TRUE(cache.enabled());
        cache.store(k, "sm_90", {'g', 'o', 'o', 'd'});
        entry = cache.entry_path(k, "sm_90");
    }
    // A whole valid entry behind a symlink, and the same entry writable by others.
    fs::rename(entry, dir_ / "elsewhere.cxkc");
    fs::create_symlink(dir_ / "elsewhere.cxkc", entry);
    {
        cuda::kernel_cache cache(cache_dir);
        EXPECT_FALSE(cache.load(k, "sm_90"));
    }
    fs::remove(entry);
    fs::copy_file(dir_ / "elsewhere.cxkc", entry);
    ::chmod(entry.c_str(), 0666);
    {
        cuda::kernel_cache cache(cache_dir);
        EXPECT_FALSE(cache.load(k, "sm_90"));
        ::chmod(entry.c_str(), 0600);
        EXPECT_EQ(cache.load(k, "sm_90"), (std::vector<char>{'g', 'o', 'o', 'd'}));
    }
    // A FIFO named like the entry: a miss at once, and the next store replaces it.
    fs::remove(entry);
    ASSERT_EQ(::mkfifo(entry.c_str(), 0600), 0);
    EXPECT_TRUE(returns_within(10, [&] {
        cuda::kernel_cache cache(cache_dir);
        return cache.enabled() && !cache.load(k, "sm_90") && cache.misses() == 1;
    }));
    cuda::kernel_cache cache(cache_dir);
    cache.store(k, "sm_90", {'n', 'e', 'w'});
    EXPECT_EQ(cache.load(k, "sm_90"), (std::vector<char>{'n', 'e', 'w'}));
}

TEST_F(bad_files, compile_with_fifos_as_kernel_cache_entries_does_not_block) {
    const fs::path cache_dir = dir_ / "kernels";
    const std::string args = "compile " + example() + " --target cuda --tune none --arch sm_90 " +
                             "--problem-cache '" + (dir_ / "p.sqlite").string() +
                             "' --kernel-cache '" + cache_dir.string() + "'";
    auto r = run(args, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::size_t entries = 0;
    for (const auto& e : fs::directory_iterator(cache_dir)) {
        fs::remove(e.path());
        ASSERT_EQ(::mkfifo(e.path().c_str(), 0600), 0);
        ++entries;
    }
    ASSERT_GT(entries, 0u);
    r = run(args, 300);
    EXPECT_EQ(r.exit_code, 0) << r.err; // 137: killed by timeout, blocked on a FIFO
    EXPECT_TRUE(contains(r.out, "(0 from the kernel cache)")) << r.out;
    EXPECT_FALSE(contains(r.err, "warning")) << r.err;

    // A cache directory others can write: one warning, and the compile goes on without it.
    ::chmod(cache_dir.c_str(), 0777);
    r = run(args, 300);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(count_of(r.err, "kernel cache disabled"), 1u) << r.err;
    EXPECT_TRUE(contains(r.err, cache_dir.string() + " is writable by everyone")) << r.err;
    EXPECT_TRUE(contains(r.out, "(0 from the kernel cache)")) << r.out;
}

// ---- the problem cache path --------------------------------------------------------------------

TEST_F(bad_files, a_problem_cache_symlink_is_refused_and_its_target_left_unchanged) {
    // An empty file (which the store would otherwise happily turn into a database), and a
    // non-empty one.
    write_text(dir_ / "empty_target", "");
    fs::create_symlink(dir_ / "empty_target", dir_ / "cache.sqlite");
    std::string e = refused(dir_ / "cache.sqlite");
    EXPECT_TRUE(
        contains(e, "problem cache '" + (dir_ / "cache.sqlite").string() + "' is a symbolic link"))
        << e;
    EXPECT_EQ(slurp(dir_ / "empty_target"), "");
    const std::string precious = "precious data\n";
    write_text(dir_ / "target", precious);
    fs::create_symlink(dir_ / "target", dir_ / "cache2.sqlite");
    e = refused(dir_ / "cache2.sqlite");
    EXPECT_TRUE(contains(e, "is a symbolic link")) << e;
    EXPECT_EQ(slurp(dir_ / "target"), precious);
    // A dangling symlink is refused too: creating through it would create its target.
    fs::create_symlink(dir_ / "nowhere", dir_ / "cache3.sqlite");
    EXPECT_TRUE(contains(refused(dir_ / "cache3.sqlite"), "is a symbolic link"));
    EXPECT_FALSE(fs::exists(dir_ / "nowhere"));

    // Through the CLI: exit 2, and nothing moved or created next to the target.
    const auto r = run("cache list --problem-cache '" + (dir_ / "cache.sqlite").string() + "'");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "cache.sqlite' is a symbolic link")) << r.err;
    EXPECT_EQ(slurp(dir_ / "empty_target"), "");
    for (const auto& f : fs::directory_iterator(dir_))
        EXPECT_FALSE(contains(f.path().filename().string(), "corrupt")) << f.path();
}

TEST_F(bad_files, a_problem_cache_path_naming_something_else_is_refused_and_left_alone) {
    const std::string text = "my notes, not a database, long enough to be mistaken for one.....";
    write_text(dir_ / "notes.txt", text);
    std::string e = refused(dir_ / "notes.txt");
    EXPECT_TRUE(contains(e, "problem cache '" + (dir_ / "notes.txt").string() +
                                "' is not an SQLite database"))
        << e;
    EXPECT_EQ(slurp(dir_ / "notes.txt"), text);
    write_text(dir_ / "short", "SQLite");
    EXPECT_TRUE(contains(refused(dir_ / "short"), "is not an SQLite database"));
    fs::create_directory(dir_ / "dir.sqlite");
    e = refused(dir_ / "dir.sqlite");
    EXPECT_TRUE(contains(e, "is not a regular file (it is a directory)")) << e;
    const fs::path pipe = fifo("pipe.sqlite");
    EXPECT_TRUE(returns_within(10, [&] { return contains(refused(pipe), "it is a FIFO"); }));
    if (::geteuid() == 0) {
        write_text(dir_ / "theirs.sqlite", "");
        ASSERT_EQ(::chown((dir_ / "theirs.sqlite").c_str(), 65534, 65534), 0);
        EXPECT_TRUE(contains(refused(dir_ / "theirs.sqlite"), "belongs to another user"));
    }
    for (const auto& f : fs::directory_iterator(dir_))
        EXPECT_FALSE(contains(f.path().filename().string(), "corrupt")) << f.path();
}

TEST_F(bad_files, a_new_problem_cache_is_0600_in_directories_created_0700) {
    const fs::path path = dir_ / "x" / "y" / "problems.sqlite";
    std::vector<std::string> warnings;
    {
        auto store =
            cuda::problem_cache::open(path, [&](const std::string& m) { warnings.push_back(m); });
        EXPECT_TRUE(store.persistent());
        store.put({.slot = "s",
                   .key = "k",
                   .device = "d",
                   .generator_version = "g",
                   .config = "c",
                   .time_ms = 1});
    }
    EXPECT_TRUE(warnings.empty()) << warnings[0];
    EXPECT_EQ(mode_of(dir_ / "x"), 0700u);
    EXPECT_EQ(mode_of(dir_ / "x" / "y"), 0700u);
    EXPECT_EQ(mode_of(path), 0600u);
    for (const auto& f : fs::directory_iterator(path.parent_path()))
        EXPECT_EQ(mode_of(f.path()) & 077, 0u) << f.path(); // -wal, -shm follow the file
    // It opens again as a store (an SQLite file of this user).
    auto again =
        cuda::problem_cache::open(path, [&](const std::string& m) { warnings.push_back(m); });
    EXPECT_TRUE(again.persistent());
    EXPECT_EQ(again.list().size(), 1u);
    EXPECT_TRUE(warnings.empty()) << warnings[0];
}

} // namespace bad_files_test
