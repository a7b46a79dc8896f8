// Each command adds its subcommand to the app and returns how to run it once parsed. main() owns
// parsing and the mapping of errors to exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace conflux::tool {

struct command {
    CLI::App* app = nullptr;
    std::function<int()> run; // returns the exit code
};

command add_read_command(CLI::App& app);
command add_run_command(CLI::App& app);
command add_compile_command(CLI::App& app);
command add_verify_command(CLI::App& app);
command add_cache_command(CLI::App& app);
command add_perf_command(CLI::App& app);

} // namespace conflux::tool
