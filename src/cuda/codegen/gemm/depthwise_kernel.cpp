#include "cuda/codegen/gemm/depthwise_kernel.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/gemm/kernel_plan.hpp"

#include <algorithm>
#include <cmath>
#include <set>

namespace conflux::cuda {

namespace {

// Inputs, accumulators and weights a thread keeps as f32, at most: beyond this the kernel
// spills registers, and a smaller O or V does the same work without spilling.
constexpr std::size_t max_live_floats = 128;

std::string lit(std::size_t v) {
    return text::integer_literal(v);
}
std::string ll(std::size_t v) {
    return text::long_long_literal(v);
}
std::string ll(long long v) {
    return text::long_long_literal(v);
}

const char* raw_vector_type(std::size_t bytes) {
    switch (bytes) {
    case 16:
        return "uint4";
    case 8:
        return "uint2";
    case 4:
        return "unsigned int";
    default:
        return "unsigned short";
    }
}

// Why V channels cannot be one vector load of p's input (empty when they can).
std::string vector_obstacle(const gemm_problem& p, unsigned v) {
    const conv_geometry& g = *p.conv;
    const std::size_t bytes = v * size_of(p.type);
    if (v == 1) return "";
    if (bytes > 16) return std::to_string(v) + " channels are more than 16 bytes";
    if (g.group_filters != 1)
        return "a channel multiplier of " + std::to_string(g.group_filters) +
               " maps a vector of output channels onto fewer input channels";
    if (g.groups % v != 0)
        return std::to_string(g.groups) + " channels are not a multiple of " + std::to_string(v);
    if (g.channel_stride != 1) return "the input's channels are not contiguous";
    auto aligned = [&](long long stride, std::size_t len) {
        return len <= 1 || stride % static_cast<long long>(v) == 0;
    };
    if (!aligned(g.image_stride, g.images)) return "the input's image stride is not a multiple";
    for (std::size_t d = 0; d < g.nd(); ++d)
        if (!aligned(g.input_spatial_strides[d], g.input_spatial[d]))
            return "the input's spatial strides are not multiples of " + std::to_string(v);
    if (p.a.base_align_bytes % bytes != 0)
        return "the input starts " + std::to_string(p.a.base_align_bytes) +
               "-byte aligned, a vector needs " + std::to_string(bytes);
    return "";
}

std::vector<unsigned> input_columns(const conv_geometry& g, unsigned outputs) {
    const std::size_t last = g.nd() - 1;
    std::set<unsigned> columns;
    for (unsigned j = 0; j < outputs; ++j)
        for (std::size_t t = 0; t < g.kernel[last]; ++t)
            columns.insert(unsigned(j * g.stride[last] + t * g.dilation[last]));
    return {columns.begin(), columns.end()};
}

// Shared-memory wavefronts of a warp's first window read in a tiled kernel, when positions
// are `pitch` elements of `bytes` apart: the most distinct 4-byte words any of the 32 banks
// must serve.
std::size_t window_wavefronts(const depthwise_plan& k, const conv_geometry& g, std::size_t pitch,
                              std::size_t bytes) {
    std::vector<std::set<std::size_t>> banks(32);
    for (unsigned t = 0; t < std::min(32u, k.threads); ++t) {
        const std::size_t vec = t % k.block_vectors, strip = t / k.block_vectors % k.tile_strips,
                          row = t / (k.block_vectors * k.tile_strips);
        const std::size_t position =
            row * g.stride[0] * k.window_cols + strip * k.outputs * g.stride[1];
        const std::size_t first = (position * pitch + vec * k.vector) * bytes;
        for (std::size_t b = first; b < first + k.vector * bytes; b += 4)
            banks[b / 4 % 32].insert(b / 4);
    }
    std::size_t most = 0;
    for (const auto& b : banks)
        most = std::max(most, b.size());
    return most;
}

// Fills in the tile of a tiled config (c.tile_rows != 0); an empty string when it fits.
std::string plan_tile(depthwise_plan& k, const perf_config& c, const gemm_problem& p) {
    const conv_geometry& g = *p.conv;
    if (g.nd() != 2) return "tiles through shared memory are for 2-D convolutions";
    if (g.group_filters != 1)
        return "a tile stages input channels, and a channel multiplier of " +
               std::to_string(g.group_filters) + " maps output channels onto fewer of them";
    if (c.tile_rows > 16) return "a tile of more than 16 output rows";
    const std::size_t vectors = k.channels / k.vector;
    // The window keeps the input's own element type (half the shared-memory traffic of f32
    // for 16-bit inputs, which is what bounds these kernels); up to 64 bytes of channels per
    // position.
    const std::size_t bytes = size_of(p.type);
    k.block_vectors =
        unsigned(std::min<std::size_t>(vectors, std::max<std::size_t>(1, 64 / (k.vector * bytes))));
    const std::size_t strips_per_row = k.strips;
    const std::size_t per_strip = std::size_t(k.block_vectors) * c.tile_rows;
    if (per_strip > c.block_threads)
        return std::to_string(c.tile_rows) + " rows of " + std::to_string(k.block_vectors) +
               " channel vectors need more than " + std::to_string(c.block_threads) + " threads";
    k.tile_rows = c.tile_rows;
    // As many strips as the threads allow, spread evenly over the column tiles a row needs
    // (56 columns of 4-output strips in 8-strip tiles: two tiles of 7, not 8 and 6).
    const std::size_t most = std::min<std::size_t>(strips_per_row, c.block_threads / per_strip);
    const std::size_t tiles_per_row = (strips_per_row + most - 1) / most;
    k.tile_strips = unsigned((strips_per_row + tiles_per_row - 1) / tiles_per_row);
    k.threads = unsigned(per_strip * k.tile_strips);
    k.block_strips = k.tile_strips * k.tile_rows;
    const std::size_t tile_cols = std::size_t(k.tile_strips) * k.outputs;
    k.window_rows = (k.tile_rows - 1) * g.stride[0] + (g.kernel[0] - 1) * g.dilation[0] + 1;
    k.window_cols = (tile_cols - 1) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1;
    // Positions padded apart by whole vectors (the reads stay aligned), the fewest wavefronts.
    const std::size_t channels = std::size_t(k.block_vectors) * k.vector;
    std::size_t best = 0;
    for (std::size_t pad = 0; pad * bytes <= 64; pad += k.vector) {
        const std::size_t waves = window_wavefronts(k, g, channels + pad, bytes);
        if (best == 0 || waves < best) {
            best = waves;
            k.pitch = channels + pad;
        }
    }
    k.read_wavefronts = best;
    // The weights (f32), then the window from a 16-byte boundary.
    k.window_offset = (std::max<std::size_t>(1, k.taps) * channels * 4 + 15) / 16 * 16;
    k.shared_bytes = k.window_offset + k.window_rows * k.window_cols * k.pitch * bytes;
    k.row_tiles = (g.output_spatial[0] + k.tile_rows - 1) / k.tile_rows;
    k.col_tiles = (g.output_spatial[1] + tile_cols - 1) / tile_cols;
    const std::size_t blocks_x = g.images * k.row_tiles * k.col_tiles;
    const std::size_t blocks_y = (vectors + k.block_vectors - 1) / k.block_vectors;
    if (blocks_x > 0x7fffffffu || blocks_y > 65535)
        return "the grid would exceed the device's limits";
    k.grid_x = unsigned(blocks_x);
    k.grid_y = unsigned(blocks_y);
    return "";
}

// Fills in a dw_mma config's plan (depthwise_mma.cuh); an empty string when it fits.
std::string plan_mma(depthwise_plan& k, const perf_config& c, const gemm_problem& p,
                     const gemm_device_limits& limits) {
    const conv_geometry& g = *p.conv;
    if (p.type != dtype::f16 && p.type != dtype::bf16)
        return "tensor-core depthwise configs take f16 or bf16";
    if (g.nd() != 2) return "tensor-core depthwise configs are for 2-D convolutions";
    if (g.group_filters != 1)
        return "a channel multiplier of " + std::to_string(g.group_filters) +
               " maps output channels onto fewer input channels";
    if (std::string v = vector_obstacle(p, 8); !v.empty()) return "8 channels per vector: " + v;
    if (g.stride[1] != 1)
        return "the columns' stride is " + std::to_string(g.stride[1]) +
               "; a Toeplitz product needs 1";
    if ((g.kernel[1] - 1) * g.dilation[1] > 8)
        return "a kernel row spans " + std::to_string((g.kernel[1] - 1) * g.dilation[1] + 1) +
               " input columns, more than the 9 one product's 16 columns leave room for";
    if (c.block_channels != 8 && c.block_channels != 16 && c.block_channels != 32)
        return "channels per block must be 8, 16 or 32";
    if (c.tile_rows != 8 && c.tile_rows != 16) return "output rows per block must be 8 or 16";
    if (c.tile_cols != 16 && c.tile_cols != 32 && c.tile_cols != 64)
        return "output columns per block must be 16, 32 or 64";
    if (c.block_threads != 64 && c.block_threads != 128 && c.block_threads != 256)
        return "threads per block must be 64, 128 or 256";
    const unsigned warps = c.block_threads / 32; // 2, 4 or 8: each takes channels / warps
    const std::size_t accumulators =
        std::size_t(c.block_channels / warps) * (c.tile_rows / 8) * (c.tile_cols / 16) * 4;
    // More than 32 spill over 128 registers a thread (183 for 64 on a 7x7 layer).
    if (accumulators > 32)
        return std::to_string(accumulators) + " accumulators per thread, more than 32";
    if (g.kernel[0] > 16) return "more than 16 kernel rows (each keeps two registers)";
    for (std::size_t d = 0; d < 2; ++d)
        if (g.input_spatial[d] > (1u << 24) || g.output_spatial[d] > (1u << 24) ||
            g.pad_begin[d] > (1u << 20) || g.stride[d] > (1u << 10) || g.dilation[d] > (1u << 10))
            return "the spatial extents do not fit the kernel's 32-bit indexing";
    k.tensor_cores = true;
    k.block_channels = c.block_channels;
    k.tile_rows = c.tile_rows;
    k.tile_cols = c.tile_cols;
    k.threads = c.block_threads;
    k.vector = 8;
    k.window_rows = (c.tile_rows - 1) * g.stride[0] + (g.kernel[0] - 1) * g.dilation[0] + 1;
    k.window_cols = c.tile_cols + 8;
    // A fragment's 8 rows g (g * stride rows apart) and 4 column pairs on 32 distinct banks:
    // a row pitch of 4 mod 8 words between them; the copy's two vectors of channels (8 planes
    // apart) on distinct halves of the banks: a plane pitch of 4 mod 8 elements.
    k.pitch = k.window_cols;
    for (std::size_t wp = k.window_cols; wp <= k.window_cols + 32; wp += 2)
        if (g.stride[0] * wp / 2 % 8 == 4) {
            k.pitch = wp;
            break;
        }
    // The pipelined form keeps rows that the next tile down shares in a ring of row slots; its
    // rows g * stride apart still fall on distinct banks, as the ring holds a multiple of 8 (16
    // for a stride of 2) rows.
    k.ring = 1;
    while (k.ring < k.window_rows)
        k.ring *= 2;
    k.window_plane = (c.pipelined ? k.ring : k.window_rows) * k.pitch;
    while (k.window_plane % 8 != 4)
        k.window_plane += 2;
    // The accumulators' pitches: a warp's float2 stores and the epilogue's reads conflict-free.
    k.stage_pitch = c.tile_cols + 8;
    k.stage_plane = std::size_t(c.tile_rows) * k.stage_pitch + 2;
    const std::size_t channels = c.block_channels;
    k.taps = g.kernel[0] * g.kernel[1];
    k.weight_bytes = (channels * g.kernel[0] * 32 * size_of(p.type) + 15) / 16 * 16;
    // The accumulators go over the window once the products are done, or, in the pipelined
    // form, beside it: the next window goes in while the current outputs are stored.
    const std::size_t window = (channels * k.window_plane * size_of(p.type) + 15) / 16 * 16;
    const std::size_t stage = (channels * k.stage_plane * 4 + 15) / 16 * 16;
    k.stage_offset = k.weight_bytes + (c.pipelined ? window : 0);
    k.shared_bytes =
        c.pipelined ? k.stage_offset + stage : k.weight_bytes + std::max(window, stage);
    if (k.shared_bytes > limits.shared_per_block)
        return "the block's weights, window and outputs need " + gemm::kib(k.shared_bytes) +
               " of shared memory, the device allows " + gemm::kib(limits.shared_per_block);
    k.channels = g.groups;
    k.row_tiles = (g.output_spatial[0] + c.tile_rows - 1) / c.tile_rows;
    k.col_tiles = (g.output_spatial[1] + c.tile_cols - 1) / c.tile_cols;
    const std::size_t blocks_x = g.images * k.row_tiles * k.col_tiles;
    const std::size_t blocks_y = (k.channels + channels - 1) / channels;
    if (blocks_x > 0x7fffffffu || blocks_y > 65535)
        return "the grid would exceed the device's limits";
    k.grid_x = unsigned(blocks_x);
    k.grid_y = unsigned(blocks_y);
    k.spatial_tiles = blocks_x;
    // A block's registers: 64 a thread (1024 threads an SM) leave no room for the next window,
    // 128 (512 threads) do.
    k.min_blocks = std::max(1u, (c.pipelined ? 512 : 1024) / c.block_threads);
    if (c.pipelined) {
        k.pipelined = true;
        const std::size_t items = k.window_rows * (k.window_cols / 2) * (channels / 8);
        k.window_share = unsigned((items + c.block_threads - 1) / c.block_threads);
        // Six items are 48 registers beside up to 32 accumulators and T's fragments.
        if (k.window_share > 6)
            return "a thread's share of the next window is " + std::to_string(k.window_share) +
                   " items of 8 registers, more than 6";
        // What the SMs hold at once: the registers' bound, or fewer where shared memory (a
        // block's plus the 1 KiB the device reserves per block) holds fewer.
        const std::size_t by_shared = limits.shared_per_sm / (k.shared_bytes + 1024);
        const std::size_t resident =
            std::size_t(limits.sm_count) *
            std::clamp<std::size_t>(by_shared, 1, std::size_t(k.min_blocks));
        k.grid_x = unsigned(std::clamp<std::size_t>(resident / blocks_y, 1, blocks_x));
    }
    return "";
}

// A pipelined config's time, relatively: the bytes its blocks move, each tile's window rows
// (all of them where a column of tiles starts, the rows a tile adds to the one above it
// elsewhere) and the input columns inside them, plus the outputs; slowed by the runs that are a
// tile longer than the others.
double estimated_pipelined_time(const depthwise_plan& k, const gemm_problem& p, double sector) {
    const conv_geometry& g = *p.conv;
    double columns = 0; // loaded per tile, averaged over the columns of tiles
    for (std::size_t tc = 0; tc < k.col_tiles; ++tc) {
        const double first = double(tc * k.tile_cols) - double(g.pad_begin[1]);
        const double last = first + double(k.window_cols);
        columns += std::max(0.0, std::min(last, double(g.input_spatial[1])) - std::max(0.0, first));
    }
    columns /= double(k.col_tiles);
    const double tiles = double(k.spatial_tiles), run = tiles / double(k.grid_x);
    const double starts = std::min(run, 1.0 + (run - 1.0) / double(k.row_tiles));
    const double added = double(std::min<std::size_t>(k.window_rows, k.tile_rows * g.stride[0]));
    const double rows = (starts * double(k.window_rows) + (run - starts) * added) / run;
    const double bytes_per_tile = sector * double(k.block_channels) * size_of(p.type) *
                                  (rows * columns + double(k.tile_rows) * k.tile_cols);
    // Each tile also costs its barriers and T's fragments, as if it moved 4 KiB more: on
    // MobileNetV2's 3x3 layer (H100) 16 x 32 tiles ran 10% faster than 8 x 32.
    const double tail = run / std::ceil(run);
    return tiles * double(k.grid_y) * (bytes_per_tile + 4096.0) / tail;
}

// A dw_mma config's time, relatively: the bytes its blocks move (windows and outputs, the
// computed columns past the end included), slowed when an SM holds too few threads to keep
// enough loads in flight, and by the last wave's idle SMs.
double estimated_mma_time(const depthwise_plan& k, const gemm_problem& p,
                          const gemm_device_limits& limits) {
    // A position's channels of a block below a 32-byte sector still move a whole one (on the
    // H100, 8 channels per block ran 1.2-2.5x slower than 16 or 32).
    const double sector = std::max(1.0, 32.0 / double(k.block_channels * size_of(p.type)));
    if (k.pipelined) return estimated_pipelined_time(k, p, sector);
    const double bytes_per_block =
        sector * double(k.block_channels) * size_of(p.type) *
        double(k.window_rows * k.window_cols + std::size_t(k.tile_rows) * k.tile_cols);
    const double blocks = double(k.grid_x) * double(k.grid_y);
    const double per_sm = std::max(
        1.0, std::min({std::floor(double(limits.shared_per_sm) / double(k.shared_bytes + 1024)),
                       std::floor(2048.0 / k.threads), 32.0}));
    const double waves = std::ceil(blocks / (limits.sm_count * per_sm));
    const double tail = blocks / (waves * limits.sm_count * per_sm);
    const double in_flight = std::min(1.0, per_sm * k.threads / 1024.0);
    return blocks * bytes_per_block / (in_flight * tail);
}

double estimated_time(const depthwise_plan& k, const gemm_problem& p,
                      const gemm_device_limits& limits) {
    const conv_geometry& g = *p.conv;
    const double s = double(g.kernel.back());
    const double rows = double(k.taps) / std::max(1.0, s);
    const double v = k.vector, o = k.outputs;
    // Instructions per thread: per kernel row a load (and V conversions) per input column,
    // the tap's weights from shared memory, O x V multiply-adds; then the stores.
    const bool tiled = k.tile_rows != 0;
    // A tiled kernel reads its columns from shared memory (and converts them), after copying
    // its share of the window (a load and a store per position).
    const double conversions = p.type == dtype::f32 ? 0 : v;
    const double per_column = tiled ? 1 + conversions : 2 + v;
    const double copy =
        tiled ? double(k.window_rows * k.window_cols) * k.block_vectors / double(k.threads) * 6 : 0;
    const double per_thread =
        rows * (double(k.columns.size()) * per_column + s * std::ceil(v / 4) + s * o * v) +
        o * v * 2 + 40 + copy;
    const double floats = double(k.columns.size()) * v + o * v + v;
    const double regs = std::min(255.0, floats + 40);
    const double by_regs = std::floor(65536.0 / (regs * k.threads)) * k.threads;
    const double by_shared =
        std::floor(double(limits.shared_per_sm) / double(k.shared_bytes + 1024)) * k.threads;
    const double per_sm = std::max(double(k.threads), std::min({2048.0, by_regs, by_shared}));
    const double threads = double(k.rows) * double(k.strips) * double(k.channels) / v;
    // Issue-bound, slowed down when an SM holds too few warps to hide the loads' latency
    // (about 16 warps hide it).
    const double resident = std::min(per_sm, std::ceil(threads / limits.sm_count));
    // A tiled kernel's loads are shared-memory loads, hidden by fewer warps.
    const double hidden = std::min(1.0, resident / 32.0 / (tiled ? 8.0 : 16.0));
    const double issue = threads * per_thread / (limits.sm_count * 128.0);
    // A tiled kernel's shared-memory reads: a wavefront per bank conflict per column read, and
    // one per tap's weights (the warp's threads share them); an SM serves one per cycle.
    const double shared = tiled ? threads / 32 * rows *
                                      (double(k.columns.size() * k.read_wavefronts) + s) /
                                      limits.sm_count
                                : 0;
    return std::max(issue, shared) / std::max(hidden, 1.0 / 64);
}

} // namespace

bool is_depthwise(const gemm_problem& p) {
    if (p.family != gemm_family::convolution || !p.conv) return false;
    const bool floating = p.type == dtype::f16 || p.type == dtype::bf16 || p.type == dtype::f32;
    return floating && p.conv->groups > 1 && p.conv->group_channels == 1 && p.conv->nd() >= 1;
}

std::optional<depthwise_plan> make_depthwise_plan(const perf_config& c, const gemm_problem& p,
                                                  const gemm_device_limits& limits,
                                                  std::string* why) {
    auto fail = [&](std::string reason) -> std::optional<depthwise_plan> {
        if (why) *why = std::move(reason);
        return std::nullopt;
    };
    if (!c.is_depthwise()) return fail("not a depthwise config");
    if (!is_depthwise(p))
        return fail("the depthwise kernel takes convolutions of f16, bf16 or f32 with one input "
                    "channel per group");
    const conv_geometry& g = *p.conv;
    if (c.tensor_cores) {
        depthwise_plan k;
        if (std::string t = plan_mma(k, c, p, limits); !t.empty()) return fail(t);
        if (why) why->clear();
        return k;
    }
    if (c.vector != 1 && c.vector != 2 && c.vector != 4 && c.vector != 8)
        return fail("channels per thread must be 1, 2, 4 or 8");
    if (c.outputs < 1 || c.outputs > 8) return fail("outputs per thread must be 1 to 8");
    if (c.block_threads < 32 || c.block_threads > 1024 || c.block_threads % 32 != 0)
        return fail("threads per block must be a multiple of 32 up to 1024");
    if (std::string v = vector_obstacle(p, c.vector); !v.empty())
        return fail(std::to_string(c.vector) + " channels per thread: " + v);

    depthwise_plan k;
    if (p.empty()) { // nothing to compute: a kernel that launches nothing
        k.threads = c.block_threads;
        return k;
    }
    k.vector = c.vector;
    k.outputs = c.outputs;
    k.channels = g.groups * g.group_filters;
    const std::size_t vectors = k.channels / c.vector;
    k.block_vectors = unsigned(std::min<std::size_t>({vectors, 32, c.block_threads}));
    k.block_strips = c.block_threads / k.block_vectors;
    k.threads = k.block_vectors * k.block_strips;
    k.rows = g.images;
    for (std::size_t d = 0; d + 1 < g.nd(); ++d)
        k.rows *= g.output_spatial[d];
    k.strips = (g.output_spatial.back() + c.outputs - 1) / c.outputs;
    k.taps = 1;
    for (auto r : g.kernel)
        k.taps *= r;
    k.columns = input_columns(g, c.outputs);
    const std::size_t floats = (k.columns.size() + c.outputs + 1) * c.vector;
    if (floats > max_live_floats)
        return fail(std::to_string(c.outputs) + " outputs of " + std::to_string(c.vector) +
                    " channels keep " + std::to_string(floats) +
                    " values in registers (inputs, sums, weights), more than " +
                    std::to_string(max_live_floats));
    if (c.tile_rows != 0) {
        if (std::string t = plan_tile(k, c, p); !t.empty()) return fail(t);
        if (k.shared_bytes > limits.shared_per_block)
            return fail("the block's weights and input window need " + gemm::kib(k.shared_bytes) +
                        " of shared memory, the device allows " +
                        gemm::kib(limits.shared_per_block));
        if (why) why->clear();
        return k;
    }
    k.shared_bytes = std::max<std::size_t>(1, k.taps) * k.block_vectors * c.vector * 4;
    if (k.shared_bytes > limits.shared_per_block)
        return fail("the block's weights need " + gemm::kib(k.shared_bytes) +
                    " of shared memory, the device allows " + gemm::kib(limits.shared_per_block));
    const std::size_t blocks_x = (k.rows * k.strips + k.block_strips - 1) / k.block_strips;
    const std::size_t blocks_y = (vectors + k.block_vectors - 1) / k.block_vectors;
    if (blocks_x > 0x7fffffffu || blocks_y > 65535)
        return fail("the grid would exceed the device's limits");
    k.grid_x = unsigned(blocks_x);
    k.grid_y = unsigned(blocks_y);
    if (why) why->clear();
    return k;
}

perf_config depthwise_mma_config(unsigned channels, unsigned rows, unsigned cols, unsigned threads,
                                 bool pipelined) {
    perf_config c;
    c.family = kernel_family::depthwise;
    c.tensor_cores = true;
    c.pipelined = pipelined;
    c.block_channels = channels;
    c.tile_rows = rows;
    c.tile_cols = cols;
    c.block_threads = threads;
    return c;
}

std::vector<perf_config> depthwise_candidates(const gemm_problem& p,
                                              const gemm_device_limits& limits) {
    if (!is_depthwise(p)) return {};
    unsigned widest = 1;
    for (unsigned v : {8u, 4u, 2u})
        if (vector_obstacle(p, v).empty()) {
            widest = v;
            break;
        }
    std::vector<std::pair<double, perf_config>> ranked, tiled;
    auto consider = [&](std::vector<std::pair<double, perf_config>>& into, unsigned v, unsigned o,
                        unsigned rows, unsigned t) {
        perf_config c;
        c.family = kernel_family::depthwise;
        c.vector = v;
        c.outputs = o;
        c.tile_rows = rows;
        c.block_threads = t;
        if (const auto plan = make_depthwise_plan(c, p, limits, nullptr))
            into.emplace_back(estimated_time(*plan, p, limits), c);
    };
    // The widest vector and half of it; one channel per thread too when neither fits (a large
    // kernel keeps too many columns in registers).
    std::vector<unsigned> vectors{widest};
    if (widest > 1) vectors.push_back(widest / 2);
    for (unsigned pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            if (!ranked.empty() || widest <= 2) break;
            vectors = {1};
        }
        for (unsigned v : vectors)
            for (unsigned o : {1u, 2u, 4u, 8u})
                for (unsigned t : {128u, 256u})
                    consider(ranked, v, o, 0, t);
    }
    // Tiled configs of 2-D convolutions without a channel multiplier, ranked among themselves.
    if (p.conv->nd() == 2 && p.conv->group_filters == 1)
        for (unsigned v : vectors)
            for (unsigned o : {2u, 4u, 8u})
                for (unsigned rows : {2u, 4u, 8u})
                    for (unsigned t : {128u, 256u})
                        consider(tiled, v, o, rows, t);
    // Tensor-core configs, ranked among themselves by the bytes they move.
    std::vector<std::pair<double, perf_config>> mma, pipelined;
    for (bool walks : {false, true})
        for (unsigned channels : {8u, 16u, 32u})
            for (unsigned rows : {8u, 16u})
                for (unsigned cols : {16u, 32u, 64u})
                    for (unsigned t : {64u, 128u, 256u}) {
                        const perf_config c = depthwise_mma_config(channels, rows, cols, t, walks);
                        if (const auto plan = make_depthwise_plan(c, p, limits, nullptr))
                            (walks ? pipelined : mma)
                                .emplace_back(estimated_mma_time(*plan, p, limits), c);
                    }
    auto by_time = [](const auto& x, const auto& y) { return x.first < y.first; };
    std::stable_sort(ranked.begin(), ranked.end(), by_time);
    std::stable_sort(tiled.begin(), tiled.end(), by_time);
    std::stable_sort(mma.begin(), mma.end(), by_time);
    std::stable_sort(pipelined.begin(), pipelined.end(), by_time);
    // In turn, pipelined tensor cores, tiled, tensor cores, direct: quick tuning times the best
    // few of each form. The pipelined form's first pick is the heuristic's where its blocks walk
    // more than two tiles each: on the H100 it ran 27-47% faster than the tiled form on
    // ConvNeXt's, MobileNetV2's and EfficientNet's large layers at batch 32, and inside
    // ConvNeXt-tiny took 40-47% less time on its first three stages (2026-12-07f in
    // bench/RESULTS.md). Where its blocks have two tiles or fewer (ConvNeXt's 7x7x768 layer at
    // batch 32, its 14x14 and 7x7 layers at batch 1) it took 1.19-1.34x the tiled form's time,
    // so the tiled form comes first there, as it does where no tensor-core config is valid
    // (column stride 2, f32). At batch 1 the 56x56 layer is the exception: 0.0081 ms against
    // the tiled 0.0107, with one tile a block. The plain tensor-core form lost to the tiled one
    // on some layers by up to 2.6x.
    bool walks_far = false;
    if (!pipelined.empty())
        if (const auto plan = make_depthwise_plan(pipelined.front().second, p, limits, nullptr))
            walks_far = plan->spatial_tiles > 2 * std::size_t(plan->grid_x);
    std::vector<perf_config> r;
    for (std::size_t i = 0; i < ranked.size() || i < tiled.size() || i < mma.size() ||
                            i < std::min<std::size_t>(pipelined.size(), 6);
         ++i) {
        const bool walker = i < pipelined.size() && i < 6;
        if (walker && walks_far) r.push_back(pipelined[i].second);
        if (i < tiled.size()) r.push_back(tiled[i].second);
        if (walker && !walks_far) r.push_back(pipelined[i].second);
        if (i < mma.size()) r.push_back(mma[i].second);
        if (i < ranked.size() && std::find(r.begin(), r.end(), ranked[i].second) == r.end())
            r.push_back(ranked[i].second);
    }
    return r;
}

