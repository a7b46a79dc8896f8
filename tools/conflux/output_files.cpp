#include "output_files.hpp"

#include "conflux/ir/npy.hpp"
#include "conflux/util/errors.hpp"
#include "conflux/util/printable.hpp"

#include <filesystem>
#include <set>

namespace conflux::tool {

namespace {

// Output names become file names. A name from the model must not leave the directory ('/',
// "..", "."), nor put control characters into a file name (they reach every later `ls`), nor
// exceed what a file system takes (255 bytes, with ".npy" and a suffix after it). Such
// characters become '_'; the caller says when a name was changed.
std::string file_name_for(const std::string& name, std::size_t index) {
    constexpr std::size_t max_stem = 200;
    std::string out = name;
    for (auto& c : out)
        if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '_';
    if (out.size() > max_stem) out = out.substr(0, max_stem) + "_" + std::to_string(index);
    if (out.empty() || out == "." || out == "..") out = "output" + std::to_string(index);
    return out;
}

} // namespace

void write_output_files(const std::string& dir, const std::vector<std::string>& names,
                        const std::vector<argument>& results, std::ostream& out) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    CONFLUX_USER_CHECK(!ec, "--output-dir '", dir, "': cannot create it: ", ec.message());
    std::set<std::string> used;
    for (std::size_t i = 0; i < results.size(); ++i) {
        std::string base = file_name_for(names[i], i);
        const bool sanitised = base != names[i];
        // Two names may sanitise alike ("a/b" and "a_b"); keep both files.
        const bool taken = used.contains(base);
        while (!used.insert(base).second)
            base += "_" + std::to_string(i);
        auto path = (fs::path(dir) / (base + ".npy")).string();
        write_npy(path, results[i]);
        out << "wrote " << path;
        if (sanitised)
            out << " (output '" << printable(names[i])
                << "': its name is not a usable file name as it is)";
        else if (taken)
            out << " (output '" << printable(names[i]) << "': another output's file has that name)";
        out << "\n";
    }
}

} // namespace conflux::tool
