#include "cuda/codegen/gemm/tma_operands.hpp"

#include <algorithm>
#include <cstdlib>

namespace conflux::cuda::gemm {

namespace {

std::optional<tma_operand> no(std::string* why, const std::string& message) {
    if (why) *why = message;
    return std::nullopt;
}

} // namespace

std::optional<tma_operand> plan_tma_operand(const gemm_problem& p, const tile_plan& t, bool is_a,
                                            std::string* why) {
    const gemm_operand& o = is_a ? p.a : p.b;
    const std::string name = is_a ? "A" : "B";
    if (p.type != dtype::f16 && p.type != dtype::bf16)
        return no(why, "TMA configs take f16 or bf16");
    // An empty operand may have no memory at all (a null pointer), which no map can describe.
    if (p.k == 0 || p.empty()) return no(why, "an empty product has nothing for TMA to copy");
    // The reduction axis: a dot's one, or a 1x1 convolution's channels (its taps are len 1).
    const std::size_t k_axis = o.k_lens.size() - 1;
    for (std::size_t i = 0; i < k_axis; ++i)
        if (o.k_lens[i] != 1)
            return no(why, "TMA copies plain matrices: a convolution with a " +
                               std::to_string(o.k_lens[i]) +
                               "-tap kernel axis gathers its input (im2col)");
    long long row_stride = o.row_stride;
    if (p.conv && is_a) {
        // A 1x1 convolution reads its input as an M x C matrix when every output pixel is an
        // input pixel (stride 1, no padding, one group) and the pixels are evenly spaced.
        const conv_geometry& g = *p.conv;
        if (g.groups != 1) return no(why, "TMA copies of a grouped convolution's input");
        if (g.nd() == 0) return no(why, "a convolution without spatial axes");
        for (std::size_t d = 0; d < g.nd(); ++d)
            if (g.stride[d] != 1 || g.pad_begin[d] != 0 ||
                g.output_spatial[d] != g.input_spatial[d])
                return no(why, "TMA copies plain matrices: a strided or padded convolution "
                               "gathers its input (im2col)");
        row_stride = g.input_spatial_strides.back();
        long long step = row_stride;
        for (std::size_t d = g.nd(); d-- > 0;) {
            if (g.input_spatial[d] > 1 && g.input_spatial_strides[d] != step)
                return no(why, "the input's pixels are not evenly spaced in memory");
            step *= (long long)g.input_spatial[d];
        }
        if (g.images > 1 && g.image_stride != step)
            return no(why, "the input's images are not evenly spaced in memory");
    }
    const long long eb = 2;
    const bool k_major = t.major == operand_major::k;
    const long long inner_stride = k_major ? o.k_strides[k_axis] : row_stride;
    const long long outer_stride = k_major ? row_stride : o.k_strides[k_axis];
    const std::size_t rows = is_a ? p.m : p.n;
    const std::size_t inner_len = k_major ? p.k : rows, outer_len = k_major ? rows : p.k;
    if (inner_stride != 1 && inner_len > 1)
        return no(why, name + " has no contiguous axis along its tile's rows");
    if (o.base_align_bytes % 16 != 0)
        return no(why, name + " starts " + std::to_string(o.base_align_bytes) +
                           " bytes into an aligned buffer, TMA needs 16");

    tma_operand r;
    tensor_map_spec& m = r.map;
    m.argument = is_a ? 0 : 1;
    m.element_bytes = 2;
    m.bfloat16 = p.type == dtype::bf16;
    m.swizzle_bytes = t.block_bytes;
    // Axes after the contiguous one: (len, stride in elements), then checked to nest.
    std::vector<std::pair<std::size_t, long long>> axes{
        {outer_len, outer_len > 1 ? outer_stride : 0}};
    // The batch axes in the order their strides nest (a map's axes must), smallest first.
    for (std::size_t d = 0; d < p.batch_lens.size(); ++d)
        if (p.batch_lens[d] > 1 && o.batch_strides[d] != 0) r.batch_axes.push_back(d);
    std::ranges::stable_sort(
        r.batch_axes, {}, [&](std::size_t d) { return std::llabs((long long)o.batch_strides[d]); });
    for (std::size_t d : r.batch_axes)
        axes.push_back({p.batch_lens[d], o.batch_strides[d]});
    if (axes.size() > 4) return no(why, name + " has more than three batch axes");
    m.rank = unsigned(axes.size() + 1);
    m.dims[0] = std::max<std::size_t>(inner_len, 1);
    long long covered = (long long)m.dims[0] * eb; // bytes one step of the next axis must cover
    for (std::size_t i = 0; i < axes.size(); ++i) {
        auto [len, stride] = axes[i];
        long long bytes = stride * eb;
        // A len-1 axis has no stride of its own: any that nests will do.
        if (len <= 1) bytes = (covered + 15) / 16 * 16;
        if (bytes <= 0 || bytes % 16 != 0 || bytes >= (1LL << 40))
            return no(why, name + "'s stride of " + std::to_string(stride) +
                               " elements is not a positive multiple of 16 bytes");
        if (bytes < covered)
            return no(why, name + "'s strides do not nest (axis " + std::to_string(i + 1) +
                               " steps " + std::to_string(bytes) + " bytes over " +
                               std::to_string(covered) + ")");
        if (len > (1ull << 32)) return no(why, name + " has an axis longer than 2^32");
        m.dims[i + 1] = std::max<std::size_t>(len, 1);
        m.strides[i] = (unsigned long long)bytes;
        covered = bytes * (long long)m.dims[i + 1];
    }
    if (t.outer > 256)
        return no(why,
                  name + "'s tile has " + std::to_string(t.outer) + " rows, a TMA box at most 256");
    r.box_inner = t.block_bytes / unsigned(eb);
    r.boxes = t.row_bytes / t.block_bytes;
    r.box_bytes = t.block_bytes * t.outer;
    m.box[0] = r.box_inner;
    m.box[1] = t.outer;
    for (unsigned d = 2; d < m.rank; ++d)
        m.box[d] = 1;
    return r;
}

} // namespace conflux::cuda::gemm
