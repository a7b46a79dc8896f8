// The attention op's kernel (src/cuda/kernels/attention.cuh does the work): the shape struct
// with every len and stride, the batch entry's element 0 of each operand, the launch (one block
// per batch entry and 64 query rows, four warps; 128 rows and eight warps for long sequences,
// whose key tiles are then read half as often). An out_perm only changes the output's strides.
#include "conflux/ops/attention.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/attention_kernel.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/generator.hpp"

#include <cstdio>

namespace conflux::cuda {

namespace {

constexpr std::size_t block_rows = 64, block_keys = 64, max_head_dim = 128;

std::size_t rows_per_block(std::size_t sq) {
    return sq >= 512 ? 2 * block_rows : block_rows;
}

std::size_t round16(std::size_t n) {
    return (n + 15) / 16 * 16;
}

std::string ll(long long v) {
    return text::long_long_literal(v);
}

// `name`'s element offset of batch entry `b` (row-major over the batch axes).
std::string batch_offset(const std::string& name, const shape& s, std::size_t batch_rank) {
    std::string f = "__device__ __forceinline__ long long " + name + "(long long b) {\n";
    f += "    long long off = 0;\n";
    for (std::size_t a = batch_rank; a-- > 0;) {
        f += "    off += (b % " + ll(static_cast<long long>(s.lens()[a])) + ") * " +
             ll(static_cast<long long>(s.strides()[a])) + ";\n";
        f += "    b /= " + ll(static_cast<long long>(s.lens()[a])) + ";\n";
    }
    return f + "    return off;\n}\n";
}

// The q tile and two buffers each of key and value rows (attention.cuh).
std::size_t shared_bytes_for(std::size_t rows, std::size_t dp, std::size_t dvp) {
    return (rows * (dp + 8) + 2 * block_keys * (dp + 8) + 2 * block_keys * (dvp + 8)) * 2;
}

kernel_source generate_attention(const kernel_request& r) {
    const auto* a = r.op->get_if<op::attention>();
    CONFLUX_ASSERT(a != nullptr, "generate_attention for ", r.op->name());
    const std::string why = attention_kernel_obstacle(r.inputs);
    CONFLUX_USER_CHECK(why.empty(), "attention: ", why);
    const shape &q = r.inputs[0], &kt = r.inputs[1], &v = r.inputs[2];
    // The rows and columns as the kernel computes them, wherever out_perm puts them.
    const shape y = a->result_view(r.outputs[0]);
    const bool has_bias = r.inputs.size() == 4;
    const std::size_t rank = q.rank(), br = rank - 2;
    const std::size_t sq = q.lens()[br], d = q.lens()[br + 1], sk = kt.lens()[br + 1];
    const std::size_t dv = v.lens()[br + 1];
    std::size_t batches = 1;
    for (std::size_t i = 0; i < br; ++i)
        batches *= q.lens()[i];
    if (y.elements() == 0) return text::empty_kernel(r);

    auto stride = [](const shape& s, std::size_t axis) {
        return ll(static_cast<long long>(s.strides()[axis]));
    };
    char scale[64];
    std::snprintf(scale, sizeof scale, "%.9e", double(a->scale));
    std::string s = text::include_prelude({"types.cuh", "gemm.cuh", "attention.cuh"}) +
                    text::suppress_unused_warnings;
    s += "struct cx_attention_shape {\n";
    auto member = [&](const std::string& type, const std::string& name, const std::string& value) {
        s += "    static constexpr " + type + " " + name + " = " + value + ";\n";
    };
    const std::size_t br_rows = rows_per_block(sq), threads = br_rows / 16 * 32;
    member("int", "BR", std::to_string(br_rows));
    member("int", "SQ", std::to_string(sq));
    member("int", "SK", std::to_string(sk));
    member("int", "D", std::to_string(d));
    member("int", "DV", std::to_string(dv));
    member("int", "DP", std::to_string(round16(d)));
    member("int", "DVP", std::to_string(round16(dv)));
    member("long long", "Q_ROW", stride(q, br));
    member("long long", "Q_COL", stride(q, br + 1));
    member("long long", "K_ROW", stride(kt, br + 1)); // key j
    member("long long", "K_COL", stride(kt, br));     // element d of a key
    member("long long", "V_ROW", stride(v, br));
    member("long long", "V_COL", stride(v, br + 1));
    member("long long", "B_ROW", has_bias ? stride(r.inputs[3], br) : "0LL");
    member("long long", "B_COL", has_bias ? stride(r.inputs[3], br + 1) : "0LL");
    member("long long", "O_ROW", stride(y, br));
    member("long long", "O_COL", stride(y, br + 1));
    member("float", "SCALE", std::string(scale) + "f");
    member("bool", "HAS_BIAS", has_bias ? "true" : "false");
    member("bool", "ZERO_NAN_ROWS", a->zero_nan_rows ? "true" : "false");
    s += "};\n\n";
    s += batch_offset("cx_q_at", q, br) + batch_offset("cx_k_at", kt, br) +
         batch_offset("cx_v_at", v, br) + batch_offset("cx_o_at", y, br);
    if (has_bias) s += batch_offset("cx_b_at", r.inputs[3], br);
    const std::string t = storage_type(q.type());
    const std::string tb = has_bias ? storage_type(r.inputs[3].type()) : t;
    s += "\n" +
         text::kernel_signature(r.entry, text::buffer_parameters(r.inputs, r.outputs),
                                unsigned(threads)) +
         " {\n";
    s += "    extern __shared__ __align__(16) unsigned char cx_smem[];\n";
    s += "    const long long b = blockIdx.x;\n";
    s += "    cx_attention<cx_attention_shape, " + t + ", " + tb + ", " + storage_type(y.type()) +
         ">(in0 + cx_q_at(b), in1 + cx_k_at(b), in2 + cx_v_at(b), " +
         (has_bias ? "in3 + cx_b_at(b)" : "(const " + tb + "*)nullptr") +
         ", out0 + cx_o_at(b), reinterpret_cast<" + t + "*>(cx_smem));\n";
    s += "}\n";
    kernel_source k;
    k.entry = r.entry;
    k.code = s;
    k.launch.grid = {unsigned(batches), unsigned((sq + br_rows - 1) / br_rows), 1};
    k.launch.block = {unsigned(threads), 1, 1};
    k.launch.shared_bytes = unsigned(shared_bytes_for(br_rows, round16(d), round16(dv)));
    return k;
}

} // namespace

std::string attention_kernel_obstacle(const std::vector<shape>& inputs) {
    if (inputs.size() < 3) return "needs q, kt and v";
    const shape& q = inputs[0];
    const dtype t = q.type();
    if (t != dtype::f16 && t != dtype::bf16)
        return "the fused kernel takes f16 or bf16, not " + std::string(to_string(t));
    const std::size_t br = q.rank() - 2;
    const std::size_t d = q.lens()[br + 1], dv = inputs[2].lens()[br + 1];
    if (d == 0 || dv == 0 || d > max_head_dim || dv > max_head_dim)
        return "head dims " + std::to_string(d) + " and " + std::to_string(dv) +
               " (the kernel takes 1 to " + std::to_string(max_head_dim) + ")";
    std::size_t batches = 1;
    for (std::size_t i = 0; i < br; ++i)
        batches *= q.lens()[i];
    if (batches > 0x7fffffffu || (q.lens()[br] + block_rows - 1) / block_rows > 65535)
        return "the grid would exceed the device's limits";
    return "";
}

void add_attention_generators() {
    add_generator("attention", generate_attention);
}

} // namespace conflux::cuda
