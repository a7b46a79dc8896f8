#include "cuda/runtime/memory_plan.hpp"

#include <gtest/gtest.h>

#include <random>

namespace conflux::cuda {
namespace cuda_memory_plan_test {

bool overlap(std::size_t a0, std::size_t a1, std::size_t b0, std::size_t b1) {
    return a0 < b1 && b0 < a1;
}

// No two buffers alive at once share a byte, every offset is aligned, and the arena holds all.
void expect_sound(const std::vector<buffer_lifetime>& bufs, const memory_plan& plan,
                  std::size_t alignment) {
    ASSERT_EQ(plan.offsets.size(), bufs.size());
    for (std::size_t i = 0; i < bufs.size(); ++i) {
        EXPECT_EQ(plan.offsets[i] % alignment, 0u);
        EXPECT_LE(plan.offsets[i] + bufs[i].bytes, plan.arena_bytes);
        for (std::size_t j = i + 1; j < bufs.size(); ++j) {
            const bool alive_together =
                bufs[i].first <= bufs[j].last && bufs[j].first <= bufs[i].last;
            if (!alive_together || bufs[i].bytes == 0 || bufs[j].bytes == 0) continue;
            EXPECT_FALSE(overlap(plan.offsets[i], plan.offsets[i] + bufs[i].bytes, plan.offsets[j],
                                 plan.offsets[j] + bufs[j].bytes))
                << "buffers " << i << " and " << j;
        }
    }
}

TEST(MemoryPlan, AChainReusesMemoryAndNeedsOnlyTwoBuffersAtOnce) {
    // step k writes buffer k and reads buffer k-1: only neighbours are alive together.
    std::vector<buffer_lifetime> bufs;
    for (std::size_t k = 0; k < 10; ++k)
        bufs.push_back({1000, k, k + 1});
    const memory_plan plan = plan_memory(bufs, 256);
    expect_sound(bufs, plan, 256);
    EXPECT_EQ(plan.total_bytes, 10000u);
    EXPECT_EQ(plan.arena_bytes, 2048u); // two 1024-byte slots
}

TEST(MemoryPlan, BuffersAliveTogetherNeverShare) {
    std::vector<buffer_lifetime> bufs = {{100, 0, 5}, {200, 1, 5}, {300, 2, 5}};
    const memory_plan plan = plan_memory(bufs, 64);
    expect_sound(bufs, plan, 64);
    EXPECT_EQ(plan.arena_bytes, 128u + 256u + 320u);
}

TEST(MemoryPlan, RandomLifetimesAreSoundAndNeverWorseThanNoReuse) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<buffer_lifetime> bufs;
        const std::size_t n = 1 + rng() % 40;
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t first = rng() % 50;
            bufs.push_back({rng() % 5000, first, first + rng() % 10});
        }
        const memory_plan plan = plan_memory(bufs, 256);
        expect_sound(bufs, plan, 256);
        std::size_t padded = 0;
        for (const auto& b : bufs)
            padded += (b.bytes + 255) / 256 * 256;
        EXPECT_LE(plan.arena_bytes, padded);
    }
}

} // namespace cuda_memory_plan_test
} // namespace conflux::cuda
