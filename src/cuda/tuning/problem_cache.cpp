// The problem cache on SQLite.
//
// The database runs in WAL mode: readers never wait for a writer, so a process that tunes and
// writes entry after entry cannot starve others that look entries up (in rollback-journal mode
// it could, past the busy timeout). WAL needs -wal and -shm files beside the database, which a
// read-only directory does not allow: such a store falls back to memory, and its entries are
// read through SQLite's immutable mode (no lock files; nobody can be writing a file whose
// directory is read-only). WAL also needs every process on one host, which a per-user cache is.
//
// A store is recognised by PRAGMA application_id (which no other program's database has) and
// its schema version by PRAGMA user_version; anything else in the file makes it foreign.
#include "conflux/cuda/problem_cache.hpp"

#include "conflux/util/errors.hpp"
#include "conflux/util/printable.hpp"
#include "conflux/util/read_file.hpp"
#include "util/user_cache_dir.hpp"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <variant>

namespace conflux::cuda {

namespace fs = std::filesystem;

namespace {

constexpr int application_id = 0x43584350; // "CXCP"
constexpr int schema_version = 1;
// Long enough for another process's transaction (a few rows) even on a slow disk; a process that
// waits this long has found something wrong, not a busy store.
constexpr int busy_timeout_ms = 10000;
constexpr int export_format = 1;
constexpr std::string_view export_marker = "conflux_problem_cache";
// An export holds a few hundred bytes per entry; this is far above any real one.
constexpr std::uint64_t max_export_bytes = std::uint64_t{256} << 20;
// Keys and configs are a few hundred characters; a longer field is not one Conflux wrote.
constexpr std::size_t max_field_length = 4096;
// The first 16 bytes of every SQLite database file.
constexpr std::string_view sqlite_header{"SQLite format 3\0", 16};

constexpr const char* create_table_sql = "CREATE TABLE IF NOT EXISTS problems ("
                                         "slot TEXT PRIMARY KEY NOT NULL, "
                                         "key TEXT NOT NULL, "
                                         "device TEXT NOT NULL, "
                                         "generator_version TEXT NOT NULL, "
                                         "config TEXT NOT NULL, "
                                         "time_ms REAL NOT NULL)";
const std::vector<std::string> table_columns = {"slot",   "key",    "device", "generator_version",
                                                "config", "time_ms"};
constexpr const char* select_columns =
    "SELECT slot, key, device, generator_version, config, time_ms FROM problems";

// An SQLite call that failed; open() sorts these into bad files, unusable paths and bugs, the
// other operations turn them into internal errors.
struct sqlite_failure {
    int code = SQLITE_ERROR;
    std::string message;
};

// The store's content is wrong (bad_file) or cannot be used from this process (unusable).
struct store_problem {
    enum kind_t { bad_file, unusable } kind;
    std::string reason;
};

[[noreturn]] void fail(sqlite3* db, int rc) {
    throw sqlite_failure{rc, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)};
}

void check(sqlite3* db, int rc) {
    if (rc != SQLITE_OK) fail(db, rc);
}

// Statements are prepared per call: the store is used a few times per compile, and a connection
// without cached statements needs no care when it moves or closes.
class statement {
public:
    statement(sqlite3* db, std::string_view sql) : db_(db) {
        check(db, sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s_, nullptr));
    }
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    ~statement() { sqlite3_finalize(s_); }

    void bind(int i, const std::string& text) {
        check(db_, sqlite3_bind_text(s_, i, text.data(), static_cast<int>(text.size()),
                                     SQLITE_TRANSIENT));
    }
    void bind(int i, double v) { check(db_, sqlite3_bind_double(s_, i, v)); }

    // True while it yields a row.
    bool step() {
        const int rc = sqlite3_step(s_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        fail(db_, rc);
    }
    void run() {
        while (step()) {
        }
    }

    std::string text(int col) const {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
        return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(s_, col)))
                 : std::string{};
    }
    double real(int col) const { return sqlite3_column_double(s_, col); }
    sqlite3_int64 integer(int col) const { return sqlite3_column_int64(s_, col); }

