#include "cuda/codegen/gemm/fused_epilogue.hpp"

#include "cuda/codegen/gemm/kernel_plan.hpp"

#include "conflux/ir/program.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/codegen/codegen_text.hpp"
#include "cuda/codegen/device_types.hpp"
#include "cuda/codegen/index_kernel.hpp"
#include "cuda/codegen/index_values.hpp"
#include "cuda/codegen/index_views.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace conflux::cuda {

namespace {

using index::index_expr;

// How the anchor's value reaches each instruction that depends on it: the layout ops applied
// since the anchor, in order (elementwise ops keep their inputs' position). Two values combined
// by an elementwise op must have come the same way, so that they are at one position.
struct forward_paths {
    std::string unsupported;
    std::map<const instruction*, std::vector<instruction_ref>> path;
};

forward_paths trace_paths(const module& m, instruction_ref anchor) {
    forward_paths f;
    f.path[anchor] = {};
    const auto names = m.print_names();
    for (const instruction& ins : m) {
        if (ins.is_return() || &ins == anchor) continue;
        const std::vector<instruction_ref>* path = nullptr;
        for (instruction_ref in : ins.inputs()) {
            auto it = f.path.find(in);
            if (it == f.path.end()) continue;
            if (path != nullptr && *path != it->second) {
                f.unsupported = names.at(&ins) + " = " + ins.name() +
                                " combines the anchor's value at two different positions";
                return f;
            }
            path = &it->second;
        }
        if (path == nullptr) continue;
        if (ins.get_operator().traits().layout_only) {
            auto moved = *path;
            moved.push_back(const_cast<instruction*>(&ins));
            f.path[&ins] = std::move(moved);
        } else if (ins.get_operator().get_if<op::elementwise>() != nullptr) {
            f.path[&ins] = *path;
        } else {
            f.unsupported = names.at(&ins) + " = " + ins.name() +
                            " uses the anchor's value but is neither pointwise nor a layout change";
            return f;
        }
    }
    const auto returns = m.get_return()->inputs();
    for (std::size_t r = 0; r < returns.size(); ++r)
        if (f.path.count(returns[r]) == 0) {
            f.unsupported = "return " + std::to_string(r) + " is not computed from the anchor";
            return f;
        }
    return f;
}

// Which axes of the anchor's output hold m's (row-major) components and which holds n.
struct anchor_axes {
    std::vector<std::size_t> b_axes, m_axes;
    std::size_t n_axis = 0;
};

anchor_axes axes_of(const gemm_problem& p, std::size_t rank) {
    anchor_axes a;
    if (p.family == gemm_family::dot) {
        for (std::size_t i = 0; i + 2 < rank; ++i)
            a.b_axes.push_back(i);
        a.m_axes = {rank - 2};
        a.n_axis = rank - 1;
    } else if (p.conv->channels_last) { // [N, spatial..., K]
        for (std::size_t i = 0; i + 1 < rank; ++i)
            a.m_axes.push_back(i);
        a.n_axis = rank - 1;
    } else { // [N, K, spatial...]
        a.m_axes.push_back(0);
        for (std::size_t i = 2; i < rank; ++i)
            a.m_axes.push_back(i);
        a.n_axis = 1;
    }
    return a;
}

// Host copy of the forward index map, for deciding the store walk: the element offset in
// `out` of the anchor element at `pos` after the layout ops of `path`.
std::size_t output_offset(std::vector<std::size_t> pos, const dims& anchor_lens,
                          const std::vector<instruction_ref>& path, const shape& out) {
    dims lens = anchor_lens;
    for (instruction_ref t : path) {
        const dims& next = t->get_shape().lens();
        std::vector<std::size_t> moved(next.size(), 0);
        if (const auto* tr = t->get_operator().get_if<op::transpose>()) {
            for (std::size_t i = 0; i < next.size(); ++i)
                moved[i] = pos[static_cast<std::size_t>(tr->permutation[i])];
        } else { // reshape-like: the same row-major linear index
            std::size_t lin = 0;
            for (std::size_t i = 0; i < lens.size(); ++i)
                lin = lin * lens[i] + pos[i];
            for (std::size_t i = next.size(); i-- > 0;) {
                moved[i] = lin % next[i];
                lin /= next[i];
            }
        }
        pos = moved;
        lens = next;
    }
    std::size_t off = 0;
    for (std::size_t i = 0; i < pos.size(); ++i)
        off += pos[i] * out.strides()[i];
    return off;
}

// The anchor position of element (b = 0, m, n) over its lens.
std::vector<std::size_t> anchor_position(const anchor_axes& a, const dims& lens, std::size_t m,
                                         std::size_t n) {
    std::vector<std::size_t> pos(lens.size(), 0);
    for (std::size_t i = a.m_axes.size(); i-- > 0;) {
        pos[a.m_axes[i]] = m % lens[a.m_axes[i]];
        m /= lens[a.m_axes[i]];
    }
    pos[a.n_axis] = n;
    return pos;
}

// The position of the element at `from` (over the layout op's input lens) after op `t`.
index_expr forward(const instruction& t, const index_expr& from, index::kernel_writer& w) {
    const dims& next = t.get_shape().lens();
    const auto* tr = t.get_operator().get_if<op::transpose>();
    if (tr == nullptr) return index::reshape_source(next, from, w); // same linear index
    const auto in_axes = w.axes(from);
    std::vector<std::string> out_axes(next.size());
    dims dense_strides(next.size());
    for (std::size_t i = 0; i < next.size(); ++i) {
        const auto axis = static_cast<std::size_t>(tr->permutation[i]);
        out_axes[i] = in_axes[axis];
        if (!from.dense.empty()) dense_strides[i] = from.dense_strides[axis];
    }
    index_expr moved = index_expr::from_axes(next, out_axes);
    if (!from.dense.empty()) {
        moved.dense = from.dense; // the same element, so the same offset in that layout
        moved.dense_strides = dense_strides;
    }
    return moved;
}

} // namespace

