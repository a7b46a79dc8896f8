// What a generated kernel needs from CUDA to compile as host C++ (force-included by
// cuda_kernel_emulation_test.cpp), and the emulator that runs it: the qualifiers as nothing
// (__shared__ as static storage, which the threads of the block being run share; the dynamic
// shared memory as a buffer of the block being run, poisoned before it), the
// intrinsics the kernel headers use, the 16-bit conversions with the reference target's
// rounding, and cx_emulation_run, which runs a grid one block at a time with every thread of the
// block a fiber (ucontext): __syncthreads switches fibers until all of the block's threads have
// arrived, a warp shuffle until all 32 lanes of the warp have. Kernels with inline PTX (tensor
// cores, cp.async) do not compile here; a barrier that not every thread reaches is reported as
// a deadlock.
#pragma once

#include "conflux/ir/half.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <ucontext.h>
#include <utility>
#include <vector>

#define CX_HOST_EMULATION 1
#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __align__(n) alignas(n)

struct cx_emulated_dim3 {
    unsigned x = 0, y = 0, z = 0;
};

// One thread of the block being run.
struct cx_emulated_thread {
    ucontext_t context;
    cx_emulated_dim3 index;
    unsigned linear = 0;
    enum { runnable, at_barrier, at_warp, done } state = runnable;
};

// The emulator's state: the block being run and its threads.
struct cx_emulation {
    void (*call)(void* const*) = nullptr;
    void* const* args = nullptr;
    cx_emulated_dim3 block, block_dim, grid_dim;
    std::vector<cx_emulated_thread> threads;
    std::vector<std::vector<char>> stacks;
    cx_emulated_thread* current = nullptr;
    ucontext_t scheduler;
    unsigned long long shuffle[32][32] = {}; // per warp and lane: the value being exchanged
    std::string misaligned; // the first vector access at an address not aligned to its size
    // The block's dynamic shared memory (the kernel's `extern __shared__` array, which the test
    // rewrites to point here), poisoned before each block as the GPU leaves it undefined.
    std::vector<unsigned char> dynamic_shared_storage;
    unsigned char* dynamic_shared = nullptr;
};
inline cx_emulation cx_emu;

inline void cx_host_check_aligned(const void* p, std::size_t bytes) {
    if (reinterpret_cast<std::uintptr_t>(p) % bytes != 0 && cx_emu.misaligned.empty()) {
        const auto& t = cx_emu.current->index;
        cx_emu.misaligned = "a " + std::to_string(bytes) + "-byte vector access at an address " +
                            std::to_string(reinterpret_cast<std::uintptr_t>(p) % bytes) +
                            " bytes past alignment (block " + std::to_string(cx_emu.block.x) +
                            ", thread " + std::to_string(t.x) + ")";
    }
}

// CUDA's built-in vector types as the generated kernels use them (a union member written
// through a cast pointer): a store checks its address as the GPU would.
struct alignas(16) uint4 {
    unsigned x, y, z, w;
    uint4& operator=(const uint4& o) {
        cx_host_check_aligned(this, 16);
        x = o.x, y = o.y, z = o.z, w = o.w;
        return *this;
    }
};
struct alignas(8) uint2 {
    unsigned x, y;
    uint2& operator=(const uint2& o) {
        cx_host_check_aligned(this, 8);
        x = o.x, y = o.y;
        return *this;
    }
};

#define threadIdx (cx_emu.current->index)
#define blockIdx (cx_emu.block)
#define blockDim (cx_emu.block_dim)
#define gridDim (cx_emu.grid_dim)

inline void cx_emulation_yield(decltype(cx_emulated_thread::state) state) {
    cx_emulated_thread* t = cx_emu.current;
    t->state = state;
    swapcontext(&t->context, &cx_emu.scheduler);
}

inline void cx_emulation_thread_main() {
    cx_emu.call(cx_emu.args);
    cx_emu.current->state = cx_emulated_thread::done; // uc_link resumes the scheduler
}