private:
    sqlite3* db_;
    sqlite3_stmt* s_ = nullptr;
};

void exec(sqlite3* db, const std::string& sql) {
    statement(db, sql).run();
}

// BEGIN IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout
// instead of one of them failing when it upgrades a read lock. Rolled back unless committed.
class write_transaction {
public:
    explicit write_transaction(sqlite3* db) : db_(db) { exec(db_, "BEGIN IMMEDIATE"); }
    write_transaction(const write_transaction&) = delete;
    write_transaction& operator=(const write_transaction&) = delete;
    ~write_transaction() {
        if (!done_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    void commit() {
        exec(db_, "COMMIT");
        done_ = true;
    }

private:
    sqlite3* db_;
    bool done_ = false;
};

struct connection {
    sqlite3* db = nullptr;
    connection() = default;
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;
    ~connection() { sqlite3_close_v2(db); }
    sqlite3* release() { return std::exchange(db, nullptr); }
};

void open_connection(connection& c, const std::string& name, int flags) {
    const int rc = sqlite3_open_v2(name.c_str(), &c.db, flags, nullptr);
    if (rc != SQLITE_OK) fail(c.db, rc);
    check(c.db, sqlite3_busy_timeout(c.db, busy_timeout_ms));
    check(c.db, sqlite3_extended_result_codes(c.db, 1));
}

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts)
        out += (out.empty() ? "" : ", ") + p;
    return out;
}

// Checks what the database holds; true when it is empty (a new file) and needs the schema.
// Throws store_problem for another program's database or an unknown schema.
bool inspect(sqlite3* db, bool check_integrity) {
    if (check_integrity) {
        statement quick(db, "PRAGMA quick_check");
        std::vector<std::string> problems;
        while (quick.step())
            if (const std::string row = quick.text(0); row != "ok" && problems.size() < 3)
                problems.push_back(row);
        if (!problems.empty())
            throw store_problem{store_problem::bad_file, "integrity check: " + join(problems)};
    }
    statement app(db, "PRAGMA application_id");
    const auto app_id = app.step() ? app.integer(0) : 0;
    statement version(db, "PRAGMA user_version");
    const auto user_version = version.step() ? version.integer(0) : 0;
    std::vector<std::string> objects;
    statement schema(db, "SELECT name FROM sqlite_master WHERE substr(name, 1, 7) <> 'sqlite_' "
                         "ORDER BY name");
    while (schema.step())
        objects.push_back(schema.text(0));

    if (app_id == 0 && user_version == 0 && objects.empty()) return true;
    if (app_id != application_id)
        throw store_problem{store_problem::bad_file,
                            objects.empty() ? "it is another program's SQLite database"
                                            : "it is an SQLite database holding " + join(objects)};
    if (user_version > schema_version)
        throw store_problem{store_problem::unusable,
                            "it was written by a newer Conflux (schema version " +
                                std::to_string(user_version) + ", this one reads " +
                                std::to_string(schema_version) + ")"};
    std::vector<std::string> columns;
    statement info(db, "PRAGMA table_info(problems)");
    while (info.step())
        columns.push_back(info.text(1));
    if (user_version != schema_version || objects != std::vector<std::string>{"problems"} ||
        columns != table_columns)
        throw store_problem{store_problem::bad_file,
                            "its schema (version " + std::to_string(user_version) + ", tables " +
                                join(objects) + ") is not the one Conflux writes"};
    return false;
}

// Checks the database and writes the schema when it is new, in one transaction so that two
// processes opening a new file at once do not both create it. The pragma writes make this a real
// write every time, which is what proves the file and its directory writable (a rollback
// journal is created next to the file on the first write).
void prepare(sqlite3* db) {
    write_transaction t(db);
    if (inspect(db, true)) exec(db, create_table_sql);
    exec(db, "PRAGMA application_id = " + std::to_string(application_id));
    exec(db, "PRAGMA user_version = " + std::to_string(schema_version));
    t.commit();
}

