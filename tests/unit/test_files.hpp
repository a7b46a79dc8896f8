// File and command-line helpers shared by the tests that write files and run the conflux tool.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace conflux::test {

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
}

struct tool_result {
    int exit_code = -1; // -1: killed by a signal (a crash, or the timeout)
    std::string out;
    std::string err;
};

// Runs the built conflux tool (CONFLUX_TOOL) with `args` under `timeout` (a hang ends as a kill
// instead of blocking the test run); its stdout and stderr go through files in `dir`. env:
// NAME='VALUE' assignments for the child only (the test's own environment is never changed).
inline tool_result run_tool(const std::string& args, const std::filesystem::path& dir,
                            const std::string& env = "", unsigned seconds = 600) {
    const auto out = dir / "stdout.txt";
    const auto err = dir / "stderr.txt";
    const std::string cmd = env + " timeout -s KILL " + std::to_string(seconds) + " '" +
                            CONFLUX_TOOL + "' " + args + " >'" + out.string() + "' 2>'" +
                            err.string() + "'";
    const int status = std::system(cmd.c_str());
    tool_result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

} // namespace conflux::test