gemm_problem depthwise_epilogue_problem(const gemm_problem& p) {
    CONFLUX_ASSERT(is_depthwise(p), "depthwise_epilogue_problem of ", to_string(p));
    gemm_problem q = p;
    q.n = p.conv->groups * p.conv->group_filters;
    q.batch_lens = {1};
    q.conv->group_filters = q.n;
    q.conv->groups = 1;
    return q;
}

namespace {

// Reads V elements of the input's storage type at `at` (one vector load when V > 1) into the
// f32 array x.
std::string storage_vector_load(const std::string& x, const std::string& at, unsigned V, dtype t,
                                const std::string& indent) {
    if (V == 1) return indent + x + "[0] = cx_load(" + at + ");\n";
    const std::string S = storage_type(t), raw = raw_vector_type(V * size_of(t));
    std::string s =
        indent + "{ const " + raw + " raw = *reinterpret_cast<const " + raw + "*>(" + at + ");\n";
    s += indent + "  const " + S + "* e = reinterpret_cast<const " + S + "*>(&raw);\n";
    for (unsigned v = 0; v < V; ++v)
        s += indent + "  " + x + "[" + std::to_string(v) + "] = cx_load(e + " + std::to_string(v) +
             ");\n";
    return s + indent + "}\n";
}

// Reads V floats of shared memory at `at` (16-byte or 8-byte loads) into the array x.
std::string float_vector_read(const std::string& x, const std::string& at, unsigned V,
                              const std::string& indent) {
    std::string s;
    if (V % 4 == 0) {
        for (unsigned q = 0; q < V; q += 4) {
            const std::string e = x + "[" + std::to_string(q);
            s += indent + "{ const float4 f4 = *reinterpret_cast<const float4*>(" + at + " + " +
                 std::to_string(q) + "); " + e + "] = f4.x; " + x + "[" + std::to_string(q + 1) +
                 "] = f4.y; " + x + "[" + std::to_string(q + 2) + "] = f4.z; " + x + "[" +
                 std::to_string(q + 3) + "] = f4.w; }\n";
        }
    } else if (V == 2) {
        s += indent + "{ const float2 f2 = *reinterpret_cast<const float2*>(" + at + "); " + x +
             "[0] = f2.x; " + x + "[1] = f2.y; }\n";
    } else {
        s += indent + x + "[0] = (" + at + ")[0];\n";
    }
    return s;
}

std::string accumulators(unsigned O, unsigned V) {
    const std::string in = "    ";
    return in + "float acc[" + lit(std::size_t(O)) + "][" + lit(std::size_t(V)) + "];\n" + in +
           "#pragma unroll\n" + in + "for (int j = 0; j < " + lit(std::size_t(O)) + "; ++j)\n" +
           in + "    #pragma unroll\n" + in + "    for (int v = 0; v < " + lit(std::size_t(V)) +
           "; ++v) acc[j][v] = 0.0f;\n";
}

// One kernel row's taps: each tap's V weights (cx_wt, a row of block_channels per tap), times
// the input column each output reads (the arrays x<column>), into acc.
std::string tap_products(const depthwise_plan& k, const conv_geometry& g,
                         std::size_t block_channels, const std::string& indent) {
    const std::size_t last = g.nd() - 1;
    const unsigned V = k.vector, O = k.outputs;
    std::string s;
    for (std::size_t t = 0; t < g.kernel[last]; ++t) {
        s += indent + "{\n";
        s += indent + "    float wv[" + lit(std::size_t(V)) + "];\n";
        s += float_vector_read("wv", "cx_wt + " + lit(t * block_channels), V, indent + "    ");
        for (unsigned j = 0; j < O; ++j) {
            const std::string x = "x" + std::to_string(j * g.stride[last] + t * g.dilation[last]);
            for (unsigned v = 0; v < V; ++v) {
                const std::string a = "acc[" + std::to_string(j) + "][" + std::to_string(v) + "]";
                s += indent + "    " + a + " = " + a + " + " + x + "[" + std::to_string(v) +
                     "] * wv[" + std::to_string(v) + "];\n";
            }
        }
        s += indent + "}\n";
    }
    return s;
}

// Every output of the thread (row, w0 + j for j < O, channels f0...) through the epilogue:
// whole vectors of channels where it has cx_epilogue_vec.
std::string epilogue_stores(const depthwise_plan& k, const conv_geometry& g,
                            const gemm_epilogue& epilogue, const std::string& args) {
    const std::string in = "    ";
    const std::size_t last = g.nd() - 1;
    const unsigned V = k.vector, O = k.outputs;
    const unsigned lanes = epilogue.lanes > 1 && V % epilogue.lanes == 0 ? epilogue.lanes : 1;
    std::string s;
    for (unsigned j = 0; j < O; ++j) {
        s += in + "if (w0 + " + std::to_string(j) + " < " + lit(g.output_spatial[last]) + ") {\n";
        s += in + "    const long long m = row * " + ll(g.output_spatial[last]) + " + w0 + " +
             std::to_string(j) + ";\n";
        if (lanes > 1) {
            for (unsigned q = 0; q < V; q += lanes)
                s += in + "    cx_epilogue_vec(&acc[" + std::to_string(j) + "][" +
                     std::to_string(q) + "], 0LL, m, f0 + " + std::to_string(q) + args + ");\n";
        } else {
            for (unsigned v = 0; v < V; ++v)
                s += in + "    cx_epilogue(acc[" + std::to_string(j) + "][" + std::to_string(v) +
                     "], 0LL, m, f0 + " + std::to_string(v) + args + ");\n";
        }
        s += in + "}\n";
    }
    return s;
}

// A tiled kernel after its weights' copy loop: the block's input window into shared memory
// (in the input's type, zeros outside the input), then each thread's outputs from it, then the
// epilogue.
std::string tiled_body(const depthwise_plan& k, const gemm_problem& p,
                       const gemm_epilogue& epilogue, const std::string& args) {
    const conv_geometry& g = *p.conv;
    const std::string in = "    ", S = storage_type(p.type);
    const unsigned V = k.vector, O = k.outputs;
    const std::size_t bv = k.block_vectors, block_channels = bv * V;
    const std::size_t tile_cols = std::size_t(k.tile_strips) * O;
    const std::size_t vectors = k.channels / V;
    const std::string window = lit(k.window_cols), pitch = lit(k.pitch);
    std::string s;
    s += in + S + "* cx_dw_x = reinterpret_cast<" + S +
         "*>(reinterpret_cast<unsigned char*>(cx_dw_w) + " + lit(k.window_offset) + ");\n";
    s += in + "long long cx_t = blockIdx.x;\n";
    s += in + "const int cx_tc = (int)(cx_t % " + ll(k.col_tiles) + ");\n";
    s += in + "cx_t /= " + ll(k.col_tiles) + ";\n";
    s += in + "const int cx_tr = (int)(cx_t % " + ll(k.row_tiles) + ");\n";
    s += in + "const long long cx_img = cx_t / " + ll(k.row_tiles) + ";\n";
    s += in + "const int cx_oh0 = cx_tr * " + lit(std::size_t(k.tile_rows)) +
         ", cx_ow0 = cx_tc * " + lit(tile_cols) + ";\n";
    s += in + "const int cx_ih0 = cx_oh0 * " + lit(g.stride[0]) + " - " + lit(g.pad_begin[0]) +
         ", cx_iw0 = cx_ow0 * " + lit(g.stride[1]) + " - " + lit(g.pad_begin[1]) + ";\n";
    s += in + "const " + S + "* cx_x = in0 + cx_img * " + ll(g.image_stride) + " + cx_c_block * " +
         ll(g.channel_stride) + ";\n";
    // Unrolled so that several of a thread's loads are in flight at once.
    // A block's threads are a multiple of its vectors, so each thread copies one vector slot v
    // of every (threads / vectors)-th position; offsets within one image in 32 bits when the
    // image allows.
    const bool narrow = g.image_stride < (1LL << 31) && g.channel_stride < (1LL << 20) &&
                        std::abs(g.input_spatial_strides[0]) < (1LL << 31) &&
                        std::abs(g.input_spatial_strides[1]) < (1LL << 31);
    const std::string off = narrow ? "int" : "long long";
    s += in + "const int cx_cv = cx_tid % " + lit(bv) + ";\n";
    s += in + "const bool cx_cv_in = cx_c_block + cx_cv * " + lit(std::size_t(V)) + " < " +
         ll(k.channels) + ";\n";
    s += in + "const " + S + "* cx_xv = cx_x + (" + off + ")(cx_cv * " + lit(std::size_t(V)) +
         ") * " + ll(g.channel_stride) + ";\n";
    s += in + S + "* cx_dv = cx_dw_x + cx_cv * " + lit(std::size_t(V)) + ";\n";
    s += in + "#pragma unroll 4\n";
    s += in + "for (int pos = cx_tid / " + lit(bv) + "; pos < " +
         lit(k.window_rows * k.window_cols) + "; pos += " + lit(k.threads / bv) + ") {\n";
    s += in + "    const int ih = cx_ih0 + pos / " + window + ", iw = cx_iw0 + pos % " + window +
         ";\n";
    // Copied as raw vectors of the input's type: zeros outside the input.
    const std::string raw = raw_vector_type(V * size_of(p.type));
    s += in + "    " + raw + " raw = {};\n";
    s += in + "    if (cx_cv_in && (unsigned)ih < " + lit(g.input_spatial[0]) +
         "u && (unsigned)iw < " + lit(g.input_spatial[1]) + "u)\n";
    s += in + "        raw = *reinterpret_cast<const " + raw + "*>(cx_xv + (" + off + ")ih * " +
         ll(g.input_spatial_strides[0]) + " + (" + off + ")iw * " + ll(g.input_spatial_strides[1]) +
         ");\n";
    s += in + "    *reinterpret_cast<" + raw + "*>(cx_dv + pos * " + pitch + ") = raw;\n";
    s += in + "}\n";
    s += in + "__syncthreads();\n";

    s += in + "const int cx_vec = cx_tid % " + lit(bv) + ";\n";
    s += in + "const int cx_strip = cx_tid / " + lit(bv) + " % " + lit(std::size_t(k.tile_strips)) +
         ", cx_r = cx_tid / " + lit(bv * k.tile_strips) + ";\n";
    s += in + "const long long cv = (long long)blockIdx.y * " + ll(bv) + " + cx_vec;\n";
    s += in + "const int oh = cx_oh0 + cx_r, w0 = cx_ow0 + cx_strip * " + lit(std::size_t(O)) +
         ";\n";
    s += in + "if (cv >= " + ll(vectors) + " || oh >= " + lit(g.output_spatial[0]) +
         " || w0 >= " + lit(g.output_spatial[1]) + ") return;\n";
    s += in + "const long long f0 = cv * " + ll(std::size_t(V)) + ";\n";
    s += in + "const long long row = cx_img * " + ll(g.output_spatial[0]) + " + oh;\n";
    s += accumulators(O, V);
    s += in + "#pragma unroll\n";
    s += in + "for (int t0 = 0; t0 < " + lit(g.kernel[0]) + "; ++t0) {\n";
    const std::string indent = in + "    ";
    s += indent + "const " + S + "* cx_row = cx_dw_x + ((cx_r * " + lit(g.stride[0]) + " + t0 * " +
         lit(g.dilation[0]) + ") * " + window + " + cx_strip * " +
         lit(std::size_t(O) * g.stride[1]) + ") * " + pitch + " + cx_vec * " + lit(std::size_t(V)) +
         ";\n";
    for (unsigned col : k.columns) {
        const std::string x = "x" + std::to_string(col);
        s += indent + "float " + x + "[" + lit(std::size_t(V)) + "];\n";
        s += storage_vector_load(x, "cx_row + " + lit(std::size_t(col) * k.pitch), V, p.type,
                                 indent);
    }
    s += indent + "const float* cx_wt = cx_dw_w + t0 * " + lit(g.kernel[1] * block_channels) +
         " + cx_vec * " + lit(std::size_t(V)) + ";\n";
    s += tap_products(k, g, block_channels, indent);
    s += in + "}\n";
    s += epilogue_stores(k, g, epilogue, args);
    return s;
}

// What every depthwise kernel starts with: the buffers it takes, its headers, which config it
// runs for which problem and the epilogue's functions in out.code; its parameters (input,
// weights, the epilogue's) and the epilogue's extra call arguments.
struct kernel_start {
    kernel_source out;
    std::vector<std::string> params;
    std::string args;
};
kernel_start start_kernel(const gemm_problem& p, const perf_config& c, const gemm_epilogue& e,
                          const std::string& entry, const std::vector<std::string>& headers) {
    kernel_start k;
    k.out.entry = entry;
    k.out.inputs = 2 + e.inputs;
    k.out.outputs = e.parameters.size() - e.inputs;
    k.out.code = text::include_prelude(headers) + text::suppress_unused_warnings + "// depthwise " +
                 to_string(c) + " for " + to_string(p) + "\n\n" + e.code + "\n";
    const std::string S = storage_type(p.type);
    k.params = {"const " + S + "* __restrict__ in0", "const " + S + "* __restrict__ in1"};
    k.params.insert(k.params.end(), e.parameters.begin(), e.parameters.end());
    for (const auto& a : e.arguments)
        k.args += ", " + a;
    return k;
}

// The plan's grid, block and dynamic shared memory.
void set_launch(kernel_source& out, const depthwise_plan& k) {
    out.launch.grid = {k.grid_x, k.grid_y, 1};
    out.launch.block = {k.threads, 1, 1};
    out.launch.shared_bytes = unsigned(k.shared_bytes);
}

// A dw_mma config's kernel: its geometry as the compile-time CFG of cx_depthwise_mma
// (depthwise_mma.cuh), which hands each position's 8 channels to the epilogue.
kernel_source generate_mma_kernel(const depthwise_plan& k, const gemm_problem& p,
                                  const perf_config& c, const gemm_epilogue& epilogue,
                                  const std::string& entry) {
    const conv_geometry& g = *p.conv;
    kernel_start start = start_kernel(p, c, epilogue, entry, {"types.cuh", "depthwise_mma.cuh"});
    std::string& s = start.out.code;
    auto field = [&](const char* name, std::size_t v) {
        s += "    static constexpr int " + std::string(name) + " = " + lit(v) + ";\n";
    };
    auto wide = [&](const char* name, long long v) {
        s += "    static constexpr long long " + std::string(name) + " = " + ll(v) + ";\n";
    };
    s += "struct cx_dw_cfg {\n";
    s += "    typedef " + storage_type(p.type) + " S;\n";
    field("CB", k.block_channels);
    field("TR", k.tile_rows);
    field("TW", k.tile_cols);
    field("WARPS", k.threads / 32);
    field("KH", g.kernel[0]);
    field("KW", g.kernel[1]);
    field("SH", g.stride[0]);
    field("DH", g.dilation[0]);
    field("DW", g.dilation[1]);
    field("PAD_T", g.pad_begin[0]);
    field("PAD_L", g.pad_begin[1]);
    field("IH", g.input_spatial[0]);
    field("IW", g.input_spatial[1]);
    field("OH", g.output_spatial[0]);
    field("OW", g.output_spatial[1]);
    wide("C", static_cast<long long>(k.channels));
    wide("IMG_STRIDE", static_cast<long long>(g.image_stride));
    wide("ROW_STRIDE", static_cast<long long>(g.input_spatial_strides[0]));
    wide("COL_STRIDE", static_cast<long long>(g.input_spatial_strides[1]));
    wide("W_FILTER", static_cast<long long>(p.b.row_stride));
    wide("W_ROW", static_cast<long long>(p.b.k_strides[0]));
    wide("W_COL", static_cast<long long>(p.b.k_strides[1]));
    field("WP", k.pitch);
    field("PLANE", k.window_plane);
    field("TWS", k.stage_pitch);
    field("SPLANE", k.stage_plane);
    field("RING", k.ring);
    field("WEIGHT_BYTES", k.weight_bytes);
    field("STAGE_BYTES", k.stage_offset);
    field("ROW_TILES", k.row_tiles);
    field("COL_TILES", k.col_tiles);
    wide("SPATIAL_TILES", static_cast<long long>(k.spatial_tiles));
    s += "};\n\n";
    const std::string& args = start.args;
    const unsigned lanes = epilogue.lanes > 1 && 8 % epilogue.lanes == 0 ? epilogue.lanes : 1;
    s += text::kernel_signature(entry, start.params, k.threads, k.min_blocks) + " {\n";
    s += "    extern __shared__ __align__(16) float cx_dw_w[];\n";
    s += std::string("    ") + (k.pipelined ? "cx_depthwise_mma_pipelined" : "cx_depthwise_mma") +
         "<cx_dw_cfg>(in0, in1, reinterpret_cast<unsigned char*>(cx_dw_w),\n";
    s += "        [&](float* v, long long m, long long f) {\n";
    for (unsigned q = 0; q < 8; q += lanes)
        s += lanes > 1 ? "            cx_epilogue_vec(v + " + std::to_string(q) + ", 0LL, m, f + " +
                             std::to_string(q) + args + ");\n"
                       : "            cx_epilogue(v[" + std::to_string(q) + "], 0LL, m, f + " +
                             std::to_string(q) + args + ");\n";
    s += "        });\n}\n";
    set_launch(start.out, k);
    return start.out;
}

} // namespace

