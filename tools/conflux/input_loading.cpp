#include "input_loading.hpp"

#include "conflux/ir/npy.hpp"
#include "conflux/onnx/import.hpp"
#include "conflux/util/printable.hpp"

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

std::string describe_parameters(const std::vector<instruction_ref>& params) {
    std::string list;
    for (auto* p : params) {
        if (!list.empty()) list += ", ";
        list += p->get_operator().get_if<op::param>()->name_ + " (" +
                to_string(p->get_shape().as_standard()) + ")";
    }
    return list.empty() ? "none" : list;
}

} // namespace

ref::parameter_map bind_inputs(const module& m, const std::vector<input_file>& files,
                               std::uint64_t seed, std::ostream& notes) {
    auto params = m.parameters();
    ref::parameter_map bound;
    for (const auto& f : files) {
        auto* p = m.get_parameter(f.name);
        CONFLUX_USER_CHECK(
            p != nullptr, "--input '", f.name,
            "': the model has no such input; its inputs are: ", describe_parameters(params));
        CONFLUX_USER_CHECK(!bound.contains(f.name), "--input '", f.name, "' is given twice");
        argument value = load_tensor(f.path);
        const shape& want = p->get_shape();
        const shape& got = value.get_shape();
        CONFLUX_USER_CHECK(want.type() == got.type() && want.lens() == got.lens(), "input '",
                           f.name, "' from '", f.path, "': expected ",
                           to_string(want.as_standard()), ", got ", to_string(got.as_standard()));
        bound.emplace(f.name, std::move(value));
    }

    std::mt19937_64 rng(seed);
    for (auto* p : params) {
        const auto& name = p->get_operator().get_if<op::param>()->name_;
        if (bound.contains(name)) continue;
        notes << "conflux: input '" << printable(name) << "' not given: using random "
              << to_string(p->get_shape().as_standard()) << " (seed " << seed << ")\n";
        bound.emplace(name, random_argument(p->get_shape(), rng));
    }
    return bound;
}

} // namespace conflux::tool