epilogue_shape analyse_epilogue(const gemm_problem& p, const epilogue_module& e) {
    epilogue_shape r;
    const module& m = *e.mod;
    const auto params = m.parameters();
    CONFLUX_ASSERT(e.anchor_slot < params.size() && params.size() == e.inputs.size(),
                   "epilogue module ", m.name(), " is not bound to its inputs");
    const instruction_ref anchor = params[e.anchor_slot];
    const dims& lens = anchor->get_shape().lens();
    const auto returns = m.get_return()->inputs();
    const forward_paths f = trace_paths(m, anchor);
    if (!f.unsupported.empty()) {
        r.unsupported = f.unsupported;
        return r;
    }
    if (e.extra_inputs() > max_epilogue_inputs) {
        r.unsupported = std::to_string(e.extra_inputs()) +
                        " extra epilogue inputs (the kernel takes at most " +
                        std::to_string(max_epilogue_inputs) + ")";
        return r;
    }

    // Nothing is stored for an empty anchor, so the walk does not matter.
    if (p.empty() || std::count(lens.begin(), lens.end(), 0u) != 0) {
        r.walk = store_walk::direct;
        return r;
    }
    // The walk: coalesced along whichever of n and m is an output's fastest axis.
    const anchor_axes a = axes_of(p, lens.size());
    bool any_n = false, any_m = false;
    for (std::size_t k = 0; k < returns.size(); ++k) {
        const auto& path = f.path.at(returns[k]);
        const shape& out = e.outputs[k];
        auto offset_of = [&](std::size_t m_, std::size_t n_) {
            return output_offset(anchor_position(a, lens, m_, n_), lens, path, out);
        };
        const std::size_t base = offset_of(0, 0);
        if (p.n > 1 && offset_of(0, 1) == base + 1)
            any_n = true;
        else if (p.m > 1 && offset_of(1, 0) == base + 1)
            any_m = true;
    }
    if (any_m) {
        r.walk = store_walk::m_major;
        r.walk_required = true;
    } else {
        r.walk = any_n ? store_walk::n_major : store_walk::direct;
    }
    // The n-major walk hands a thread whole 16-byte chunks of the anchor's row when they never
    // straddle a row (or a group).
    const std::size_t bytes = size_of(anchor->get_shape().type());
    const unsigned lanes = bytes == 2 || bytes == 4 ? unsigned(16 / bytes) : 1;
    if (r.walk == store_walk::n_major && lanes > 1 && p.n % lanes == 0) r.lanes = lanes;
    return r;
}