// Runs the grid; 0 when it ran, else 1 with why in `error`.
extern "C" int cx_emulation_run(void (*call)(void* const*), void* const* args, const unsigned* grid,
                                const unsigned* block, unsigned shared_bytes, char* error,
                                std::size_t error_size) {
    cx_emu.call = call;
    cx_emu.args = args;
    cx_emu.grid_dim = {grid[0], grid[1], grid[2]};
    cx_emu.block_dim = {block[0], block[1], block[2]};
    cx_emu.misaligned.clear();
    const unsigned n = block[0] * block[1] * block[2];
    if (n > 1024) {
        std::snprintf(error, error_size, "a block of %u threads", n);
        return 1;
    }
    cx_emu.dynamic_shared_storage.assign(shared_bytes + 1024, 0);
    cx_emu.dynamic_shared =
        cx_emu.dynamic_shared_storage.data() +
        (1024 - reinterpret_cast<std::uintptr_t>(cx_emu.dynamic_shared_storage.data()) % 1024) %
            1024;
    cx_emu.threads.assign(n, {});
    cx_emu.stacks.resize(n);
    for (auto& s : cx_emu.stacks)
        s.resize(1 << 16);
    for (unsigned bz = 0; bz < grid[2]; ++bz)
        for (unsigned by = 0; by < grid[1]; ++by)
            for (unsigned bx = 0; bx < grid[0]; ++bx) {
                cx_emu.block = {bx, by, bz};
                std::memset(cx_emu.dynamic_shared, 0x7f, shared_bytes);
                for (unsigned i = 0; i < n; ++i) {
                    cx_emulated_thread& t = cx_emu.threads[i];
                    t.state = cx_emulated_thread::runnable;
                    t.linear = i;
                    t.index = {i % block[0], i / block[0] % block[1], i / (block[0] * block[1])};
                    getcontext(&t.context);
                    t.context.uc_stack.ss_sp = cx_emu.stacks[i].data();
                    t.context.uc_stack.ss_size = cx_emu.stacks[i].size();
                    t.context.uc_link = &cx_emu.scheduler;
                    makecontext(&t.context, cx_emulation_thread_main, 0);
                }
                for (;;) {
                    bool ran = false;
                    for (auto& t : cx_emu.threads)
                        if (t.state == cx_emulated_thread::runnable) {
                            cx_emu.current = &t;
                            swapcontext(&cx_emu.scheduler, &t.context);
                            ran = true;
                        }
                    // Every thread is done, waiting at the block's barrier or at a shuffle.
                    bool all_done = true, any_at_warp = false;
                    for (const auto& t : cx_emu.threads) {
                        all_done = all_done && t.state == cx_emulated_thread::done;
                        any_at_warp = any_at_warp || t.state == cx_emulated_thread::at_warp;
                    }
                    if (all_done) break;
                    bool released = false;
                    if (!any_at_warp) {
                        for (auto& t : cx_emu.threads)
                            if (t.state == cx_emulated_thread::at_barrier) {
                                t.state = cx_emulated_thread::runnable;
                                released = true;
                            }
                    } else {
                        // A warp whose live lanes have all reached the shuffle goes on.
                        for (unsigned w = 0; w * 32 < n; ++w) {
                            bool ready = true, any = false;
                            for (unsigned l = w * 32; l < std::min(n, w * 32 + 32); ++l) {
                                const auto st = cx_emu.threads[l].state;
                                ready = ready && (st == cx_emulated_thread::at_warp ||
                                                  st == cx_emulated_thread::done);
                                any = any || st == cx_emulated_thread::at_warp;
                            }
                            if (ready && any)
                                for (unsigned l = w * 32; l < std::min(n, w * 32 + 32); ++l)
                                    if (cx_emu.threads[l].state == cx_emulated_thread::at_warp) {
                                        cx_emu.threads[l].state = cx_emulated_thread::runnable;
                                        released = true;
                                    }
                        }
                    }
                    if (!ran && !released) {
                        std::snprintf(error, error_size,
                                      "block (%u, %u, %u): threads wait at a barrier or shuffle "
                                      "that others never reach",
                                      bx, by, bz);
                        return 1;
                    }
                }
            }
    if (!cx_emu.misaligned.empty()) {
        std::snprintf(error, error_size, "%s", cx_emu.misaligned.c_str());
        return 1;
    }
    return 0;
}

