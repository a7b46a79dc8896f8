#include "conflux/util/parallel_for.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace conflux {

void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& f,
                  std::size_t grain) {
    if (n == 0) return;
    std::size_t workers = std::max(1u, std::thread::hardware_concurrency());
    workers = std::min(workers,
                       (n + std::max<std::size_t>(grain, 1) - 1) / std::max<std::size_t>(grain, 1));
    if (workers <= 1) {
        f(0, n);
        return;
    }
    std::exception_ptr error;
    std::mutex error_mutex;
    std::vector<std::thread> threads;
    std::size_t chunk = (n + workers - 1) / workers;
    for (std::size_t w = 1; w < workers; ++w) {
        std::size_t b = w * chunk, e = std::min(n, b + chunk);
        if (b >= e) break;
        threads.emplace_back([&, b, e] {
            try {
                f(b, e);
            } catch (...) {
                std::lock_guard lock(error_mutex);
                if (!error) error = std::current_exception();
            }
        });
    }
    try {
        f(0, std::min(n, chunk));
    } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
    }
    for (auto& t : threads)
        t.join();
    if (error) std::rethrow_exception(error);
}

} // namespace conflux