bool can_fuse(const perf_config& c, const gemm_problem& p, const epilogue_module& e,
              std::string* why, const gemm_device_limits& limits) {
    auto fail = [&](std::string reason) {
        if (why) *why = std::move(reason);
        return false;
    };
    if (c.split_k > 1)
        return fail("split-K " + std::to_string(c.split_k) +
                    " would apply the epilogue to partial sums");
    const epilogue_shape s = analyse_epilogue(p, e);
    if (!s.unsupported.empty()) return fail(s.unsupported);
    if (s.walk_required) {
        const std::size_t staged = kernel_shared_bytes(p, c, s.walk);
        if (staged > limits.shared_per_block)
            return fail(std::string(c.warp_specialised
                                        ? "the pipeline and the staged store of a transposed "
                                          "output need "
                                        : "the staged store of a transposed output needs ") +
                        gemm::kib(staged) + " of shared memory, the device allows " +
                        gemm::kib(limits.shared_per_block));
    }
    if (why) why->clear();
    return true;
}

namespace {

// Which part of cx_epilogue_vec a function is (epilogue_function).
enum class vector_part { whole, load, finish };

// Whether return r's `lanes` consecutive n (from a multiple of lanes) are consecutive in its
// output, so one vector store writes them. The lanes stay on one axis, at a multiple of lanes
// whose length is a multiple of lanes: a transpose moves that axis; a reshape keeps them
// together when it is the innermost axis and the new innermost length is a multiple of lanes
// (their row-major index is a multiple of lanes plus 0 .. lanes - 1). Then that axis must have
// stride 1 in the output and every other axis a multiple of lanes.
bool stores_vectors(const gemm_problem& p, const dims& lens,
                    const std::vector<instruction_ref>& path, const shape& out, unsigned lanes) {
    const std::size_t bytes = lanes * size_of(out.type());
    if (bytes != 4 && bytes != 8 && bytes % 16 != 0) return false;
    std::size_t axis = axes_of(p, lens.size()).n_axis;
    std::size_t rank = lens.size();
    for (instruction_ref t : path) {
        const dims& next = t->get_shape().lens();
        if (const auto* tr = t->get_operator().get_if<op::transpose>()) {
            for (std::size_t i = 0; i < tr->permutation.size(); ++i)
                if (static_cast<std::size_t>(tr->permutation[i]) == axis) {
                    axis = i;
                    break;
                }
        } else { // the same row-major index
            if (!t->get_operator().traits().reshape_like || axis + 1 != rank || next.empty() ||
                next.back() % lanes != 0)
                return false;
            axis = next.size() - 1;
        }
        rank = next.size();
    }
    if (out.strides()[axis] != 1) return false;
    for (std::size_t i = 0; i < out.rank(); ++i)
        if (i != axis && out.lens()[i] > 1 && out.strides()[i] % lanes != 0) return false;
    return true;
}

const char* vector_type(std::size_t bytes) {
    return bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : "unsigned";
}

// Extra inputs read where a pointwise op uses the anchor's value (directly, through views, or
// through pointwise ops of their own: a bias, a residual) whose `lanes` elements are consecutive
// and aligned in memory: one vector load for all lanes instead of one load a lane, issued before
// any arithmetic. Each lane's element is remembered at the position the value builder will ask for,
// so it reads the vector's. Consecutive: the input's positions for the lanes differ in one axis
// only, whose text is the lane's n (cx_en + lane) and whose stride is 1. Aligned: cx_en is a
// multiple of lanes (the walk hands out whole chunks), every other axis of the input that is not
// length 1 has a stride that is a multiple of lanes, and so is the input's element offset in its
// buffer (buffers start 16-byte aligned: device_pointer_alignment). An input whose offset is not
// known is read a lane at a time, as is everything else.
//
// Each vector's type is appended to `fields`, in the order of this walk, which is the same in
// every part: the fields of cx_epilogue_loads. The vectors can also be read apart from the rest
// (vector_part, gemm_kernel.hpp's batched_loads): `load` stores them in those fields, `finish`
// takes them from there.
void load_input_vectors(
    const module& m, const epilogue_module& e, const forward_paths& f,
    const std::vector<std::string>& lane_n,
    const std::function<const index_expr&(unsigned, const std::vector<instruction_ref>&)>&
        position_of,
    vector_part part, std::vector<std::string>* fields, index::kernel_writer& w) {
    const std::size_t lanes = lane_n.size();
    const auto params = m.parameters();
    std::set<std::pair<std::size_t, std::string>> loaded;
    auto consider = [&](instruction_ref param, const std::vector<index_expr>& at) {
        const auto slot = static_cast<std::size_t>(std::find(params.begin(), params.end(), param) -
                                                   params.begin());
        if (slot >= params.size() || slot == e.anchor_slot || slot >= e.input_offsets.size() ||
            e.input_offsets[slot] % lanes != 0)
            return;
        const shape& actual = e.inputs[slot];
        const std::size_t total = lanes * size_of(actual.type());
        const std::size_t piece = std::min<std::size_t>(total, 16);
        if ((piece != 4 && piece != 8 && piece != 16) || total % piece != 0) return;
        const auto& axes = at[0].axes;
        if (axes.size() != actual.rank()) return;
        const auto column = std::find(axes.begin(), axes.end(), lane_n[0]);
        if (column == axes.end() || std::find(column + 1, axes.end(), lane_n[0]) != axes.end())
            return;
        const auto axis = static_cast<std::size_t>(column - axes.begin());
        if (actual.strides()[axis] != 1) return;
        for (std::size_t j = 0; j < actual.rank(); ++j)
            if (j != axis && actual.lens()[j] > 1 && actual.strides()[j] % lanes != 0) return;
        for (std::size_t l = 1; l < lanes; ++l)
            for (std::size_t j = 0; j < actual.rank(); ++j)
                if (at[l].axes.size() != actual.rank() ||
                    at[l].axes[j] != (j == axis ? lane_n[l] : at[0].axes[j]))
                    return;
        if (!loaded.emplace(slot, at[0].key()).second) return;
        // cx_packed (types.cuh): one aligned load on the GPU; the host emulation checks the
        // alignment as the GPU would fault on it.
        const std::size_t pieces = total / piece, per_piece = lanes / pieces;
        const std::string packed =
            "cx_packed<" + storage_type(actual.type()) + ", " + std::to_string(per_piece) + ">";
        const std::string first = part == vector_part::finish ? ""
                                                              : "in" + std::to_string(slot) +
                                                                    " + " + w.offset(at[0], actual);
        std::vector<std::string> vectors;
        for (std::size_t k = 0; k < pieces; ++k) {
            const std::string read = "*reinterpret_cast<const " + packed + "*>(" + first +
                                     (k == 0 ? "" : " + " + std::to_string(k * per_piece)) + ")";
            const std::string field = "cx_loads.p" + std::to_string(fields->size());
            fields->push_back(packed);
            if (part == vector_part::load) {
                w.line(field + " = " + read + ";");
                continue;
            }
            vectors.push_back(w.fresh("cx_in"));
            w.line("const " + packed + " " + vectors.back() + " = " +
                   (part == vector_part::finish ? field : read) + ";");
        }
        if (part == vector_part::load) return;
        for (std::size_t l = 0; l < lanes; ++l) {
            const std::string v = w.fresh("v");
            w.line("const " + storage_type(actual.type()) + " " + v + " = " +
                   vectors[l / per_piece] + ".v[" + std::to_string(l % per_piece) + "];");
            w.remember_value(param, at[l].key(), v);
        }
    };
    // From a value used at the anchor's position down to the parameters it reads there.
    std::function<void(instruction_ref, const std::vector<index_expr>&, int)> trace =
        [&](instruction_ref x, const std::vector<index_expr>& at, int depth) {
            if (depth > 8 || f.path.count(x) != 0 || x->is_literal()) return;
            if (x->is_param()) return consider(x, at);
            const operation& op = x->get_operator();
            if (op.get_if<op::elementwise>() != nullptr) {
                for (instruction_ref in : x->inputs())
                    trace(in, at, depth + 1);
                return;
            }
            if (x->inputs().empty()) return;
            const instruction_ref source = x->inputs().front();
            std::vector<index_expr> from;
            for (const index_expr& p : at) {
                auto s = index::view_source(op, source->get_shape().lens(), p, w);
                if (!s) return;
                from.push_back(std::move(*s));
            }
            trace(source, from, depth + 1);
        };
    for (const instruction& ins : m) {
        auto found = f.path.find(&ins);
        if (found == f.path.end() || ins.get_operator().get_if<op::elementwise>() == nullptr)
            continue;
        std::vector<index_expr> at;
        for (unsigned lane = 0; lane < lanes; ++lane)
            at.push_back(position_of(lane, found->second));
        for (instruction_ref in : ins.inputs())
            trace(in, at, 0);
    }
}

// cx_epilogue (lanes == 1) or cx_epilogue_vec (the `lanes` elements n .. n + lanes - 1 of row m,
// their accumulators in v[0 .. lanes)): computes every return at the anchor's positions and
// stores it. With lanes > 1, `part` load gives cx_epilogue_load, which only reads the vectors
// (load_input_vectors) into cx_loads, and finish gives cx_epilogue_vec_loaded, cx_epilogue_vec
// taking them from cx_loads; with lanes > 1 `fields` collects the vectors' types (the fields of
// cx_epilogue_loads).
std::string epilogue_function(const gemm_problem& p, const epilogue_module& e, unsigned lanes,
                              std::string* globals, vector_part part = vector_part::whole,
                              std::vector<std::string>* fields = nullptr) {
    const module& m = *e.mod;
    const instruction_ref anchor = m.parameters()[e.anchor_slot];
    const dims& lens = anchor->get_shape().lens();
    const auto returns = m.get_return()->inputs();
    const std::string name = lanes == 1                    ? "cx_epilogue"
                             : part == vector_part::load   ? "cx_epilogue_load"
                             : part == vector_part::finish ? "cx_epilogue_vec_loaded"
                                                           : "cx_epilogue_vec";

    index::kernel_writer w(index::index_type_for(m, e.inputs, e.outputs));
    const std::string& it = w.index_type();
    index::value_builder values(w, m, e.inputs, name);
    w.line("const " + it + " cx_eb = (" + it + ")b, cx_em = (" + it + ")m, cx_en = (" + it + ")n;");

    // The anchor's position: b over the batch axes, m over its axes (row-major), n.
    const anchor_axes a = axes_of(p, lens.size());
    std::vector<std::string> axes(lens.size(), "0");
    auto spread = [&](const std::vector<std::size_t>& which, const std::string& var) {
        dims sub;
        for (std::size_t i : which)
            sub.push_back(lens[i]);
        const auto parts = w.axes(index_expr::from_linear(sub, var));
        for (std::size_t i = 0; i < which.size(); ++i)
            axes[which[i]] = parts[i];
    };
    if (!a.b_axes.empty()) spread(a.b_axes, "cx_eb");
    spread(a.m_axes, "cx_em");
    std::string dense;
    if (a.n_axis + 1 == lens.size()) {
        // Row-major over the anchor's lens: ((b * M) + m) * N + n, so operands and outputs laid
        // out like the anchor are read and written without decomposing m.
        const auto N = static_cast<std::int64_t>(p.n * (p.conv ? p.conv->groups : 1));
        const std::string bm = a.b_axes.empty()
                                   ? "cx_em"
                                   : w.add(w.mul("cx_eb", static_cast<std::int64_t>(p.m)), "cx_em");
        dense = w.mul(bm, N);
    }
    const forward_paths f = trace_paths(m, anchor);
    const dtype anchor_type = anchor->get_shape().type();
    const std::string S = storage_type(anchor_type);

    // Per lane: the anchor's position, its value, the positions along each path (shared by
    // prefix, so values that came the same way are at one index_expr and the writer finds
    // them), and the layout ops' values (a layout op moves values without computing: its value
    // at its position is its input's at the input's).
    std::vector<std::map<std::vector<instruction_ref>, index_expr>> positions(lanes);
    // The longest prefix of `path` already known, then forward along the rest (a loop: a path
    // is as long as the layout chain).
    auto position_of = [&](unsigned lane,
                           const std::vector<instruction_ref>& path) -> const index_expr& {
        auto& memo = positions[lane];
        std::size_t known = path.size();
        auto found = memo.find(path);
        while (found == memo.end()) {
            CONFLUX_ASSERT(known > 0, "no position for the anchor of lane ", lane);
            --known;
            found = memo.find({path.begin(), path.begin() + std::ptrdiff_t(known)});
        }
        for (std::size_t k = known; k < path.size(); ++k) {
            index_expr next = forward(*path[k], found->second, w);
            found = memo.emplace(std::vector<instruction_ref>(path.begin(),
                                                              path.begin() + std::ptrdiff_t(k + 1)),
                                 std::move(next))
                        .first;
        }
        return found->second;
    };
    std::vector<std::string> lane_n(lanes);
    for (unsigned lane = 0; lane < lanes; ++lane) {
        std::vector<std::string> lane_axes = axes;
        lane_n[lane] = w.add("cx_en", static_cast<std::int64_t>(lane));
        lane_axes[a.n_axis] = lens[a.n_axis] == 1 ? "0" : lane_n[lane];
        index_expr at = index_expr::from_axes(lens, lane_axes);
        if (!dense.empty()) {
            at.dense = w.add(dense, lane_n[lane]);
            for (auto st : index::row_major_strides(lens))
                at.dense_strides.push_back(static_cast<std::size_t>(st));
        }
        positions[lane].emplace(std::vector<instruction_ref>{}, at);
        const std::string value = "cx_anchor" + std::to_string(lane);
        if (part != vector_part::load)
            w.line("const " + S + " " + value + " = cx_narrow<" + S + ">(v" +
                   (lanes == 1 ? "" : "[" + std::to_string(lane) + "]") + ");");
        w.remember_value(anchor, at.key(), value);
    }
    std::vector<std::string> unrecorded;
    if (lanes > 1)
        load_input_vectors(m, e, f, lane_n, position_of, part, fields ? fields : &unrecorded, w);
    // A load part computes and stores nothing.
    const std::size_t computed = part == vector_part::load ? 0 : lanes;
    for (unsigned lane = 0; lane < computed; ++lane) {
        for (const instruction& ins : m) {
            auto found = f.path.find(&ins);
            if (found == f.path.end() || !ins.get_operator().traits().layout_only) continue;
            const instruction_ref in = ins.inputs().front();
            const std::string v = values.value(in, position_of(lane, f.path.at(in)));
            w.remember_value(&ins, position_of(lane, found->second).key(), v);
        }
    }
    for (std::size_t r = 0; r < (computed == 0 ? 0 : returns.size()); ++r) {
        const auto& path = f.path.at(returns[r]);
        const shape& out = e.outputs[r];
        const std::string o = "out" + std::to_string(r);
        if (lanes > 1 && stores_vectors(p, lens, path, out, lanes)) {
            // At most 16 bytes per store: eight f32 results of an f16 product (LLaMA's logits)
            // are two stores, not eight 4-byte ones a lane group apart.
            const std::size_t piece_bytes = std::min<std::size_t>(lanes * size_of(out.type()), 16);
            const auto per_piece = static_cast<unsigned>(piece_bytes / size_of(out.type()));
            for (unsigned first = 0; first < lanes; first += per_piece) {
                const std::string u = w.fresh("cx_pack");
                w.line("union { " + std::string(vector_type(piece_bytes)) + " u; " +
                       storage_type(out.type()) + " s[" + std::to_string(per_piece) + "]; } " + u +
                       ";");
                for (unsigned lane = first; lane < first + per_piece; ++lane)
                    w.line(u + ".s[" + std::to_string(lane - first) +
                           "] = " + values.value(returns[r], position_of(lane, path)) + ";");
                w.line("*reinterpret_cast<" + std::string(vector_type(piece_bytes)) + "*>(&" + o +
                       "[" + w.offset(position_of(first, path), out) + "]) = " + u + ".u;");
            }
            continue;
        }
        for (unsigned lane = 0; lane < lanes; ++lane) {
            const index_expr& pos = position_of(lane, path);
            const std::string v = values.value(returns[r], pos);
            w.line(o + "[" + w.offset(pos, out) + "] = " + v + ";");
        }
    }

    std::string signature;
    for (std::size_t i = 0; i < e.inputs.size(); ++i)
        if (i != e.anchor_slot)
            signature += ", const " + storage_type(e.inputs[i].type()) + "* __restrict__ in" +
                         std::to_string(i);
    for (std::size_t r = 0; r < e.outputs.size(); ++r)
        signature +=
            ", " + storage_type(e.outputs[r].type()) + "* __restrict__ out" + std::to_string(r);
    *globals += values.globals();
    const std::string acc = gemm_accumulator_type(p.type);
    // The anchor's slot has no pointer: its value comes in v, and a load of it would not
    // compile, so a position the analysis missed cannot read garbage.
    const std::string first = lanes == 1                  ? acc + " v"
                              : part == vector_part::load ? "cx_epilogue_loads& cx_loads"
                              : part == vector_part::finish
                                  ? "const " + acc + "* v, const cx_epilogue_loads& cx_loads"
                                  : "const " + acc + "* v";
    return "__device__ __forceinline__ void " + name + "(" + first +
           ", long long b, long long m, long long n" + signature + ") {\n" + w.body() + "}\n";
}

} // namespace

