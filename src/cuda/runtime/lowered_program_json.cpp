#include "cuda/runtime/lowered_program_json.hpp"

#include "conflux/ir/serialize.hpp"
#include "conflux/util/errors.hpp"

#include <algorithm>
#include <string>

namespace conflux::cuda {

using nlohmann::json;

namespace {

json launch_to_json(const launch_dims& l) {
    return {{"grid", l.grid}, {"block", l.block}, {"shared_bytes", l.shared_bytes}};
}

launch_dims launch_from_json(const json& j, const std::string& what) {
    launch_dims l;
    for (const char* key : {"grid", "block"}) {
        const dims v = json_sizes(j, key, what);
        CONFLUX_USER_CHECK(
            v.size() == 3 && std::ranges::all_of(v, [](std::size_t x) { return x <= 0xffffffffu; }),
            what, ".", key, ": expected 3 unsigned 32-bit values");
        std::ranges::copy(v, (key[0] == 'g' ? l.grid : l.block).begin());
    }
    const std::size_t shared = json_size(j, "shared_bytes", what);
    CONFLUX_USER_CHECK(shared <= 0xffffffffu, what, ".shared_bytes: too large");
    l.shared_bytes = unsigned(shared);
    return l;
}

json tensor_maps_to_json(const std::vector<tensor_map_spec>& maps) {
    json out = json::array();
    for (const tensor_map_spec& m : maps) {
        const std::size_t r = m.rank;
        out.push_back(
            {{"argument", m.argument},
             {"element_bytes", m.element_bytes},
             {"bfloat16", m.bfloat16},
             {"dims", std::vector<unsigned long long>(m.dims.begin(), m.dims.begin() + r)},
             {"strides",
              std::vector<unsigned long long>(m.strides.begin(), m.strides.begin() + (r - 1))},
             {"box", std::vector<unsigned>(m.box.begin(), m.box.begin() + r)},
             {"swizzle_bytes", m.swizzle_bytes}});
    }
    return out;
}

// What cuTensorMapEncodeTiled accepts, checked here so that a damaged file is the user's error
// and not the driver's.
std::vector<tensor_map_spec> tensor_maps_from_json(const json& k, const kernel_source& src,
                                                   const std::string& what) {
    std::vector<tensor_map_spec> maps;
    if (!k.contains("tensor_maps")) return maps; // files from before TMA kernels
    std::size_t i = 0;
    for (const json& j : json_array(k, "tensor_maps", what)) {
        const std::string w = what + ".tensor_maps[" + std::to_string(i++) + "]";
        tensor_map_spec m;
        m.argument = json_size(j, "argument", w);
        CONFLUX_USER_CHECK(m.argument < src.inputs + src.outputs, w,
                           ".argument: not one of the kernel's pointers");
        CONFLUX_USER_CHECK(json_size(j, "element_bytes", w) == 2, w,
                           ".element_bytes: only 2-byte elements are mapped");
        m.bfloat16 = json_bool(j, "bfloat16", w);
        const dims d = json_sizes(j, "dims", w), st = json_sizes(j, "strides", w),
                   box = json_sizes(j, "box", w);
        CONFLUX_USER_CHECK(d.size() >= 1 && d.size() <= 5 && box.size() == d.size() &&
                               st.size() + 1 == d.size(),
                           w,
                           ": rank 1 to 5 with one box size per axis and a stride for each "
                           "axis after the first expected");
        m.rank = unsigned(d.size());
        for (std::size_t a = 0; a < d.size(); ++a) {
            CONFLUX_USER_CHECK(d[a] >= 1 && d[a] <= (1ull << 32) && box[a] >= 1 && box[a] <= 256, w,
                               ": axis ", a, " has size ", d[a], " and box ", box[a],
                               " (sizes 1 to 2^32, boxes 1 to 256)");
            m.dims[a] = d[a];
            m.box[a] = unsigned(box[a]);
        }
        for (std::size_t a = 0; a < st.size(); ++a) {
            CONFLUX_USER_CHECK(st[a] % 16 == 0 && st[a] < (1ull << 40), w, ".strides[", a,
                               "]: ", st[a], " is not a multiple of 16 below 2^40");
            m.strides[a] = st[a];
        }
        m.swizzle_bytes = unsigned(json_size(j, "swizzle_bytes", w));
        CONFLUX_USER_CHECK(m.swizzle_bytes == 32 || m.swizzle_bytes == 64 || m.swizzle_bytes == 128,
                           w, ".swizzle_bytes: 32, 64 or 128 expected");
        CONFLUX_USER_CHECK(m.box[0] * 2 % 16 == 0 && m.box[0] * 2 <= m.swizzle_bytes, w,
                           ".box[0]: rows of ", m.box[0] * 2,
                           " bytes do not fit the swizzle or are not a multiple of 16");
        maps.push_back(m);
    }
    return maps;
}

const char* source_name(memory_source s) {
    switch (s) {
    case memory_source::parameter:
        return "parameter";
    case memory_source::literal:
        return "literal";
    case memory_source::buffer:
        return "buffer";
    }
    return "?";
}

memory_source source_from_name(const std::string& name, const std::string& what) {
    for (memory_source s :
         {memory_source::parameter, memory_source::literal, memory_source::buffer})
        if (name == source_name(s)) return s;
    throw_user_error(what, ".source: unknown memory source '", name, "'");
}

std::string at(const std::string& what, const char* field, std::size_t i) {
    return what + "." + field + "[" + std::to_string(i) + "]";
}

// The checks the executable relies on: it indexes with what the file says and hands the
// kernels pointers computed from it.
void check_consistent(const lowered_program& p, const std::vector<compiled_kernel>& binaries,
                      const std::string& what) {
    CONFLUX_USER_CHECK(binaries.size() == p.kernels.size(), what, ": ", p.kernels.size(),
                       " kernels but ", binaries.size(), " binaries");
    auto memory_bytes = [&](const operand& o) -> std::size_t {
        switch (o.source) {
        case memory_source::parameter:
            return p.parameter_shapes.at(o.index).bytes();
        case memory_source::literal:
            return p.literals.at(o.index).get_shape().bytes();
        case memory_source::buffer:
            return p.buffers.at(o.index).bytes;
        }
        return 0;
    };
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        const kernel_step& step = p.steps[i];
        const std::string w = at(what, "steps", i);
        CONFLUX_USER_CHECK(step.kernel < p.kernels.size(), w, ": kernel ", step.kernel,
                           " out of range");
        const kernel_source& k = p.kernels[step.kernel];
        CONFLUX_USER_CHECK(step.args.size() == k.inputs + k.outputs, w, ": ", step.args.size(),
                           " operands for a kernel of ", k.inputs + k.outputs);
        for (const operand& o : step.args) {
            const std::size_t count = o.source == memory_source::parameter
                                          ? p.parameter_shapes.size()
                                      : o.source == memory_source::literal ? p.literals.size()
                                                                           : p.buffers.size();
            CONFLUX_USER_CHECK(o.index < count, w, ": ", source_name(o.source), " ", o.index,
                               " out of range");
            const std::size_t bytes = memory_bytes(o);
            CONFLUX_USER_CHECK(o.byte_offset <= bytes && o.view.bytes() <= bytes - o.byte_offset, w,
                               ": an operand reaches past its ", source_name(o.source));
        }
        // A tensor map's box reads stay inside the memory it spans (TMA checks no allocation).
        for (const tensor_map_spec& m : k.tensor_maps) {
            const operand& o = step.args.at(m.argument);
            unsigned long long span = m.dims[0] * m.element_bytes;
            for (unsigned d = 1; d < m.rank; ++d)
                span += (m.dims[d] - 1) * m.strides[d - 1];
            const std::size_t bytes = memory_bytes(o);
            CONFLUX_USER_CHECK(o.byte_offset <= bytes && span <= bytes - o.byte_offset, w,
                               ": a tensor map of operand ", m.argument, " spans ", span,
                               " bytes, past its ", source_name(o.source));
        }
    }
    for (std::size_t b = 0; b < p.buffers.size(); ++b)
        CONFLUX_USER_CHECK(!p.buffers[b].is_output ||
                               (p.buffers[b].output_index < p.output_buffers.size() &&
                                p.output_buffers[p.buffers[b].output_index] == b),
                           at(what, "buffers", b), ": its output index does not name it");
    CONFLUX_USER_CHECK(p.output_names.size() == p.output_buffers.size() &&
                           p.output_shapes.size() == p.output_buffers.size(),
                       what, ": outputs, their buffers and shapes do not match in number");
    for (std::size_t o = 0; o < p.output_buffers.size(); ++o)
        CONFLUX_USER_CHECK(
            p.output_buffers[o] < p.buffers.size() && p.buffers[p.output_buffers[o]].is_output &&
                p.output_shapes[o].bytes() <= p.buffers[p.output_buffers[o]].bytes,
            at(what, "outputs", o), ": its buffer is not an output buffer of its size");
    CONFLUX_USER_CHECK(p.arena_offset.size() == p.buffers.size(), what,
                       ": one arena offset per buffer expected");
    for (std::size_t b = 0; b < p.buffers.size(); ++b)
        CONFLUX_USER_CHECK(p.buffers[b].is_output ||
                               (p.arena_offset[b] <= p.plan.arena_bytes &&
                                p.buffers[b].bytes <= p.plan.arena_bytes - p.arena_offset[b]),
                           at(what, "buffers", b), ": it lies outside the arena");
    CONFLUX_USER_CHECK(p.parameter_names.size() == p.parameter_shapes.size(), what,
                       ": parameters and their shapes do not match in number");
}

} // namespace

