#include "cuda/codegen/kernel_name.hpp"

#include "conflux/ir/errors.hpp"
#include "conflux/util/fnv1a.hpp"

#include <cctype>

namespace conflux::cuda {

namespace {

// Written where the name goes while the text is hashed; no generator emits it otherwise.
constexpr std::string_view name_placeholder = "cx_entry_placeholder";

std::string identifier(const std::string& text) {
    std::string out;
    for (char c : text)
        out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return out;
}

} // namespace

kernel_source
write_named_kernel(const std::string& kind,
                   const std::function<kernel_source(const std::string& entry)>& write) {
    kernel_source k = write(std::string(name_placeholder));
    const std::string name =
        "cx_" + identifier(kind) + "_" + hex_64(fnv1a_64(k.code)).substr(0, 12);
    std::size_t uses = 0;
    for (std::size_t pos = k.code.find(name_placeholder); pos != std::string::npos;
         pos = k.code.find(name_placeholder, pos + name.size()), ++uses)
        k.code.replace(pos, name_placeholder.size(), name);
    CONFLUX_ASSERT(uses > 0 || k.empty(), "kernel '", kind, "' does not use its entry name");
    k.entry = name;
    return k;
}

} // namespace conflux::cuda
