// The problem cache store: entries round-trip, JSON export/import, bad files moved aside, paths
// that cannot be written, and several processes (one of them killed mid-write) on one file.
#include "conflux/cuda/problem_cache.hpp"

#include "conflux/util/errors.hpp"

#include "test_files.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <sqlite3.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace problem_cache_test {

using namespace conflux;
using namespace conflux::cuda;
using namespace conflux::test;
namespace fs = std::filesystem;

namespace {

cache_entry entry(int i, const std::string& config = "128x128x32_w2x2_s3_k1") {
    const std::string slot = "conv2d f32 n1c64h56w56 k64r3s3 sig" + std::to_string(i);
    return {.slot = slot,
            .key = slot + " | sm_90/132 | gemm-5",
            .device = "sm_90/132",
            .generator_version = "gemm-5",
            .config = config,
            .time_ms = 0.25 + i};
}

// The files in dir whose names start with prefix.
std::vector<fs::path> files_starting_with(const fs::path& dir, const std::string& prefix) {
    std::vector<fs::path> found;
    for (const auto& f : fs::directory_iterator(dir))
        if (f.path().filename().string().starts_with(prefix)) found.push_back(f.path());
    return found;
}

std::string integrity_check(const fs::path& path) {
    sqlite3* db = nullptr;
    std::string result;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* s = nullptr;
        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr);
        while (sqlite3_step(s) == SQLITE_ROW)
            result += reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return result;
}

class problem_cache_test : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() /
               ("conflux_problem_cache_" + std::to_string(::getpid()) + "_" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        path_ = dir_ / "problems.sqlite";
    }
    void TearDown() override {
        std::error_code ec;
        fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
        fs::remove_all(dir_, ec);
    }

    problem_cache open() { return open(path_); }
    problem_cache open(const fs::path& path) {
        return problem_cache::open(path, [this](const std::string& m) { warnings_.push_back(m); });
    }

    fs::path dir_, path_;
    std::vector<std::string> warnings_;
};

} // namespace

TEST_F(problem_cache_test, entries_round_trip_and_persist) {
    {
        auto store = open();
        EXPECT_TRUE(store.persistent());
        EXPECT_EQ(store.path(), path_);
        EXPECT_FALSE(store.find(entry(1).slot));
        store.put(entry(2));
        store.put(entry(1));
        EXPECT_EQ(store.find(entry(1).slot), entry(1));
        EXPECT_EQ(store.list(), (std::vector{entry(1), entry(2)})); // sorted by slot
        // Same slot: the entry is replaced, not added.
        store.put(entry(1, "64x64x32_w2x2_s3_k1"));
        EXPECT_EQ(store.list().size(), 2u);
        EXPECT_EQ(store.find(entry(1).slot)->config, "64x64x32_w2x2_s3_k1");
    }
    auto store = open();
    EXPECT_TRUE(warnings_.empty());
    EXPECT_EQ(store.list(), (std::vector{entry(1, "64x64x32_w2x2_s3_k1"), entry(2)}));
    EXPECT_TRUE(store.erase(entry(2).slot));
    EXPECT_FALSE(store.erase(entry(2).slot));
    store.put(entry(3));
    EXPECT_EQ(store.clear(), 2u);
    EXPECT_TRUE(store.list().empty());
    EXPECT_EQ(store.clear(), 0u);
}

TEST_F(problem_cache_test, config_text_is_stored_as_given) {
    auto store = problem_cache::in_memory();
    EXPECT_FALSE(store.persistent());
    auto odd =
        entry(1, std::string("not a config 'quoted' \"; DROP TABLE problems;\n") + '\0' + "x");
    odd.time_ms = 0;
    store.put(odd);
    EXPECT_EQ(store.find(odd.slot), odd);
}

TEST_F(problem_cache_test, export_then_import_gives_equal_entries) {
    auto store = open();
    for (int i = 0; i < 3; ++i)
        store.put(entry(i));
    store.put(entry(7, "config with \"quotes\" and a \\ backslash"));
    store.export_json(dir_ / "export.json");
    EXPECT_NE(slurp(dir_ / "export.json").find("\"conflux_problem_cache\": 1"), std::string::npos);

    auto other = open(dir_ / "other.sqlite");
    EXPECT_EQ(other.import_json(dir_ / "export.json"), 4u);
    EXPECT_EQ(other.list(), store.list());
}

