// conflux cache path|list|export|import|clear: looks after the problem cache (the tuned perf
// config of each problem) without compiling anything.
#include "commands.hpp"
#include "options.hpp"

#include "conflux/cuda/problem_cache.hpp"
#include "conflux/util/errors.hpp"
#include "conflux/util/printable.hpp"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

namespace conflux::tool {

namespace {

struct cache_options {
    std::string problem_cache;
    std::string file;
};

cuda::problem_cache open_store(const cache_options& options) {
    return cuda::problem_cache::open(
        resolve_problem_cache_path(options.problem_cache),
        [](const std::string& message) { std::cerr << "warning: " << message << "\n"; });
}

// Changing a store that lives in memory only would report work that is lost at exit.
void require_persistent(const cuda::problem_cache& store, const char* what) {
    CONFLUX_USER_CHECK(store.persistent(), "problem cache ", store.path().string(),
                       " cannot be written; nothing ", what);
}

std::string format_time(double ms) {
    if (ms <= 0) return "-";
    std::ostringstream os;
    os << std::setprecision(4) << ms << " ms";
    return os.str();
}

int list(const cache_options& options) {
    const auto store = open_store(options);
    const auto entries = store.list();
    // Columns are aligned so that a listing reads as a table; the key (long) comes last.
    std::size_t config_width = 6, time_width = 4, device_width = 6, version_width = 9;
    // A store may have been written by anything; what it holds is shown escaped.
    for (const auto& e : entries) {
        config_width = std::max(config_width, printable(e.config).size());
        time_width = std::max(time_width, format_time(e.time_ms).size());
        device_width = std::max(device_width, printable(e.device).size());
        version_width = std::max(version_width, printable(e.generator_version).size());
    }
    const auto row = [&](const std::string& config, const std::string& time,
                         const std::string& device, const std::string& version,
                         const std::string& key) {
        std::cout << std::left << std::setw(static_cast<int>(config_width)) << config << "  "
                  << std::setw(static_cast<int>(time_width)) << time << "  "
                  << std::setw(static_cast<int>(device_width)) << device << "  "
                  << std::setw(static_cast<int>(version_width)) << version << "  " << key << "\n";
    };
    if (!entries.empty()) row("config", "time", "device", "generator", "key");
    for (const auto& e : entries)
        row(printable(e.config), format_time(e.time_ms), printable(e.device),
            printable(e.generator_version), printable(e.key));
    std::cout << entries.size() << " entries in " << store.path().string() << "\n";
    return 0;
}

int export_entries(const cache_options& options) {
    const auto store = open_store(options);
    store.export_json(options.file);
    std::cout << "exported " << store.list().size() << " entries to " << options.file << "\n";
    return 0;
}

int import_entries(const cache_options& options) {
    auto store = open_store(options);
    require_persistent(store, "imported");
    const auto n = store.import_json(options.file);
    std::cout << "imported " << n << " entries from " << options.file << " into "
              << store.path().string() << "\n";
    return 0;
}

int clear(const cache_options& options) {
    auto store = open_store(options);
    require_persistent(store, "removed");
    const auto n = store.clear();
    std::cout << "removed " << n << " entries from " << store.path().string() << "\n";
    return 0;
}

} // namespace

command add_cache_command(CLI::App& app) {
    auto options = std::make_shared<cache_options>();
    auto* cache = app.add_subcommand("cache", "Show, export, import or clear the problem cache "
                                              "(the tuned perf config of each problem)");
    cache->require_subcommand(1);
    auto* path = cache->add_subcommand("path", "Print the problem cache's path");
    auto* list_sub = cache->add_subcommand("list", "List the entries");
    auto* export_sub = cache->add_subcommand("export", "Write the entries to a JSON file");
    export_sub->add_option("FILE", options->file, "JSON file to write")->required();
    auto* import_sub =
        cache->add_subcommand("import", "Add the entries of a JSON file written by export");
    import_sub->add_option("FILE", options->file, "JSON file to read")->required();
    auto* clear_sub = cache->add_subcommand("clear", "Remove every entry");
    for (auto* sub : {path, list_sub, export_sub, import_sub, clear_sub})
        add_problem_cache_option(*sub, options->problem_cache);

    return {cache, [=] {
                if (path->parsed()) {
                    std::cout << resolve_problem_cache_path(options->problem_cache).string()
                              << "\n";
                    return 0;
                }
                if (list_sub->parsed()) return list(*options);
                if (export_sub->parsed()) return export_entries(*options);
                if (import_sub->parsed()) return import_entries(*options);
                if (clear_sub->parsed()) return clear(*options);
                throw_internal_error("conflux cache: no subcommand ran");
            }};
}

} // namespace conflux::tool