json lowered_program_to_json(const lowered_program& p, const std::vector<compiled_kernel>& binaries,
                             blob_list& blobs) {
    CONFLUX_ASSERT(binaries.size() == p.kernels.size(), "one binary per kernel expected");
    json kernels = json::array();
    for (std::size_t i = 0; i < p.kernels.size(); ++i) {
        const kernel_source& k = p.kernels[i];
        const compiled_kernel& b = binaries[i];
        CONFLUX_ASSERT(b.entry == k.entry, "binary ", b.entry, " saved for kernel ", k.entry);
        kernels.push_back({{"entry", k.entry},
                           {"code", k.code},
                           {"launch", launch_to_json(k.launch)},
                           {"inputs", k.inputs},
                           {"outputs", k.outputs},
                           {"arch_specific", k.arch_specific},
                           {"tensor_maps", tensor_maps_to_json(k.tensor_maps)},
                           {"cubin", blobs.add(b.cubin.data(), b.cubin.size())},
                           {"log", b.log}});
    }
    json steps = json::array();
    for (const kernel_step& s : p.steps) {
        json args = json::array();
        for (const operand& o : s.args)
            args.push_back({{"source", source_name(o.source)},
                            {"index", o.index},
                            {"byte_offset", o.byte_offset},
                            {"view", shape_to_json(o.view)}});
        steps.push_back({{"kernel", s.kernel},
                         {"launch", launch_to_json(s.launch)},
                         {"args", std::move(args)},
                         {"origin", s.origin},
                         {"gemm", s.gemm}});
    }
    json parameters = json::array();
    for (std::size_t i = 0; i < p.parameter_names.size(); ++i)
        parameters.push_back(
            {{"name", p.parameter_names[i]}, {"shape", shape_to_json(p.parameter_shapes[i])}});
    json literals = json::array();
    for (const argument& a : p.literals)
        literals.push_back(argument_to_json(a, &blobs));
    json buffers = json::array();
    for (const buffer& b : p.buffers)
        buffers.push_back({{"bytes", b.bytes},
                           {"is_output", b.is_output},
                           {"output_index", b.output_index},
                           {"first_step", b.first_step},
                           {"last_step", b.last_step}});
    json outputs = json::array();
    for (std::size_t o = 0; o < p.output_names.size(); ++o)
        outputs.push_back({{"name", p.output_names[o]},
                           {"buffer", p.output_buffers[o]},
                           {"shape", shape_to_json(p.output_shapes[o])}});
    json candidates = json::array();
    for (const auto& c : p.anchor_candidates)
        candidates.push_back(c);
    return {{"kernels", std::move(kernels)},
            {"steps", std::move(steps)},
            {"parameters", std::move(parameters)},
            {"literals", std::move(literals)},
            {"buffers", std::move(buffers)},
            {"outputs", std::move(outputs)},
            {"plan",
             {{"offsets", p.plan.offsets},
              {"arena_bytes", p.plan.arena_bytes},
              {"total_bytes", p.plan.total_bytes}}},
            {"temporaries", p.temporaries},
            {"arena_offset", p.arena_offset},
            {"trace", p.trace},
            {"anchor_candidates", std::move(candidates)},
            {"tf32_anchors", p.tf32_anchors}};
}

