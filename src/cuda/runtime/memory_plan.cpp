#include "cuda/runtime/memory_plan.hpp"

#include "conflux/util/errors.hpp"

#include <algorithm>
#include <numeric>

namespace conflux::cuda {

namespace {

std::size_t round_up(std::size_t n, std::size_t alignment) {
    return (n + alignment - 1) / alignment * alignment;
}

bool lifetimes_overlap(const buffer_lifetime& a, const buffer_lifetime& b) {
    return a.first <= b.last && b.first <= a.last;
}

} // namespace

memory_plan plan_memory(const std::vector<buffer_lifetime>& buffers, std::size_t alignment) {
    CONFLUX_ASSERT(alignment != 0 && (alignment & (alignment - 1)) == 0,
                   "plan_memory: alignment must be a power of two");
    memory_plan plan;
    plan.offsets.assign(buffers.size(), 0);
    std::vector<std::size_t> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
        return buffers[a].first < buffers[b].first;
    });

    struct placed_range {
        std::size_t begin, end;
    };
    std::vector<std::size_t> placed;
    for (std::size_t id : order) {
        const buffer_lifetime& b = buffers[id];
        CONFLUX_ASSERT(b.first <= b.last, "plan_memory: buffer ", id, " ends before it starts");
        plan.total_bytes += b.bytes;
        const std::size_t size = round_up(b.bytes, alignment);
        // The ranges of the placed buffers alive at the same time, by start: the first gap
        // large enough wins.
        std::vector<placed_range> busy;
        for (std::size_t other : placed)
            if (lifetimes_overlap(b, buffers[other]))
                busy.push_back({plan.offsets[other],
                                plan.offsets[other] + round_up(buffers[other].bytes, alignment)});
        std::sort(busy.begin(), busy.end(),
                  [](const placed_range& x, const placed_range& y) { return x.begin < y.begin; });
        std::size_t offset = 0;
        for (const placed_range& r : busy) {
            if (r.begin >= offset + size) break;
            offset = std::max(offset, r.end);
        }
        plan.offsets[id] = offset;
        plan.arena_bytes = std::max(plan.arena_bytes, offset + size);
        placed.push_back(id);
    }
    return plan;
}

} // namespace conflux::cuda
