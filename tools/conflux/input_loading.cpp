#include "input_loading.hpp"

#include "conflux/ir/npy.hpp"
#include "conflux/onnx/import.hpp"
#include "conflux/util/printable.hpp"

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <set>

namespace conflux::tool {

std::vector<input_file> parse_input_files(const std::vector<std::string>& specs) {
    std::vector<input_file> files;
    for (const auto& spec : specs) {
        // Paths may contain '=', ONNX input names practically never do: split at the first.
        auto eq = spec.find('=');
        CONFLUX_USER_CHECK(eq != std::string::npos && eq != 0 && eq + 1 != spec.size(), "--input '",
                           spec, "': expected NAME=FILE");
        files.push_back({spec.substr(0, eq), spec.substr(eq + 1)});
    }
    return files;
}

argument load_tensor(const std::string& path) {
    auto ext = std::filesystem::path(path).extension().string();
    if (ext == ".npy") return read_npy(path);
    if (ext == ".pb") return onnx::read_tensor_file(path);
    throw_user_error("input file '", path,
                     "': unknown extension (expected .npy or .pb, an ONNX TensorProto)");
}

namespace {

std::string describe_parameters(const std::vector<std::string>& names,
                                const std::vector<shape>& shapes) {
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (!list.empty()) list += ", ";
        list += names[i] + " (" + to_string(shapes[i].as_standard()) + ")";
    }
    return list.empty() ? "none" : list;
}

} // namespace

ref::parameter_map bind_inputs(const module& m, const std::vector<input_file>& files,
                               std::uint64_t seed, std::ostream& notes) {
    std::vector<std::string> names;
    std::vector<shape> shapes;
    for (auto* p : m.parameters()) {
        names.push_back(p->get_operator().get_if<op::param>()->name_);
        shapes.push_back(p->get_shape());
    }
    return bind_inputs(names, shapes, files, seed, notes);
}

ref::parameter_map bind_inputs(const std::vector<std::string>& names,
                               const std::vector<shape>& shapes,
                               const std::vector<input_file>& files, std::uint64_t seed,
                               std::ostream& notes) {
    ref::parameter_map bound;
    for (const auto& f : files) {
        const auto it = std::find(names.begin(), names.end(), f.name);
        CONFLUX_USER_CHECK(
            it != names.end(), "--input '", f.name,
            "': the model has no such input; its inputs are: ", describe_parameters(names, shapes));
        CONFLUX_USER_CHECK(!bound.contains(f.name), "--input '", f.name, "' is given twice");
        argument value = load_tensor(f.path);
        const shape& want = shapes[std::size_t(it - names.begin())];
        const shape& got = value.get_shape();
        CONFLUX_USER_CHECK(want.type() == got.type() && want.lens() == got.lens(), "input '",
                           f.name, "' from '", f.path, "': expected ",
                           to_string(want.as_standard()), ", got ", to_string(got.as_standard()));
        bound.emplace(f.name, std::move(value));
    }

    std::mt19937_64 rng(seed);
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (bound.contains(names[i])) continue;
        notes << "conflux: input '" << printable(names[i]) << "' not given: using random "
              << to_string(shapes[i].as_standard()) << " (seed " << seed << ")\n";
        bound.emplace(names[i], random_argument(shapes[i], rng));
    }
    return bound;
}

} // namespace conflux::tool