void lowered_program_from_json(const json& j, const blob_table& blobs, lowered_program& p,
                               std::vector<compiled_kernel>& binaries) {
    const std::string what = "section 'cuda'";
    p = lowered_program{};
    binaries.clear();
    std::size_t i = 0;
    for (const json& k : json_array(j, "kernels", what)) {
        const std::string w = at(what, "kernels", i++);
        kernel_source& src = p.kernels.emplace_back();
        src.entry = json_string(k, "entry", w);
        src.code = json_string(k, "code", w);
        src.launch = launch_from_json(json_field(k, "launch", w), w + ".launch");
        src.inputs = json_size(k, "inputs", w);
        src.outputs = json_size(k, "outputs", w);
        src.arch_specific = json_bool(k, "arch_specific", w);
        src.tensor_maps = tensor_maps_from_json(k, src, w);
        const auto [cubin, bytes] =
            bytes_from_json(json_field(k, "cubin", w), w + ".cubin", &blobs);
        const auto* first = reinterpret_cast<const char*>(cubin.get());
        binaries.push_back(
            {src.entry, std::vector<char>(first, first + bytes), json_string(k, "log", w)});
    }
    i = 0;
    for (const json& s : json_array(j, "steps", what)) {
        const std::string w = at(what, "steps", i++);
        kernel_step& step = p.steps.emplace_back();
        step.kernel = json_size(s, "kernel", w);
        step.launch = launch_from_json(json_field(s, "launch", w), w + ".launch");
        std::size_t a = 0;
        for (const json& o : json_array(s, "args", w)) {
            const std::string wa = at(w, "args", a++);
            step.args.push_back({source_from_name(json_string(o, "source", wa), wa),
                                 json_size(o, "index", wa), json_size(o, "byte_offset", wa),
                                 shape_from_json(json_field(o, "view", wa), wa + ".view")});
        }
        step.origin = json_string(s, "origin", w);
        step.gemm = json_string(s, "gemm", w);
    }
    i = 0;
    for (const json& param : json_array(j, "parameters", what)) {
        const std::string w = at(what, "parameters", i++);
        p.parameter_names.push_back(json_string(param, "name", w));
        p.parameter_shapes.push_back(shape_from_json(json_field(param, "shape", w), w + ".shape"));
    }
    i = 0;
    for (const json& lit : json_array(j, "literals", what))
        p.literals.push_back(argument_from_json(lit, at(what, "literals", i++), &blobs));
    i = 0;
    for (const json& b : json_array(j, "buffers", what)) {
        const std::string w = at(what, "buffers", i++);
        p.buffers.push_back({json_size(b, "bytes", w), json_bool(b, "is_output", w),
                             json_size(b, "output_index", w), json_size(b, "first_step", w),
                             json_size(b, "last_step", w)});
    }
    i = 0;
    for (const json& o : json_array(j, "outputs", what)) {
        const std::string w = at(what, "outputs", i++);
        p.output_names.push_back(json_string(o, "name", w));
        p.output_buffers.push_back(json_size(o, "buffer", w));
        p.output_shapes.push_back(shape_from_json(json_field(o, "shape", w), w + ".shape"));
    }
    const json& plan = json_field(j, "plan", what);
    p.plan.offsets = json_sizes(plan, "offsets", what + ".plan");
    p.plan.arena_bytes = json_size(plan, "arena_bytes", what + ".plan");
    p.plan.total_bytes = json_size(plan, "total_bytes", what + ".plan");
    p.temporaries = json_sizes(j, "temporaries", what);
    p.arena_offset = json_sizes(j, "arena_offset", what);
    p.trace = json_strings(j, "trace", what);
    i = 0;
    for (const json& c : json_array(j, "anchor_candidates", what)) {
        json wrapped = {{"c", c}};
        p.anchor_candidates.push_back(
            json_strings(wrapped, "c", at(what, "anchor_candidates", i++)));
    }
    p.tf32_anchors = json_size(j, "tf32_anchors", what);
    check_consistent(p, binaries, what);
}

} // namespace conflux::cuda
