// Compiled kernels loaded onto the GPU and launched through the CUDA runtime (the library API,
// cudaLibraryLoadData / cudaLibraryGetKernel / cudaLaunchKernel; never the driver API, so that
// no libcuda is linked), plus the device memory and streams launches use. Every type here owns
// its CUDA object: move-only, released in the destructor.
#pragma once

#include "cuda/jit/kernel_source.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace conflux::cuda {

// The dynamic shared memory a launch may use without opting in per kernel.
inline constexpr unsigned default_dynamic_shared_limit = 48 * 1024;

class loaded_kernel {
public:
    // Loads k's cubin on the current device. max_dynamic_shared: the most dynamic shared memory
    // any launch of it will ask for (its kernel_source's launch.shared_bytes); above 48 KiB the
    // kernel is opted in to that much on this device. label: how error messages name the
    // kernel, e.g. "k12_pointwise (@12 = pointwise ...)"; its entry when empty.
    explicit loaded_kernel(const compiled_kernel& k, unsigned max_dynamic_shared = 0,
                           std::string label = {});
    ~loaded_kernel();
    loaded_kernel(loaded_kernel&& other) noexcept;
    loaded_kernel& operator=(loaded_kernel&& other) noexcept;
    loaded_kernel(const loaded_kernel&) = delete;
    loaded_kernel& operator=(const loaded_kernel&) = delete;

    const std::string& entry() const { return entry_; }
    const std::string& label() const { return label_; }
    cudaKernel_t handle() const { return kernel_; }
    int device() const { return device_; }
    unsigned max_dynamic_shared() const { return max_dynamic_shared_; }
    // The device address of the module's __device__ variable `name` (a flag the kernel sets);
    // an internal error when the module has none.
    void* global(const std::string& name) const;

private:
    void release() noexcept;

    std::string entry_, label_;
    // The runtime's documentation does not say whether a lazily loaded library may read its
    // image after cudaLibraryLoadData returns, so the image lives as long as the library.
    std::vector<char> image_;
    cudaLibrary_t library_ = nullptr;
    cudaKernel_t kernel_ = nullptr;
    int device_ = 0;
    unsigned max_dynamic_shared_ = default_dynamic_shared_limit;
};

// Launches k on stream with args: one pointer per kernel parameter, each pointing at the
// parameter's value. A grid with no blocks (a kernel_source that is empty()) launches nothing.
// Launch errors throw, naming the kernel; faults inside the kernel surface at the next
// synchronization.
void launch(const loaded_kernel& k, const launch_dims& dims, void** args, cudaStream_t stream);

// Device memory from cudaMalloc; an empty buffer holds none.
class device_buffer {
public:
    device_buffer() = default;
    explicit device_buffer(std::size_t bytes);
    ~device_buffer();
    device_buffer(device_buffer&& other) noexcept;
    device_buffer& operator=(device_buffer&& other) noexcept;
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;

    void* data() const { return data_; }
    std::size_t size() const { return size_; }

private:
    void release() noexcept;

    void* data_ = nullptr;
    std::size_t size_ = 0;
};

// A stream that does not synchronize with the legacy default stream.
class stream {
public:
    stream();
    ~stream();
    stream(stream&& other) noexcept;
    stream& operator=(stream&& other) noexcept;
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;

    cudaStream_t get() const { return stream_; }
    // Waits for the work queued so far; a fault in it throws, with `what` saying what ran.
    void synchronize(std::string_view what) const;

private:
    void release() noexcept;

    cudaStream_t stream_ = nullptr;
};

} // namespace conflux::cuda
