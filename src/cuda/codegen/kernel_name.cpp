#include "cuda/codegen/kernel_name.hpp"

#include "conflux/util/errors.hpp"
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
    // The name is a hash of the text, which contains the name: the text is hashed as written
    // with the placeholder, then written again with the name it gets, so that every generator
    // writes its entry name itself and nothing is patched into generated code afterwards.
    const kernel_source hashed = write(std::string(name_placeholder));
    const std::string name =
        "cx_" + identifier(kind) + "_" + hex_64(fnv1a_64(hashed.code)).substr(0, 12);
    kernel_source k = write(name);
    CONFLUX_ASSERT(k.empty() || k.code.find(name) != std::string::npos, "kernel '", kind,
                   "' does not use its entry name");
    k.entry = name;
    return k;
}

} // namespace conflux::cuda
