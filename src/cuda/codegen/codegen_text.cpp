#include "cuda/codegen/codegen_text.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/codegen/device_types.hpp"

#include <algorithm>
#include <climits>
#include <limits>

namespace conflux::cuda::text {

namespace {

constexpr std::size_t int32_limit = std::size_t(std::numeric_limits<int>::max());

// The most negative long long: its magnitude is no literal of a signed type.
constexpr const char* int64_min_literal = "(-9223372036854775807LL - 1)";

long long checked_signed(std::size_t v) {
    CONFLUX_ASSERT(v <= std::size_t(LLONG_MAX), "integer literal ", v, " is out of range");
    return static_cast<long long>(v);
}

} // namespace

std::string index_type(const std::vector<shape>& shapes) {
    for (const auto& s : shapes)
        if (s.elements() > int32_limit || s.element_space() > int32_limit) return "long long";
    return "int";
}

std::string index_type(const kernel_request& r) {
    std::vector<shape> all = r.inputs;
    all.insert(all.end(), r.outputs.begin(), r.outputs.end());
    return index_type(all);
}

std::string include_prelude(const std::vector<std::string>& headers) {
    std::string s;
    for (const auto& h : headers)
        s += "#include \"conflux/" + h + "\"\n";
    return s + "\n";
}

std::string kernel_signature(const std::string& entry, const std::vector<std::string>& parameters,
                             unsigned launch_bounds, unsigned min_blocks) {
    std::string s = "extern \"C\" __global__ void ";
    if (launch_bounds != 0)
        s += "__launch_bounds__(" + std::to_string(launch_bounds) +
             (min_blocks != 0 ? ", " + std::to_string(min_blocks) : std::string()) + ") ";
    s += entry + "(";
    for (std::size_t i = 0; i < parameters.size(); ++i)
        s += (i == 0 ? "" : ", ") + parameters[i];
    return s + ")";
}

std::vector<std::string> buffer_parameters(const std::vector<shape>& inputs,
                                           const std::vector<shape>& outputs) {
    std::vector<std::string> params;
    for (std::size_t i = 0; i < inputs.size(); ++i)
        params.push_back("const " + storage_type(inputs[i].type()) + "* in" + std::to_string(i));
    for (std::size_t i = 0; i < outputs.size(); ++i)
        params.push_back(storage_type(outputs[i].type()) + "* out" + std::to_string(i));
    return params;
}

std::string kernel_begin(const kernel_request& r, const std::string& index,
                         const std::vector<std::string>& headers) {
    return include_prelude(headers) + suppress_unused_warnings + "typedef " + index +
           " cx_index;\n\n" + kernel_signature(r.entry, buffer_parameters(r.inputs, r.outputs)) +
           " {\n";
}

kernel_source make_kernel(const kernel_request& r, const std::string& body, launch_dims launch,
                          const std::vector<std::string>& headers) {
    kernel_source k;
    k.entry = r.entry;
    k.code = kernel_begin(r, index_type(r), headers) + body + "}\n";
    k.launch = launch;
    return k;
}

std::vector<std::string> names(const std::string& prefix, std::size_t n) {
    std::vector<std::string> r;
    for (std::size_t i = 0; i < n; ++i)
        r.push_back(prefix + std::to_string(i));
    return r;
}

std::string thread_per_element(std::size_t elements, const std::string& indent) {
    return indent + "const long long cx_thread = static_cast<long long>(blockIdx.x) * " +
           std::to_string(elementwise_block) + " + threadIdx.x;\n" + indent +
           "if (cx_thread >= " + integer_literal(elements) + ") return;\n" + indent +
           "const cx_index i = static_cast<cx_index>(cx_thread);\n";
}

kernel_source empty_kernel(const kernel_request& r) {
    kernel_source k;
    k.entry = r.entry;
    k.code = kernel_begin(r, "int") + "}\n";
    k.launch.grid = {0, 1, 1};
    return k;
}

std::string decompose(const std::string& linear, const dims& lens,
                      const std::vector<std::string>& names, const std::string& indent) {
    CONFLUX_ASSERT(lens.size() == names.size(), "decompose: ", lens.size(), " lens but ",
                   names.size(), " names");
    // The outermost axis of len > 1 takes what is left, without a modulo.
    std::size_t outermost = lens.size();
    for (std::size_t i = 0; i < lens.size(); ++i) {
        CONFLUX_ASSERT(lens[i] > 0, "decompose: an empty axis");
        if (lens[i] > 1 && outermost == lens.size()) outermost = i;
    }
    std::string s;
    const std::string rest = names.empty() ? std::string() : names.front() + "_rest";
    bool rest_declared = false;
    for (std::size_t i = lens.size(); i-- > 0;) {
        if (lens[i] == 1) {
            s += indent + "const cx_index " + names[i] + " = 0;\n";
            continue;
        }
        const std::string source = rest_declared ? rest : "(" + linear + ")";
        if (i == outermost) {
            s += indent + "const cx_index " + names[i] + " = " + source + ";\n";
            continue;
        }
        const std::string len = integer_literal(lens[i]);
        s += indent + "const cx_index " + names[i] + " = " + source + " % " + len + ";\n";
        if (rest_declared)
            s += indent + rest + " /= " + len + ";\n";
        else
            s += indent + "cx_index " + rest + " = " + source + " / " + len + ";\n";
        rest_declared = true;
    }
    return s;
}

std::string offset(const std::vector<std::string>& index, const dims& lens, const dims& strides) {
    CONFLUX_ASSERT(index.size() == lens.size() && lens.size() == strides.size(),
                   "offset: rank mismatch");
    std::string s;
    for (std::size_t i = 0; i < lens.size(); ++i) {
        if (lens[i] == 1 || strides[i] == 0) continue;
        if (!s.empty()) s += " + ";
        s += index[i];
        if (strides[i] != 1) s += " * " + integer_literal(strides[i]);
    }
    return s.empty() ? "0" : s;
}

axis_rows rows_along(const shape& x, std::size_t axis) {
    axis_rows r;
    r.axis = axis;
    for (std::size_t a = 0; a < x.rank(); ++a) {
        if (a == axis) continue;
        r.lens.push_back(x.lens()[a]);
        r.names.push_back("a" + std::to_string(a));
        r.count *= x.lens()[a];
    }
    return r;
}

std::string axis_rows::decompose_row(const std::string& indent) const {
    return decompose("i", lens, names, indent);
}

std::string axis_rows::start(const std::string& var, const shape& s,
                             const std::string& indent) const {
    dims strides;
    for (std::size_t a = 0; a < s.rank(); ++a)
        if (a != axis) strides.push_back(s.strides()[a]);
    return indent + "const cx_index " + var + " = " + offset(names, lens, strides) + ";\n";
}

std::string scaled(const std::string& expr, std::size_t factor) {
    return factor == 1 ? expr : expr + " * " + integer_literal(factor);
}

std::string integer_literal(long long v) {
    if (v == LLONG_MIN) return int64_min_literal;
    return std::to_string(v) + (v > INT_MAX || v < INT_MIN ? "LL" : "");
}

std::string integer_literal(std::size_t v) {
    return integer_literal(checked_signed(v));
}

std::string long_long_literal(long long v) {
    if (v == LLONG_MIN) return int64_min_literal;
    return std::to_string(v) + "LL";
}

std::string long_long_literal(std::size_t v) {
    return long_long_literal(checked_signed(v));
}

std::string decimal_literal(std::int64_t v) {
    if (v == INT64_MIN) return int64_min_literal;
    return std::to_string(v);
}

launch_dims linear_launch(std::size_t items, unsigned block) {
    const std::size_t blocks = (items + block - 1) / block;
    CONFLUX_ASSERT(blocks <= int32_limit, "linear_launch: ", items, " items need too many blocks");
    launch_dims l;
    l.grid = {unsigned(blocks), 1, 1};
    l.block = {block, 1, 1};
    return l;
}

launch_dims row_mapping::launch() const {
    if (thread_per_row) return linear_launch(rows, block);
    if (warp_per_row) return linear_launch(rows * 32, block);
    CONFLUX_ASSERT(rows <= int32_limit, "row_mapping: ", rows, " rows need too many blocks");
    launch_dims l;
    l.grid = {unsigned(rows), 1, 1};
    l.block = {block, 1, 1};
    return l;
}

std::string row_mapping::prologue(const std::string& indent) const {
    if (thread_per_row) {
        return indent + "const long long cx_thread = static_cast<long long>(blockIdx.x) * " +
               std::to_string(block) + " + threadIdx.x;\n" + indent +
               "if (cx_thread >= " + integer_literal(rows) + ") return;\n" + indent +
               "const cx_index row = static_cast<cx_index>(cx_thread);\n" + indent +
               "const cx_index first = 0;\n" + indent + "const cx_index step = 1;\n";
    }
    if (warp_per_row) {
        // A warp past the last row leaves as a whole, so the others' shuffles stay complete.
        return indent + "const long long cx_warp = static_cast<long long>(blockIdx.x) * " +
               std::to_string(block / 32) + " + threadIdx.x / 32u;\n" + indent +
               "if (cx_warp >= " + integer_literal(rows) + ") return;\n" + indent +
               "const cx_index row = static_cast<cx_index>(cx_warp);\n" + indent +
               "const cx_index first = static_cast<cx_index>(threadIdx.x % 32u);\n" + indent +
               "const cx_index step = 32;\n";
    }
    return indent + "const cx_index row = static_cast<cx_index>(blockIdx.x);\n" + indent +
           "const cx_index first = static_cast<cx_index>(threadIdx.x);\n" + indent +
           "const cx_index step = " + std::to_string(block) + ";\n";
}

std::string row_mapping::combine(const std::string& value, const std::string& op) const {
    if (thread_per_row) return value;
    if (warp_per_row) return "cx_warp_allreduce(" + value + ", " + op + ")";
    return "cx_block_reduce(" + value + ", " + op + ")";
}

row_mapping choose_row_mapping(std::size_t rows, std::size_t row_length,
                               bool fastest_axis_reduced) {
    row_mapping m;
    m.rows = rows;
    m.row_length = row_length;
    const bool short_rows = row_length < 32;
    const bool coalesced_across_rows = !fastest_axis_reduced && rows >= 4096 && row_length <= 4096;
    m.thread_per_row = short_rows || coalesced_across_rows || rows > int32_limit;
    m.warp_per_row = !m.thread_per_row && fastest_axis_reduced && row_length <= 1024 &&
                     rows >= 256 && rows * 32 <= int32_limit;
    if (m.thread_per_row || m.warp_per_row) {
        m.block = 256;
    } else {
        m.block = 32;
        while (m.block < 256 && m.block < row_length)
            m.block *= 2;
    }
    return m;
}

bool fastest_axis_in(const shape& s, const std::vector<std::size_t>& axes) {
    std::size_t fastest = s.rank();
    for (std::size_t i = 0; i < s.rank(); ++i) {
        if (s.lens()[i] <= 1 || s.strides()[i] == 0) continue;
        if (fastest == s.rank() || s.strides()[i] < s.strides()[fastest]) fastest = i;
    }
    if (fastest == s.rank()) return true;
    return std::find(axes.begin(), axes.end(), fastest) != axes.end();
}

} // namespace conflux::cuda::text
