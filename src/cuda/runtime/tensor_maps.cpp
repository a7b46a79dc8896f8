#include "cuda/runtime/tensor_maps.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

namespace conflux::cuda {

namespace {

static_assert(sizeof(encoded_tensor_map) == sizeof(CUtensorMap));
static_assert(alignof(encoded_tensor_map) >= alignof(CUtensorMap));

using encode_tiled_fn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                     const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                     const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                     CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

encode_tiled_fn encode_tiled() {
    static encode_tiled_fn fn = nullptr;
    static std::once_flag once;
    std::call_once(once, [] {
        void* found = nullptr;
        cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
        // The entry point as CUDA 12.0 defined it (its signature has not changed since).
        const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &found,
                                                               12000, cudaEnableDefault, &status);
        if (e == cudaSuccess && status == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<encode_tiled_fn>(found);
        else
            (void)cudaGetLastError();
    });
    CONFLUX_USER_CHECK(fn != nullptr, "the NVIDIA driver does not provide cuTensorMapEncodeTiled "
                                      "(TMA kernels need a CUDA 12 driver)");
    return fn;
}

CUtensorMapSwizzle swizzle_of(unsigned bytes) {
    switch (bytes) {
    case 32:
        return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
        return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
        return CU_TENSOR_MAP_SWIZZLE_128B;
    default:
        return CU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

} // namespace

encoded_tensor_map encode_tensor_map(const tensor_map_spec& spec, const void* address,
                                     const std::string& kernel) {
    CONFLUX_ASSERT(spec.rank >= 1 && spec.rank <= 5 && spec.element_bytes == 2,
                   "tensor map of kernel ", kernel, ": rank ", spec.rank, ", ", spec.element_bytes,
                   "-byte elements");
    encoded_tensor_map out;
    cuuint64_t dims[5] = {}, strides[4] = {};
    cuuint32_t box[5] = {}, element_strides[5] = {};
    for (unsigned d = 0; d < spec.rank; ++d) {
        dims[d] = spec.dims[d];
        box[d] = spec.box[d];
        element_strides[d] = 1;
        if (d + 1 < spec.rank) strides[d] = spec.strides[d];
    }
    const CUresult r = encode_tiled()(
        reinterpret_cast<CUtensorMap*>(&out),
        spec.bfloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        spec.rank, const_cast<void*>(address), dims, strides, box, element_strides,
        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_of(spec.swizzle_bytes),
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    CONFLUX_ASSERT(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled failed (CUresult ", int(r),
                   ") for argument ", spec.argument, " of kernel ", kernel, " at ", address,
                   ": dims ", dims[0], "x", dims[1], "x", dims[2], ", box ", box[0], "x", box[1]);
    return out;
}

std::vector<encoded_tensor_map> encode_tensor_maps(const kernel_source& k,
                                                   const std::vector<void*>& pointers) {
    std::vector<encoded_tensor_map> maps;
    maps.reserve(k.tensor_maps.size());
    for (const tensor_map_spec& spec : k.tensor_maps) {
        CONFLUX_ASSERT(spec.argument < pointers.size(), "tensor map of kernel ", k.entry,
                       " maps argument ", spec.argument, " of ", pointers.size());
        maps.push_back(encode_tensor_map(spec, pointers[spec.argument], k.entry));
    }
    return maps;
}

} // namespace conflux::cuda
