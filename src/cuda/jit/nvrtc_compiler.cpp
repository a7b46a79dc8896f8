#include "cuda/jit/nvrtc_compiler.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/jit/embedded_headers.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <memory>

namespace conflux::cuda {

namespace {

void check(nvrtcResult r, const std::string& entry, const char* what) {
    if (r != NVRTC_SUCCESS)
        throw_internal_error("NVRTC ", what, " failed for kernel ", entry, ": ",
                             nvrtcGetErrorString(r));
}

struct program_deleter {
    void operator()(nvrtcProgram* p) const {
        nvrtcDestroyProgram(p);
        delete p;
    }
};

} // namespace

std::vector<std::string> nvrtc_options(const std::string& arch) {
    return {"--gpu-architecture=" + arch, "--std=c++17", "-lineinfo"};
}

std::string target_arch(const kernel_source& k, const std::string& arch) {
    if (!k.arch_specific || (!arch.empty() && arch.back() == 'a')) return arch;
    return arch + "a";
}

std::string nvrtc_version() {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    return std::to_string(major) + "." + std::to_string(minor);
}

bool nvrtc_supports_arch(const std::string& arch) {
    if (arch.size() < 4 || arch.rfind("sm_", 0) != 0) return false;
    int n = 0;
    if (nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0) return false;
    std::vector<int> archs(static_cast<std::size_t>(n));
    nvrtcGetSupportedArchs(archs.data());
    std::string digits = arch.substr(3);
    if (!digits.empty() && digits.back() == 'a') digits.pop_back(); // sm_90a: arch-specific
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return false;
    const int value = std::stoi(digits);
    return std::find(archs.begin(), archs.end(), value) != archs.end();
}

compiled_kernel nvrtc_compile(const kernel_source& k, const std::string& arch) {
    const auto& headers = embedded_headers();
    std::vector<const char*> texts, names;
    for (const auto& h : headers) {
        texts.push_back(h.text);
        names.push_back(h.include_name);
    }
    std::unique_ptr<nvrtcProgram, program_deleter> prog(new nvrtcProgram{});
    const std::string file = k.entry + ".cu";
    check(nvrtcCreateProgram(prog.get(), k.code.c_str(), file.c_str(), int(texts.size()),
                             texts.data(), names.data()),
          k.entry, "program creation");
    const auto options = nvrtc_options(target_arch(k, arch));
    std::vector<const char*> opts;
    for (const auto& o : options)
        opts.push_back(o.c_str());
    const nvrtcResult compiled = nvrtcCompileProgram(*prog, int(opts.size()), opts.data());

    compiled_kernel out;
    out.entry = k.entry;
    std::size_t log_size = 0;
    nvrtcGetProgramLogSize(*prog, &log_size);
    if (log_size > 1) {
        out.log.resize(log_size);
        nvrtcGetProgramLog(*prog, out.log.data());
        out.log.resize(log_size - 1);
    }
    if (compiled != NVRTC_SUCCESS)
        throw_internal_error("NVRTC could not compile generated kernel ", k.entry, " for ",
                             target_arch(k, arch), ": ", nvrtcGetErrorString(compiled), "\n",
                             out.log);
    std::size_t size = 0;
    check(nvrtcGetCUBINSize(*prog, &size), k.entry, "cubin size query");
    out.cubin.resize(size);
    check(nvrtcGetCUBIN(*prog, out.cubin.data()), k.entry, "cubin retrieval");
    return out;
}

} // namespace conflux::cuda