inline void __syncthreads() {
    cx_emulation_yield(cx_emulated_thread::at_barrier);
}

// A barrier that returns whether any of the block's threads passed a non-zero value: each
// thread posts, all arrive, each reads, and the last to read clears the value before any thread
// can pass the second barrier and post again.
inline int __syncthreads_or(int v) {
    static int any = 0;
    static unsigned reads = 0;
    any |= v != 0;
    __syncthreads();
    const int r = any;
    if (++reads == cx_emu.block_dim.x * cx_emu.block_dim.y * cx_emu.block_dim.z) {
        any = 0;
        reads = 0;
    }
    __syncthreads();
    return r;
}

// A warp barrier: every lane of the warp arrives before any goes on.
inline void __syncwarp(unsigned = 0xffffffffu) {
    cx_emulation_yield(cx_emulated_thread::at_warp);
}

// A shuffle: every lane posts its value, waits for the warp, reads its source lane's, and waits
// again before the slots can be reused.
template <class T> T cx_emulation_shuffle(T v, unsigned source_lane) {
    static_assert(sizeof(T) <= sizeof(unsigned long long));
    const unsigned warp = cx_emu.current->linear / 32, lane = cx_emu.current->linear % 32;
    std::memcpy(&cx_emu.shuffle[warp][lane], &v, sizeof(T));
    cx_emulation_yield(cx_emulated_thread::at_warp);
    T r;
    std::memcpy(&r, &cx_emu.shuffle[warp][source_lane % 32], sizeof(T));
    cx_emulation_yield(cx_emulated_thread::at_warp);
    return r;
}
template <class T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
    const unsigned lane = cx_emu.current->linear % 32;
    return cx_emulation_shuffle(v, lane / unsigned(width) * unsigned(width) +
                                       unsigned(src) % unsigned(width));
}
template <class T> T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    const unsigned lane = cx_emu.current->linear % 32;
    const unsigned source = lane ^ unsigned(mask);
    // Outside the lane's segment of `width`: its own value.
    return cx_emulation_shuffle(v,
                                source / unsigned(width) == lane / unsigned(width) ? source : lane);
}

// CUDA's math functions are global; the host's classification ones live in std.
using std::isfinite;
using std::isinf;
using std::isnan;

struct float2 {
    float x, y;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
inline float2 make_float2(float x, float y) {
    return {x, y};
}
struct double2 {
    double x, y;
};
inline double2 make_double2(double x, double y) {
    return {x, y};
}

inline float __int_as_float(int v) {
    return std::bit_cast<float>(v);
}
inline float __uint_as_float(unsigned v) {
    return std::bit_cast<float>(v);
}
inline int __float_as_int(float v) {
    return std::bit_cast<int>(v);
}
inline double __longlong_as_double(long long v) {
    return std::bit_cast<double>(v);
}
inline float __fadd_rn(float a, float b) {
    return a + b;
}
inline float __fsub_rn(float a, float b) {
    return a - b;
}
inline float __fmul_rn(float a, float b) {
    return a * b;
}
inline float __fdiv_rn(float a, float b) {
    return a / b;
}
inline float __fdividef(float a, float b) {
    return a / b;
}
inline double __dadd_rn(double a, double b) {
    return a + b;
}
inline double __dsub_rn(double a, double b) {
    return a - b;
}
inline double __dmul_rn(double a, double b) {
    return a * b;
}
inline double __ddiv_rn(double a, double b) {
    return a / b;
}
// Calls kernel f with args[i] as its i-th (pointer) parameter.
template <class... P, std::size_t... I>
void cx_emulation_apply(void (*f)(P...), void* const* args, std::index_sequence<I...>) {
    f(static_cast<P>(args[I])...);
}
template <class... P> void cx_emulation_call(void (*f)(P...), void* const* args) {
    cx_emulation_apply(f, args, std::index_sequence_for<P...>{});
}

inline float cx_host_f16_to_float(unsigned short h) {
    return conflux::float16::to_float(h);
}
inline unsigned short cx_host_float_to_f16(float f) {
    return conflux::float16::from_float(f);
}
inline unsigned short cx_host_float_to_bf16(float f) {
    return conflux::bfloat16::from_float(f);
}
