// conflux: the command-line front end. Exit codes: 0 success, 2 a user error (bad model, input
// or option), 3 an internal error (a Conflux bug); command-line syntax errors exit with CLI11's
// code.
#include "commands.hpp"
#include "escaping_output.hpp"

#include "conflux/util/errors.hpp"
#include "conflux/util/printable.hpp"

#include <iostream>
#include <new>

int main(int argc, char** argv) {
    using namespace conflux::tool;
    const escaping_output escaped;
    CLI::App app{"Conflux: an ONNX inference compiler for NVIDIA GPUs", "conflux"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("conflux ") + CONFLUX_VERSION);

    std::vector<command> commands{add_read_command(app), add_compile_command(app),
                                  add_run_command(app),  add_verify_command(app),
                                  add_perf_command(app), add_cache_command(app)};

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }

    try {
        for (const auto& c : commands)
            if (c.app->parsed()) return c.run();
    } catch (const conflux::user_error& e) {
        std::cerr << "conflux: error: " << conflux::printable(e.what()) << "\n";
        return 2;
    } catch (const conflux::internal_error& e) {
        std::cerr << "conflux: internal error: " << conflux::printable(e.what()) << "\n";
        return 3;
    } catch (const std::bad_alloc&) {
        std::cerr << "conflux: error: out of memory\n";
        return 2;
    } catch (const std::exception& e) {
        // Anything else escaping the library is a bug: it should have been one of the above.
        std::cerr << "conflux: internal error: " << conflux::printable(e.what()) << "\n";
        return 3;
    }
    std::cerr << "conflux: internal error: no command ran\n";
    return 3;
}
