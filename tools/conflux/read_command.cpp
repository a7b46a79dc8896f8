// conflux read MODEL: prints the imported program.
#include "commands.hpp"
#include "options.hpp"

#include <iostream>
#include <memory>

namespace conflux::tool {

command add_read_command(CLI::App& app) {
    auto options = std::make_shared<model_options>();
    auto* sub = app.add_subcommand("read", "Import an ONNX model and print the program");
    add_model_options(*sub, *options);
    return {sub, [options] {
                program p = load_model(*options);
                std::string text = p.to_string();
                if (!text.ends_with('\n')) text += '\n';
                std::cout << text;
                return 0;
            }};
}

} // namespace conflux::tool