gemm_epilogue fused_epilogue(const gemm_problem& p, const epilogue_module& e) {
    const epilogue_shape shape_info = analyse_epilogue(p, e);
    CONFLUX_ASSERT(shape_info.unsupported.empty(), "fused_epilogue: ", shape_info.unsupported);
    gemm_epilogue g;
    for (std::size_t i = 0; i < e.inputs.size(); ++i) {
        if (i == e.anchor_slot) continue;
        g.parameters.push_back("const " + storage_type(e.inputs[i].type()) +
                               "* __restrict__ cx_epi_in" + std::to_string(i));
        g.arguments.push_back("cx_epi_in" + std::to_string(i));
    }
    g.inputs = g.parameters.size();
    for (std::size_t r = 0; r < e.outputs.size(); ++r) {
        g.parameters.push_back(storage_type(e.outputs[r].type()) + "* __restrict__ cx_epi_out" +
                               std::to_string(r));
        g.arguments.push_back("cx_epi_out" + std::to_string(r));
    }
    std::string globals;
    const std::string scalar = epilogue_function(p, e, 1, &globals);
    std::string vector;
    if (shape_info.walk == store_walk::n_major && shape_info.lanes > 1) {
        std::vector<std::string> fields;
        vector = epilogue_function(p, e, shape_info.lanes, &globals, vector_part::whole, &fields);
        g.lanes = shape_info.lanes;
        // The walk can issue several chunks' reads before finishing any (batched_loads) when
        // the epilogue reads vectors of other tensors.
        if (!fields.empty()) {
            std::vector<std::string> loaded, finished;
            std::string unused;
            const std::string load =
                epilogue_function(p, e, shape_info.lanes, &unused, vector_part::load, &loaded);
            const std::string finish =
                epilogue_function(p, e, shape_info.lanes, &globals, vector_part::finish, &finished);
            CONFLUX_ASSERT(loaded == fields && finished == fields,
                           "fused_epilogue: the parts of cx_epilogue_vec read ", fields.size(),
                           ", ", loaded.size(), " and ", finished.size(), " vectors");
            std::string loads = "struct cx_epilogue_loads {\n";
            for (std::size_t i = 0; i < fields.size(); ++i)
                loads += "    " + fields[i] + " p" + std::to_string(i) + ";\n";
            vector += loads + "};\n" + load + finish;
            g.batched_loads = true;
        }
    }
    g.code = text::include_prelude({"math.cuh"}) + globals + scalar + vector;
    g.walk = shape_info.walk;
    g.walk_required = shape_info.walk_required;
    return g;
}

gemm_epilogue default_epilogue(const gemm_problem& p, const shape& output) {
    // The one-return module: the anchor's value stored through the output's strides.
    program holder;
    module& m = holder.main();
    const shape anchor{output.type(), output.lens()};
    m.add_return({m.add_parameter("anchor", anchor)});
    return fused_epilogue(p, epilogue_module{&m, 0, {anchor}, {output}});
}

} // namespace conflux::cuda