// PRAGMA journal_mode = WAL needs the file to itself for a moment, and SQLite answers BUSY at
// once, without the busy handler, when another connection is in the middle of opening it (a
// store created by several processes at once: 3 of 120 runs of the concurrent-processes test
// under load fell back to memory with "database is locked"). Retried for as long as the busy
// timeout would have waited.
void switch_to_wal(sqlite3* db) {
    for (int waited_ms = 0;; waited_ms += 5) {
        try {
            exec(db, "PRAGMA journal_mode = WAL");
            return;
        } catch (const sqlite_failure& e) {
            if ((e.code & 0xff) != SQLITE_BUSY || waited_ms >= busy_timeout_ms) throw;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

// What an SQLite error while opening means for the file.
store_problem classify(const sqlite_failure& f, const fs::path& path) {
    switch (f.code & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return {store_problem::bad_file, f.message};
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOLFS: {
        std::string reason = f.message;
        // "unable to open database file" alone does not say that the directory is the problem.
        const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
        if (::access(dir.c_str(), W_OK) != 0) reason += "; its directory is not writable";
        return {store_problem::unusable, reason};
    }
    default:
        throw_internal_error("problem cache ", path.string(),
                             ": SQLite error while opening: ", f.message);
    }
}

// Refuses (user_error) what an existing path names unless the store may open and write it: a
// symlink (writing through it would turn whatever it points to into a database), anything but a
// regular file, a file of another user, or a non-empty file that is not an SQLite database
// (someone's file given by mistake: moving it aside would surprise them).
void check_existing_file(const fs::path& path, const struct stat& st) {
    const auto refuse = [&](const std::string& why) {
        throw_user_error("problem cache '", path.string(), "' ", why);
    };
    if (S_ISLNK(st.st_mode))
        refuse("is a symbolic link; Conflux does not write through one (give the path of the "
               "file itself)");
    if (!S_ISREG(st.st_mode))
        refuse("is not a regular file (" + describe_file_type(st.st_mode) + ")");
    if (st.st_uid != ::geteuid())
        refuse("belongs to another user (uid " + std::to_string(st.st_uid) + ")");
    if (st.st_size == 0) return;
    std::string header(sqlite_header.size(), '\0');
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    // Unreadable: SQLite will say why when it opens the file.
    if (fd < 0) return;
    const ssize_t n = ::read(fd, header.data(), header.size());
    ::close(fd);
    if (n != static_cast<ssize_t>(header.size()) || header != sqlite_header)
        refuse("is not an SQLite database, so it is not a problem cache; Conflux leaves it "
               "alone (give another path)");
}

// Makes sure the store's file exists, created 0600 in parents created 0700, or is an existing
// file the store may use (check_existing_file). The reason when the path cannot be used (a
// read-only directory, say); nothing when it can.
std::optional<std::string> claim_store_file(const fs::path& path) {
    for (int attempt = 0; attempt < 3; ++attempt) {
        struct stat st {};
        if (::lstat(path.c_str(), &st) == 0) {
            check_existing_file(path, st);
            return std::nullopt;
        }
        if (errno != ENOENT) return std::string("cannot stat it: ") + std::strerror(errno);
        if (path.has_parent_path())
            if (const std::string error = create_private_directories(path.parent_path());
                !error.empty())
                return error;
        const int fd =
            ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            ::close(fd);
            return std::nullopt;
        }
        // EEXIST: another process created it meanwhile; look at it again.
        if (errno != EEXIST) {
            std::string reason = std::string("cannot create it: ") + std::strerror(errno);
            const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
            if (::access(dir.c_str(), W_OK) != 0) reason += "; its directory is not writable";
            return reason;
        }
    }
    return "the file kept changing while it was opened";
}

// The identity of the file at path, to notice another process replacing it between our check
// and our rename.
std::optional<std::pair<dev_t, ino_t>> file_identity(const fs::path& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return std::pair{st.st_dev, st.st_ino};
}

// Renames path (and any journal files beside it) to PATH.corrupt-<unix time>; the new name, or
// the error's text.
std::variant<fs::path, std::string> move_aside(const fs::path& path) {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    std::error_code ec;
    fs::path target = path.string() + ".corrupt-" + std::to_string(now);
    for (int n = 1; fs::exists(target, ec) || fs::exists(target.string() + "-journal", ec); ++n)
        target = path.string() + ".corrupt-" + std::to_string(now) + "-" + std::to_string(n);
    fs::rename(path, target, ec);
    if (ec) return "cannot move it aside to " + target.string() + ": " + ec.message();
    // A journal left by the old file would otherwise be played back into the fresh one.
    for (const char* suffix : {"-journal", "-wal", "-shm"}) {
        const fs::path side = path.string() + suffix;
        if (fs::exists(side, ec)) fs::rename(side, target.string() + suffix, ec);
    }
    return target;
}

// A URI that opens path without locks or -shm file (read-only media, read-only directories).
std::string immutable_uri(const fs::path& path) {
    static const char hex[] = "0123456789ABCDEF";
    std::string uri = "file:";
    for (const unsigned char c : fs::absolute(path).string()) {
        if (std::isalnum(c) ||
            std::string_view("/-._~").find(static_cast<char>(c)) != std::string_view::npos) {
            uri.push_back(static_cast<char>(c));
        } else {
            uri.push_back('%');
            uri.push_back(hex[c >> 4]);
            uri.push_back(hex[c & 15]);
        }
    }
    return uri + "?immutable=1";
}

// Copies a store we cannot write into memory (when it can be read and is ours); how many
// entries it holds, or 0.
std::size_t copy_readable(const fs::path& path, sqlite3* memory) {
    try {
        connection file;
        open_connection(file, immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
        if (inspect(file.db, false)) return 0;
        sqlite3_backup* b = sqlite3_backup_init(memory, "main", file.db, "main");
        if (!b) return 0;
        sqlite3_backup_step(b, -1);
        if (sqlite3_backup_finish(b) != SQLITE_OK) return 0;
        statement count(memory, "SELECT count(*) FROM problems");
        return count.step() ? static_cast<std::size_t>(count.integer(0)) : 0;
    } catch (const sqlite_failure&) {
    } catch (const store_problem&) {
    }
    return 0;
}

void write_entry(sqlite3* db, const cache_entry& e) {
    CONFLUX_ASSERT(!e.slot.empty(), "a problem cache entry needs a slot");
    CONFLUX_ASSERT(std::isfinite(e.time_ms) && e.time_ms >= 0, "time_ms ", e.time_ms);
    statement s(db, "INSERT OR REPLACE INTO problems (slot, key, device, generator_version, "
                    "config, time_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    s.bind(1, e.slot);
    s.bind(2, e.key);
    s.bind(3, e.device);
    s.bind(4, e.generator_version);
    s.bind(5, e.config);
    s.bind(6, e.time_ms);
    s.run();
}

cache_entry read_entry(const statement& s) {
    return {.slot = s.text(0),
            .key = s.text(1),
            .device = s.text(2),
            .generator_version = s.text(3),
            .config = s.text(4),
            .time_ms = s.real(5)};
}

const char* const entry_text_fields[] = {"slot", "key", "device", "generator_version", "config"};

cache_entry parse_entry(const nlohmann::json& j, std::size_t index, const fs::path& file) {
    const auto where = [&] { return file.string() + ": entry " + std::to_string(index); };
    CONFLUX_USER_CHECK(j.is_object(), where(), " is not an object");
    std::vector<std::string> text;
    for (const char* field : entry_text_fields) {
        const auto it = j.find(field);
        CONFLUX_USER_CHECK(it != j.end(), where(), " has no \"", field, "\"");
        CONFLUX_USER_CHECK(it->is_string(), where(), ": \"", field, "\" is not a string");
        text.push_back(it->get<std::string>());
        // Listings print these; nothing Conflux writes is this long or holds control characters.
        CONFLUX_USER_CHECK(text.back().size() <= max_field_length, where(), ": \"", field,
                           "\" is longer than ", max_field_length, " characters");
        CONFLUX_USER_CHECK(!has_control_character(text.back()), where(), ": \"", field,
                           "\" holds a control character");
    }
    CONFLUX_USER_CHECK(!text[0].empty(), where(), ": \"slot\" is empty");
    const auto time = j.find("time_ms");
    CONFLUX_USER_CHECK(time != j.end(), where(), " has no \"time_ms\"");
    CONFLUX_USER_CHECK(time->is_number() && std::isfinite(time->get<double>()) &&
                           time->get<double>() >= 0,
                       where(), ": \"time_ms\" is not a finite non-negative number");
    return {.slot = text[0],
            .key = text[1],
            .device = text[2],
            .generator_version = text[3],
            .config = text[4],
            .time_ms = time->get<double>()};
}

} // namespace

struct problem_cache::impl {
    connection c;
    fs::path path;
    bool persistent = false;
    // One connection serves every thread of the process; a transaction must not interleave.
    std::mutex mutex;

    // Runs f under the lock; an SQLite failure here is not about the file's content (open has
    // checked that), so it is a bug or a broken system, reported with SQLite's message.
    template <class F> auto locked(const char* what, F&& f) {
        std::lock_guard lock(mutex);
        try {
            return f(c.db);
        } catch (const sqlite_failure& e) {
            throw_internal_error("problem cache ", path.empty() ? "(in memory)" : path.string(),
                                 ": ", what, ": SQLite: ", e.message);
        }
    }
};

problem_cache::problem_cache(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
problem_cache::problem_cache(problem_cache&&) noexcept = default;
problem_cache& problem_cache::operator=(problem_cache&&) noexcept = default;
problem_cache::~problem_cache() = default;

problem_cache problem_cache::in_memory() {
    auto p = std::make_unique<impl>();
    try {
        open_connection(p->c, ":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        prepare(p->c.db);
    } catch (const sqlite_failure& e) {
        throw_internal_error("in-memory problem cache: SQLite: ", e.message);
    }
    return problem_cache(std::move(p));
}

problem_cache problem_cache::open(const fs::path& path, const warn_fn& warn) {
    const auto say = [&](const std::string& message) {
        if (warn) warn(message);
    };
    const auto in_memory_after = [&](const std::string& reason) {
        problem_cache memory = in_memory();
        memory.impl_->path = path;
        std::string message = "problem cache " + path.string() + " cannot be used (" + reason +
                              "); tuning results are kept for this run only";
        if (!path.empty())
            if (const auto n = copy_readable(path, memory.impl_->c.db); n > 0)
                message += " (its " + std::to_string(n) + " entries are read from it)";
        say(message);
        return memory;
    };
    if (path.empty())
        return in_memory_after("no path: none given, and none of CONFLUX_PROBLEM_CACHE, "
                               "XDG_CACHE_HOME, HOME is set");

    std::optional<std::string> moved_note;
    // A retry follows a file moved aside, or one that another process replaced while we looked.
    for (int attempt = 0; attempt < 4; ++attempt) {
        if (const auto reason = claim_store_file(path)) {
            if (moved_note) say(*moved_note);
            return in_memory_after(*reason);
        }
        const auto identity = file_identity(path);
        auto p = std::make_unique<impl>();
        p->path = path;
        std::optional<store_problem> problem;
        try {
            // The file exists now (claim_store_file); NOFOLLOW keeps SQLite from following a
            // symlink put in its place since.
            open_connection(p->c, path.string(),
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW);
            prepare(p->c.db);
            // Outside any transaction, as SQLite requires; persistent in the file.
            switch_to_wal(p->c.db);
        } catch (const sqlite_failure& e) {
            problem = classify(e, path);
        } catch (const store_problem& e) {
            problem = e;
        }
        if (!problem) {
            p->persistent = true;
            if (moved_note) say(*moved_note);
            return problem_cache(std::move(p));
        }
        p.reset(); // closes the file before it is renamed
        if (problem->kind == store_problem::unusable || moved_note) {
            if (moved_note) say(*moved_note);
            return in_memory_after(problem->reason);
        }
        if (file_identity(path) != identity) continue;
        auto moved = move_aside(path);
        if (const auto* error = std::get_if<std::string>(&moved))
            return in_memory_after(problem->reason + "; " + *error);
        moved_note = "problem cache " + path.string() + " is not a valid Conflux problem cache (" +
                     problem->reason + "); moved it to " + std::get<fs::path>(moved).string() +
                     " and started a fresh one";
    }
    return in_memory_after("the file kept changing while it was opened");
}

std::optional<cache_entry> problem_cache::find(const std::string& slot) const {
    return impl_->locked("find", [&](sqlite3* db) -> std::optional<cache_entry> {
        statement s(db, std::string(select_columns) + " WHERE slot = ?1");
        s.bind(1, slot);
        if (!s.step()) return std::nullopt;
        return read_entry(s);
    });
}

void problem_cache::put(const cache_entry& e) {
    impl_->locked("put", [&](sqlite3* db) {
        write_transaction t(db);
        write_entry(db, e);
        t.commit();
    });
}

bool problem_cache::erase(const std::string& slot) {
    return impl_->locked("erase", [&](sqlite3* db) {
        write_transaction t(db);
        statement s(db, "DELETE FROM problems WHERE slot = ?1");
        s.bind(1, slot);
        s.run();
        const bool removed = sqlite3_changes(db) > 0;
        t.commit();
        return removed;
    });
}

std::vector<cache_entry> problem_cache::list() const {
    return impl_->locked("list", [&](sqlite3* db) {
        std::vector<cache_entry> entries;
        statement s(db, std::string(select_columns) + " ORDER BY slot");
        while (s.step())
            entries.push_back(read_entry(s));
        return entries;
    });
}

std::size_t problem_cache::clear() {
    return impl_->locked("clear", [&](sqlite3* db) {
        write_transaction t(db);
        exec(db, "DELETE FROM problems");
        const auto removed = static_cast<std::size_t>(sqlite3_changes(db));
        t.commit();
        return removed;
    });
}

void problem_cache::export_json(const fs::path& file) const {
    nlohmann::json entries = nlohmann::json::array();
    for (const auto& e : list())
        entries.push_back({{"slot", e.slot},
                           {"key", e.key},
                           {"device", e.device},
                           {"generator_version", e.generator_version},
                           {"config", e.config},
                           {"time_ms", e.time_ms}});
    const nlohmann::json doc = {{std::string(export_marker), export_format},
                                {"entries", std::move(entries)}};
    std::ofstream out(file, std::ios::trunc);
    CONFLUX_USER_CHECK(out, "cannot write ", file.string(), ": ",
                       std::error_code(errno, std::generic_category()).message());
    // Invalid UTF-8 in a config (it is never checked) is replaced rather than failing the export.
    out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    out.close();
    CONFLUX_USER_CHECK(out, "cannot write ", file.string());
}

std::size_t problem_cache::import_json(const fs::path& file) {
    const std::string text = read_regular_file(file, max_export_bytes, "problem cache export");
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        // Syntax errors, and numbers out of the range of a double (1e999) among others.
        throw_user_error(file.string(), " is not valid JSON: ", e.what());
    }
    const std::string marker(export_marker);
    CONFLUX_USER_CHECK(doc.is_object() && doc.contains(marker) && doc[marker] == export_format,
                       file.string(), " is not a Conflux problem cache export (it needs \"", marker,
                       "\": ", export_format, ")");
    CONFLUX_USER_CHECK(doc.contains("entries") && doc["entries"].is_array(), file.string(),
                       ": \"entries\" is missing or not an array");
    std::vector<cache_entry> entries;
    for (const auto& j : doc["entries"])
        entries.push_back(parse_entry(j, entries.size(), file));
    return impl_->locked("import", [&](sqlite3* db) {
        write_transaction t(db);
        for (const auto& e : entries)
            write_entry(db, e);
        t.commit();
        return entries.size();
    });
}

bool problem_cache::persistent() const {
    return impl_->persistent;
}

const fs::path& problem_cache::path() const {
    return impl_->path;
}

fs::path default_problem_cache_path() {
    if (const std::string path = environment_value("CONFLUX_PROBLEM_CACHE"); !path.empty())
        return path;
    if (const fs::path base = user_cache_dir(); !base.empty()) return base / "problems.sqlite";
    return {};
}

} // namespace conflux::cuda