TEST_F(problem_cache_test, a_bad_import_is_a_user_error_and_changes_nothing) {
    auto store = open();
    store.put(entry(1));
    const auto before = store.list();
    const std::string good = R"({"slot": "a", "key": "a k", "device": "sm_90/132",
                                 "generator_version": "gemm-5", "config": "c", "time_ms": 1})";
    const std::pair<const char*, std::string> cases[] = {
        {"not_json.json", "{\"conflux_problem_cache\": 1, \"entries\": ["},
        {"no_marker.json", "{\"entries\": [" + good + "]}"},
        {"wrong_marker.json", "{\"conflux_problem_cache\": 2, \"entries\": [" + good + "]}"},
        {"a_list.json", "[" + good + "]"},
        // The first entry is whole; the second's missing field must keep the first out too.
        {"missing_field.json", "{\"conflux_problem_cache\": 1, \"entries\": [" + good +
                                   R"(, {"slot": "b", "key": "b k", "device": "sm_90/132",
                                   "generator_version": "gemm-5", "time_ms": 1}]})"},
        {"control_character.json", "{\"conflux_problem_cache\": 1, \"entries\": [" + good +
                                       R"(, {"slot": "b", "key": "b\u001bk", "device": "sm_90/132",
             "generator_version": "gemm-5", "config": "c", "time_ms": 1}]})"},
        {"infinite_time.json", "{\"conflux_problem_cache\": 1, \"entries\": [" + good +
                                   R"(, {"slot": "b", "key": "b k", "device": "sm_90/132",
                                   "generator_version": "gemm-5", "config": "c", "time_ms": 1e999}]})"},
        {"bad_time.json", "{\"conflux_problem_cache\": 1, \"entries\": [" + good +
                              R"(, {"slot": "b", "key": "b k", "device": "sm_90/132",
                              "generator_version": "gemm-5", "config": "c", "time_ms": "1"}]})"},
    };
    for (const auto& [name, text] : cases) {
        write_text(dir_ / name, text);
        try {
            store.import_json(dir_ / name);
            ADD_FAILURE() << name << " was imported";
        } catch (const user_error& e) {
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
        EXPECT_EQ(store.list(), before) << name;
    }
    try {
        store.import_json(dir_ / "missing.json");
        ADD_FAILURE() << "a missing file was imported";
    } catch (const user_error& e) {
        EXPECT_NE(std::string(e.what()).find("missing.json"), std::string::npos) << e.what();
    }
    try {
        store.import_json(dir_ / "missing_field.json");
    } catch (const user_error& e) {
        EXPECT_NE(std::string(e.what()).find("entry 1 has no \"config\""), std::string::npos)
            << e.what();
    }
}

TEST_F(problem_cache_test, a_garbage_file_is_moved_aside_and_a_fresh_store_started) {
    std::string garbage(8192, '\0');
    std::mt19937 rng(7);
    for (auto& c : garbage)
        c = static_cast<char>(rng());
    // A corrupt database: SQLite's header, garbage after it. (A file that does not even start
    // like a database is refused and left alone: bad_files_test.cpp.)
    garbage.replace(0, 16, std::string("SQLite format 3\0", 16));
    write_text(path_, garbage);
    {
        auto store = open();
        ASSERT_EQ(warnings_.size(), 1u);
        EXPECT_NE(warnings_[0].find(path_.string() + " is not a valid Conflux problem cache"),
                  std::string::npos)
            << warnings_[0];
        EXPECT_NE(warnings_[0].find("moved it to " + path_.string() + ".corrupt-"),
                  std::string::npos)
            << warnings_[0];
        EXPECT_TRUE(store.persistent());
        store.put(entry(1));
    }
    const auto moved = files_starting_with(dir_, "problems.sqlite.corrupt-");
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_EQ(slurp(moved[0]), garbage);
    warnings_.clear();
    EXPECT_EQ(open().list(), std::vector{entry(1)});
    EXPECT_TRUE(warnings_.empty()) << warnings_[0];
}

TEST_F(problem_cache_test, another_programs_database_is_moved_aside_intact) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE photos (name TEXT); INSERT INTO photos VALUES ('x')",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    const std::string original = slurp(path_);

    auto store = open();
    ASSERT_EQ(warnings_.size(), 1u);
    EXPECT_NE(warnings_[0].find(path_.string()), std::string::npos) << warnings_[0];
    EXPECT_NE(warnings_[0].find("photos"), std::string::npos) << warnings_[0];
    EXPECT_TRUE(store.persistent());
    store.put(entry(1));
    const auto moved = files_starting_with(dir_, "problems.sqlite.corrupt-");
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_EQ(slurp(moved[0]), original);
    EXPECT_EQ(store.list(), std::vector{entry(1)});
}

TEST_F(problem_cache_test, an_empty_file_becomes_a_store) {
    write_text(path_, "");
    auto store = open();
    EXPECT_TRUE(warnings_.empty());
    EXPECT_TRUE(store.persistent());
    EXPECT_TRUE(files_starting_with(dir_, "problems.sqlite.corrupt-").empty());
}

