#include "cuda/runtime/loaded_kernels.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"

#include <utility>

namespace conflux::cuda {

loaded_kernel::loaded_kernel(const compiled_kernel& k, unsigned max_dynamic_shared,
                             std::string label)
    : entry_(k.entry), label_(label.empty() ? k.entry : std::move(label)), image_(k.cubin) {
    CONFLUX_ASSERT(!image_.empty(), "kernel ", label_, " has no cubin to load");
    cuda_check(cudaGetDevice(&device_), "query of the current device for kernel " + label_);
    cuda_check(
        cudaLibraryLoadData(&library_, image_.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
        "loading of kernel " + label_);
    try {
        // With lazy module loading (the default) a bad image is only reported here.
        cuda_check(cudaLibraryGetKernel(&kernel_, library_, entry_.c_str()),
                   "lookup of entry " + entry_ + " for kernel " + label_);
        if (max_dynamic_shared > default_dynamic_shared_limit) {
            // The runtime would only say "invalid argument"; the limit makes the message useful.
            int optin_limit = 0;
            cuda_check(cudaDeviceGetAttribute(&optin_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                              device_),
                       "query of the shared memory limit for kernel " + label_);
            CONFLUX_ASSERT(max_dynamic_shared <= unsigned(optin_limit), "kernel ", label_,
                           " needs ", max_dynamic_shared,
                           " bytes of dynamic shared memory; device ", device_, " allows ",
                           optin_limit);
            // The library API's own setter, per device; its documentation asks for it at
            // initialization rather than on the launch path, hence here and not in launch().
            cuda_check(cudaKernelSetAttributeForDevice(
                           kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(max_dynamic_shared), device_),
                       "opting kernel " + label_ + " in to " + std::to_string(max_dynamic_shared) +
                           " bytes of dynamic shared memory");
            max_dynamic_shared_ = max_dynamic_shared;
        }
    } catch (...) {
        release();
        throw;
    }
}

void* loaded_kernel::global(const std::string& name) const {
    void* address = nullptr;
    std::size_t bytes = 0;
    cuda_check(cudaLibraryGetGlobal(&address, &bytes, library_, name.c_str()),
               "lookup of device variable " + name + " in kernel " + label_);
    return address;
}

loaded_kernel::~loaded_kernel() {
    release();
}

void loaded_kernel::release() noexcept {
    // Errors are ignored: a destructor cannot report them, and at process exit the runtime may
    // already be unloading.
    if (library_) (void)cudaLibraryUnload(library_);
    library_ = nullptr;
    kernel_ = nullptr;
}

loaded_kernel::loaded_kernel(loaded_kernel&& other) noexcept
    : entry_(std::move(other.entry_)), label_(std::move(other.label_)),
      image_(std::move(other.image_)), library_(std::exchange(other.library_, nullptr)),
      kernel_(std::exchange(other.kernel_, nullptr)), device_(other.device_),
      max_dynamic_shared_(other.max_dynamic_shared_) {}

loaded_kernel& loaded_kernel::operator=(loaded_kernel&& other) noexcept {
    if (this != &other) {
        release();
        entry_ = std::move(other.entry_);
        label_ = std::move(other.label_);
        image_ = std::move(other.image_);
        library_ = std::exchange(other.library_, nullptr);
        kernel_ = std::exchange(other.kernel_, nullptr);
        device_ = other.device_;
        max_dynamic_shared_ = other.max_dynamic_shared_;
    }
    return *this;
}

void launch(const loaded_kernel& k, const launch_dims& dims, void** args, cudaStream_t stream) {
    const auto& g = dims.grid;
    if (std::size_t(g[0]) * g[1] * g[2] == 0) return;
    CONFLUX_ASSERT(k.handle(), "launch of kernel ", k.label(), " that is not loaded");
    CONFLUX_ASSERT(dims.shared_bytes <= k.max_dynamic_shared(), "launch of kernel ", k.label(),
                   " asks for ", dims.shared_bytes,
                   " bytes of dynamic shared memory; it was loaded for ", k.max_dynamic_shared());
    const dim3 grid(g[0], g[1], g[2]);
    const dim3 block(dims.block[0], dims.block[1], dims.block[2]);
    // The runtime takes a cudaKernel_t where it takes a kernel's address: one that is not a
    // device entry function's address is used as a cudaKernel_t as is.
    cuda_check(cudaLaunchKernel(reinterpret_cast<const void*>(k.handle()), grid, block, args,
                                dims.shared_bytes, stream),
               "launch of kernel " + k.label());
}

device_buffer::device_buffer(std::size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    cuda_check(cudaMalloc(&data_, bytes),
               "allocation of " + std::to_string(bytes) + " bytes of device memory");
}

device_buffer::~device_buffer() {
    release();
}

void device_buffer::release() noexcept {
    if (data_) (void)cudaFree(data_);
    data_ = nullptr;
    size_ = 0;
}

device_buffer::device_buffer(device_buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

device_buffer& device_buffer::operator=(device_buffer&& other) noexcept {
    if (this != &other) {
        release();
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

stream::stream() {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creation of a stream");
}

stream::~stream() {
    release();
}

void stream::release() noexcept {
    if (stream_) (void)cudaStreamDestroy(stream_);
    stream_ = nullptr;
}

stream::stream(stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

stream& stream::operator=(stream&& other) noexcept {
    if (this != &other) {
        release();
        stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
}

void stream::synchronize(std::string_view what) const {
    cuda_check(cudaStreamSynchronize(stream_), what);
}

} // namespace conflux::cuda
