#include "cuda/jit/compile_kernels.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/jit/kernel_cache.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>

namespace conflux::cuda {

namespace {

struct source_identity {
    std::string_view entry, code;
    bool operator==(const source_identity&) const = default;
};

struct source_identity_hash {
    std::size_t operator()(const source_identity& s) const {
        const std::size_t h = std::hash<std::string_view>{}(s.entry);
        return h ^ (std::hash<std::string_view>{}(s.code) + 0x9e3779b97f4a7c15ull + (h << 6) +
                    (h >> 2));
    }
};

compiled_kernel compile_one(const kernel_source& k, const compile_kernels_options& options) {
    if (options.cache) {
        if (auto cubin = options.cache->load(k, options.arch))
            return compiled_kernel{k.entry, std::move(*cubin), {}};
    }
    compiled_kernel compiled = nvrtc_compile(k, options.arch);
    if (options.cache) options.cache->store(k, options.arch, compiled.cubin);
    return compiled;
}

// The exception a failed kernel is reported with: its own when it names the kernel (NVRTC's
// do), else the same kind of error with the kernel's name added.
std::exception_ptr naming_the_kernel(std::exception_ptr error, const std::string& entry) {
    const auto names_it = [&](const std::exception& e) {
        return std::string_view(e.what()).find(entry) != std::string_view::npos;
    };
    const std::string prefix = "compiling kernel " + entry + ": ";
    try {
        std::rethrow_exception(error);
    } catch (const user_error& e) {
        return names_it(e) ? error : std::make_exception_ptr(user_error(prefix + e.what()));
    } catch (const internal_error& e) {
        return names_it(e) ? error : std::make_exception_ptr(internal_error(prefix + e.what()));
    } catch (const std::exception& e) {
        return std::make_exception_ptr(internal_error(prefix + e.what()));
    } catch (...) {
        return std::make_exception_ptr(internal_error(prefix + "unknown exception"));
    }
}

} // namespace

std::vector<compiled_kernel> compile_kernels(const std::vector<kernel_source>& sources,
                                             const compile_kernels_options& options) {
    // distinct[i]: the index in `sources` of the i-th distinct kernel, in order of appearance.
    std::vector<std::size_t> distinct;
    std::vector<std::size_t> distinct_of(sources.size());
    std::unordered_map<source_identity, std::size_t, source_identity_hash> seen;
    for (std::size_t i = 0; i < sources.size(); ++i) {
        const auto [it, added] =
            seen.try_emplace(source_identity{sources[i].entry, sources[i].code}, distinct.size());
        if (added) distinct.push_back(i);
        distinct_of[i] = it->second;
    }

    const std::size_t total = distinct.size();
    std::vector<std::optional<compiled_kernel>> results(total);
    std::vector<std::exception_ptr> errors(total);
    // Work is claimed in increasing order, so when a kernel fails every kernel before it has
    // been claimed and runs to its end: the first failure in input order is always found.
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex progress_mutex;
    std::size_t done = 0;

    const auto work = [&] {
        while (!failed.load()) {
            const std::size_t i = next++;
            if (i >= total) return;
            const kernel_source& k = sources[distinct[i]];
            try {
                results[i] = compile_one(k, options);
                if (options.progress) {
                    std::lock_guard lock(progress_mutex);
                    options.progress(++done, total);
                }
            } catch (...) {
                errors[i] = naming_the_kernel(std::current_exception(), k.entry);
                failed = true;
                return;
            }
        }
    };

    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t threads =
        std::min<std::size_t>(options.threads ? options.threads : hardware, total);
    std::vector<std::thread> workers;
    for (std::size_t t = 1; t < threads; ++t) {
        try {
            workers.emplace_back(work);
        } catch (const std::system_error&) {
            break; // no more threads to be had: fewer workers do the same work
        }
    }
    work(); // the caller's thread is one of the workers
    for (auto& w : workers)
        w.join();

    for (const auto& error : errors)
        if (error) std::rethrow_exception(error);

    std::vector<compiled_kernel> out;
    out.reserve(sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i)
        out.push_back(*results[distinct_of[i]]);
    return out;
}

} // namespace conflux::cuda