TEST_F(problem_cache_test, a_path_that_cannot_be_created_works_in_memory) {
    write_text(dir_ / "a_file", "x");
    const fs::path path = dir_ / "a_file" / "problems.sqlite";
    auto store = open(path);
    ASSERT_EQ(warnings_.size(), 1u);
    EXPECT_NE(warnings_[0].find(path.string()), std::string::npos) << warnings_[0];
    EXPECT_NE(warnings_[0].find("kept for this run only"), std::string::npos) << warnings_[0];
    EXPECT_FALSE(store.persistent());
    store.put(entry(1));
    EXPECT_EQ(store.find(entry(1).slot), entry(1));
}

TEST_F(problem_cache_test, a_read_only_directory_works_in_memory_and_writes_nothing) {
    if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
    {
        auto store = open();
        store.put(entry(1));
    }
    const std::string before = slurp(path_);
    fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
    // A store that exists is read (a read-only shared cache still answers); a new one cannot be.
    for (const fs::path& path : {path_, dir_ / "new.sqlite"}) {
        warnings_.clear();
        auto store = open(path);
        ASSERT_EQ(warnings_.size(), 1u) << path;
        EXPECT_NE(warnings_[0].find(path.string()), std::string::npos) << warnings_[0];
        EXPECT_NE(warnings_[0].find("kept for this run only"), std::string::npos) << warnings_[0];
        EXPECT_FALSE(store.persistent());
        EXPECT_EQ(store.find(entry(1).slot).has_value(), path == path_);
        store.put(entry(2));
        EXPECT_EQ(store.find(entry(2).slot), entry(2));
    }
    std::vector<std::string> names;
    for (const auto& f : fs::directory_iterator(dir_))
        names.push_back(f.path().filename().string());
    EXPECT_EQ(names, std::vector<std::string>{"problems.sqlite"});
    EXPECT_EQ(slurp(path_), before);
}

TEST_F(problem_cache_test, concurrent_processes_all_land_their_entries) {
    constexpr int processes = 4, per_process = 50;
    std::vector<pid_t> children;
    for (int p = 0; p < processes; ++p) {
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            // Every child opens the store itself (a new file: creating it races too).
            int code = 0;
            try {
                // A warning fails the child; it says why on stderr (ctest shows it).
                auto store = problem_cache::open(path_, [&](const std::string& w) {
                    code = 3;
                    std::fprintf(stderr, "child %d: %s\n", p, w.c_str());
                });
                if (!store.persistent()) code = 2;
                for (int i = 0; i < per_process; ++i)
                    store.put(entry(p * per_process + i));
            } catch (...) {
                code = 1;
            }
            ::_exit(code);
        }
        children.push_back(pid);
    }
    for (const pid_t pid : children) {
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    }
    EXPECT_EQ(open().list().size(), std::size_t(processes * per_process));
    EXPECT_TRUE(warnings_.empty());
    EXPECT_EQ(integrity_check(path_), "ok");
}

TEST_F(problem_cache_test, a_writer_killed_mid_write_leaves_only_whole_entries) {
    open(); // the file exists before the writer and the reader race
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        try {
            auto store = problem_cache::open(path_, {});
            for (int i = 0;; ++i)
                store.put(entry(i, "config-" + std::to_string(i)));
        } catch (...) {
        }
        ::_exit(1);
    }
    std::size_t seen = 0;
    {
        auto reader = open();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while ((seen = reader.list().size()) < 20 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself: " << status;
    ASSERT_GE(seen, 20u);

    warnings_.clear();
    auto store = open();
    EXPECT_TRUE(warnings_.empty()) << warnings_[0];
    const auto entries = store.list();
    EXPECT_GE(entries.size(), 20u);
    for (const auto& e : entries) {
        EXPECT_FALSE(e.config.empty()) << e.slot;
        EXPECT_FALSE(e.key.empty()) << e.slot;
        EXPECT_GT(e.time_ms, 0) << e.slot;
    }
    EXPECT_EQ(integrity_check(path_), "ok");
}

TEST(problem_cache_path, the_default_is_under_the_user_cache_directory) {
    // Only checked against the variables as they are: tests never change the environment.
    const fs::path path = default_problem_cache_path();
    const char* explicit_path = std::getenv("CONFLUX_PROBLEM_CACHE");
    if (explicit_path && *explicit_path) {
        EXPECT_EQ(path, fs::path(explicit_path));
    } else if (!path.empty()) {
        EXPECT_EQ(path.filename(), "problems.sqlite");
    }
}

} // namespace problem_cache_test