kernel_source generate_depthwise_kernel(const gemm_problem& p, const perf_config& c,
                                        const gemm_epilogue& epilogue, const std::string& entry,
                                        const gemm_device_limits& limits) {
    std::string why;
    const auto plan = make_depthwise_plan(c, p, limits, &why);
    CONFLUX_ASSERT(plan.has_value(), "depthwise config ", to_string(c), " is not valid for ",
                   to_string(p), ": ", why);
    const depthwise_plan& k = *plan;
    if (k.tensor_cores && !p.empty()) return generate_mma_kernel(k, p, c, epilogue, entry);
    const conv_geometry& g = *p.conv;
    const std::size_t nd = g.nd(), last = nd - 1;
    const unsigned V = k.vector, O = k.outputs;
    const std::size_t block_channels = std::size_t(k.block_vectors) * V;
    const std::string S = storage_type(p.type);
    const std::string in = "    ";

    kernel_start start = start_kernel(p, c, epilogue, entry, {"types.cuh"});
    kernel_source& out = start.out;
    std::string& s = out.code;
    s += text::kernel_signature(entry, start.params, k.threads) + " {\n";
    if (p.empty()) {
        s += "}\n";
        out.launch.grid = {0, 1, 1};
        out.launch.block = {k.threads, 1, 1};
        return out;
    }
    const std::string& args = start.args;

    // The block's weights, f32, [tap][channel of the block]. Read tap-fastest: a filter's taps
    // are contiguous in the weights (KRSC), so consecutive threads read consecutive elements.
    s += in + "extern __shared__ __align__(16) float cx_dw_w[];\n";
    s += in + "const int cx_tid = threadIdx.x;\n";
    s += in + "const long long cx_c_block = (long long)blockIdx.y * " + ll(block_channels) + ";\n";
    s += in + "for (int i = cx_tid; i < " + lit(k.taps * block_channels) +
         "; i += " + lit(std::size_t(k.threads)) + ") {\n";
    s += in + "    const int tap = i % " + lit(k.taps) + ";\n";
    s += in + "    const int cl = i / " + lit(k.taps) + ";\n";
    s += in + "    const long long f = cx_c_block + cl;\n";
    s += in + "    float w = 0.0f;\n";
    s += in + "    if (f < " + ll(k.channels) + ") {\n";
    s += in + "        int rest = tap;\n";
    std::string tap_offset;
    for (std::size_t d = nd; d-- > 0;) {
        s += in + "        const int k" + std::to_string(d) + " = rest % " + lit(g.kernel[d]) +
             "; rest /= " + lit(g.kernel[d]) + ";\n";
        tap_offset += " + (long long)k" + std::to_string(d) + " * " + ll(p.b.k_strides[d]);
    }
    // Filter f = group * multiplier + j sits at f * (the filter stride): the group's batch
    // stride is multiplier * that.
    s += in + "        w = cx_load(in1 + f * " + ll(p.b.row_stride) + tap_offset + ");\n";
    s += in + "    }\n";
    s += in + "    cx_dw_w[tap * " + lit(block_channels) + " + cl] = w;\n";
    s += in + "}\n";
    auto finished = [&] {
        s += "}\n";
        set_launch(out, k);
        return out;
    };
    if (k.tile_rows != 0) {
        s += tiled_body(k, p, epilogue, args);
        return finished();
    }
    s += in + "__syncthreads();\n";

    // This thread's channels and outputs.
    const std::size_t vectors = k.channels / V;
    s += in + "const int cx_vec = cx_tid % " + lit(std::size_t(k.block_vectors)) + ";\n";
    s += in + "const long long cv = (long long)blockIdx.y * " + ll(std::size_t(k.block_vectors)) +
         " + cx_vec;\n";
    s += in + "const long long strip = (long long)blockIdx.x * " + ll(std::size_t(k.block_strips)) +
         " + cx_tid / " + lit(std::size_t(k.block_vectors)) + ";\n";
    s += in + "if (cv >= " + ll(vectors) + " || strip >= " + ll(k.rows * k.strips) + ") return;\n";
    s += in + "const long long row = strip / " + ll(k.strips) + ";\n";
    s += in + "const int w0 = (int)(strip % " + ll(k.strips) + ") * " + lit(std::size_t(O)) + ";\n";
    s += in + "long long rest = row;\n";
    for (std::size_t d = last; d-- > 0;)
        s += in + "const int o" + std::to_string(d) + " = (int)(rest % " + ll(g.output_spatial[d]) +
             "); rest /= " + ll(g.output_spatial[d]) + ";\n";
    s += in + "const long long f0 = cv * " + ll(std::size_t(V)) + ";\n";
    s += in + "const " + S + "* cx_x = in0 + rest * " + ll(g.image_stride) + " + (f0 / " +
         ll(g.group_filters) + ") * " + ll(g.channel_stride) + ";\n";
    s += accumulators(O, V);

    // Kernel rows: every tap of the leading spatial axes, in the reference's order.
    std::string indent = in;
    std::string row_offset, lead_tap = "0";
    for (std::size_t d = 0; d < last; ++d) {
        const std::string t = "t" + std::to_string(d), pos = "p" + std::to_string(d);
        s += indent + "#pragma unroll\n";
        s += indent + "for (int " + t + " = 0; " + t + " < " + lit(g.kernel[d]) + "; ++" + t +
             ") {\n";
        indent += "    ";
        s += indent + "const int " + pos + " = o" + std::to_string(d) + " * " + lit(g.stride[d]) +
             " - " + lit(g.pad_begin[d]) + " + " + t + " * " + lit(g.dilation[d]) + ";\n";
        s += indent + "if (" + pos + " < 0 || " + pos + " >= " + lit(g.input_spatial[d]) +
             ") continue;\n";
        row_offset += " + (long long)" + pos + " * " + ll(g.input_spatial_strides[d]);
        lead_tap = "(" + lead_tap + ") * " + lit(g.kernel[d]) + " + " + t;
    }
    s += indent + "const " + S + "* cx_row = cx_x" + row_offset + ";\n";
    s += indent + "const int cx_col0 = w0 * " + lit(g.stride[last]) + " - " +
         lit(g.pad_begin[last]) + ";\n";
    for (unsigned col : k.columns) {
        const std::string x = "x" + std::to_string(col);
        s += indent + "float " + x + "[" + lit(std::size_t(V)) + "];\n";
        s += indent + "{\n";
        s += indent + "    const int col = cx_col0 + " + lit(std::size_t(col)) + ";\n";
        s += indent + "    if (col >= 0 && col < " + lit(g.input_spatial[last]) + ") {\n";
        s +=
            storage_vector_load(x, "cx_row + (long long)col * " + ll(g.input_spatial_strides[last]),
                                V, p.type, indent + "        ");
        s += indent + "    } else {\n";
        for (unsigned v = 0; v < V; ++v)
            s += indent + "        " + x + "[" + std::to_string(v) + "] = 0.0f;\n";
        s += indent + "    }\n";
        s += indent + "}\n";
    }
    s += indent + "const float* cx_wt = cx_dw_w + (" + lead_tap + ") * " +
         lit(g.kernel[last] * block_channels) + " + cx_vec * " + lit(std::size_t(V)) + ";\n";
    s += tap_products(k, g, block_channels, indent);
    for (std::size_t d = last; d-- > 0;) {
        indent.resize(indent.size() - 4);
        s += indent + "}\n";
    }

    s += epilogue_stores(k, g, epilogue, args);
    return finished();
}

} // namespace conflux::cuda
