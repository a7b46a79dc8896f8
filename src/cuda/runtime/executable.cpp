#include "cuda/runtime/executable.hpp"

#include "conflux/util/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/loaded_kernels.hpp"
#include "cuda/runtime/tensor_maps.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <utility>

namespace conflux::cuda {

// An instantiated CUDA graph of the program's launches, destroyed with its owner.
class graph_exec {
public:
    // Instantiates graph and destroys it (the exec keeps what it needs). A graph with no nodes
    // (every launch of the program is empty) gives an exec that launches nothing.
    explicit graph_exec(cudaGraph_t graph) {
        std::size_t nodes = 0;
        cudaError_t e = cudaGraphGetNodes(graph, nullptr, &nodes);
        if (e == cudaSuccess && nodes > 0) e = cudaGraphInstantiate(&exec_, graph, 0);
        (void)cudaGraphDestroy(graph);
        if (e != cudaSuccess) exec_ = nullptr;
        cuda_check(e, "instantiating the program's CUDA graph");
    }
    ~graph_exec() {
        if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_); // in flight: freed when done
    }
    graph_exec(graph_exec&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
    graph_exec& operator=(graph_exec&& other) noexcept {
        std::swap(exec_, other.exec_);
        return *this;
    }
    graph_exec(const graph_exec&) = delete;
    graph_exec& operator=(const graph_exec&) = delete;

    void launch(cudaStream_t s) const {
        if (exec_ != nullptr)
            cuda_check(cudaGraphLaunch(exec_, s), "replaying the program's CUDA graph");
    }

private:
    cudaGraphExec_t exec_ = nullptr;
};

namespace {

// run_on_device's graphs, one per set of bound addresses. A replay bakes in every kernel
// argument, so new addresses need either the existing exec patched (cudaGraphExecUpdate from a
// fresh capture, or cudaGraphExecKernelNodeSetParams on every kernel node that touches them) or
// an exec of their own. We keep an exec per address set, the least recently used evicted: a
// caller alternating between a few buffer sets (double buffering, a pool of request slots) then
// pays one cudaGraphLaunch per run and nothing else, where patching would cost host calls per
// kernel node at every switch, the very launch work the graph is there to save. A set seen for
// the first time costs a capture and an instantiation, once.
inline constexpr std::size_t graph_cache_capacity = 8;

// The device flag math.cuh's cx_gather_index raises.
constexpr const char* index_flag_name = "cx_index_out_of_range";

struct cached_graph {
    std::vector<const void*> addresses; // the parameters' then the outputs'
    graph_exec exec;
};

} // namespace

struct executable::device_copies {
    std::vector<device_buffer> parameters;
    std::vector<device_buffer> outputs;

    device_pointers pointers() const {
        device_pointers d;
        for (const device_buffer& b : parameters)
            d.parameters.push_back(b.data());
        for (const device_buffer& b : outputs)
            d.outputs.push_back(b.data());
        return d;
    }
};

struct executable::state {
    stream s;
    int device = 0; // where the kernels were loaded
    std::vector<loaded_kernel> kernels;
    // The cx_index_out_of_range flag of every kernel that reads gather indices from memory,
    // with the kernel's index in lowered_program::kernels.
    std::vector<std::pair<std::size_t, void*>> index_flags;
    std::vector<device_buffer> literals;
    device_buffer arena;
    // run()'s device copies of host parameters and its output buffers, made by the first run
    // and kept: every run then binds the same addresses, so its launches are captured into a
    // graph once and replayed after (a numpy caller's later runs neither allocate nor launch
    // kernel by kernel).
    std::unique_ptr<device_copies> run_memory;
    // Most recently used first, at most graph_cache_capacity. Declared last so that the execs
    // are destroyed before the kernels and the memory they refer to.
    std::list<cached_graph> graphs;
};

executable::executable(const lowered_program& program, const std::vector<compiled_kernel>& binaries)
    : program_(program), state_(std::make_unique<state>()) {
    CONFLUX_ASSERT(binaries.size() == program.kernels.size(), "one binary per kernel expected");
    cuda_check(cudaGetDevice(&state_->device), "query of the current device");
    for (std::size_t i = 0; i < binaries.size(); ++i) {
        state_->kernels.emplace_back(binaries[i], program.kernels[i].launch.shared_bytes);
        if (program.kernels[i].code.find("cx_gather_index(") != std::string::npos)
            state_->index_flags.emplace_back(i, state_->kernels.back().global(index_flag_name));
    }
    for (const argument& lit : program.literals) {
        const std::size_t bytes = lit.get_shape().bytes();
        device_buffer buf(bytes);
        if (bytes != 0)
            cuda_check(cudaMemcpy(buf.data(), lit.data(), bytes, cudaMemcpyHostToDevice),
                       "upload of a literal");
        state_->literals.push_back(std::move(buf));
    }
    state_->arena = device_buffer(program.plan.arena_bytes);
}

executable::~executable() = default;

void executable::check_index_errors() {
    std::string origins;
    for (const auto& [kernel, flag] : state_->index_flags) {
        unsigned raised = 0;
        cuda_check(cudaMemcpy(&raised, flag, sizeof raised, cudaMemcpyDeviceToHost),
                   "reading the index check of kernel " + program_.kernels[kernel].entry);
        if (raised == 0) continue;
        cuda_check(cudaMemset(flag, 0, sizeof raised),
                   "clearing the index check of kernel " + program_.kernels[kernel].entry);
        for (const kernel_step& step : program_.steps)
            if (step.kernel == kernel) origins += (origins.empty() ? "" : "; ") + step.origin;
    }
    CONFLUX_USER_CHECK(origins.empty(),
                       "an index read from the inputs (by a gather or scatter) is out of range "
                       "[-n, n) of its axis (",
                       origins, "); the outputs of this run are not valid");
}

namespace {

argument checked_parameter(const std::map<std::string, argument>& params, const std::string& name,
                           const shape& expected) {
    auto it = params.find(name);
    CONFLUX_USER_CHECK(it != params.end(), "no value given for input '", name, "'");
    const shape& s = it->second.get_shape();
    CONFLUX_USER_CHECK(s.type() == expected.type() && s.lens() == expected.lens(), "input '", name,
                       "' is ", to_string(s.as_standard()), " but the model expects ",
                       to_string(expected.as_standard()));
    // Kernels read parameters through the strides they were compiled for.
    if (s.strides() == expected.strides()) return it->second;
    CONFLUX_ASSERT(expected.standard(), "parameter '", name,
                   "' compiled with non-standard strides");
    return it->second.contiguous();
}

} // namespace

executable::device_copies executable::allocate_copies() const {
    const lowered_program& p = program_;
    device_copies copies;
    for (const shape& s : p.parameter_shapes)
        copies.parameters.emplace_back(s.bytes());
    for (std::size_t o = 0; o < p.output_buffers.size(); ++o)
        copies.outputs.emplace_back(p.buffers[p.output_buffers[o]].bytes);
    return copies;
}

void executable::copy_parameters(const device_copies& copies,
                                 const std::map<std::string, argument>& params) {
    const lowered_program& p = program_;
    const cudaStream_t s = state_->s.get();
    for (std::size_t i = 0; i < p.parameter_names.size(); ++i) {
        const argument value =
            checked_parameter(params, p.parameter_names[i], p.parameter_shapes[i]);
        const std::size_t bytes = value.get_shape().bytes();
        if (bytes != 0)
            cuda_check(cudaMemcpyAsync(copies.parameters[i].data(), value.data(), bytes,
                                       cudaMemcpyHostToDevice, s),
                       "upload of input '" + p.parameter_names[i] + "'");
        // The host value (a contiguous copy may be a temporary) must outlive the copy.
        cuda_check(cudaStreamSynchronize(s), "upload of input '" + p.parameter_names[i] + "'");
    }
}

executable::device_copies executable::upload(const std::map<std::string, argument>& params) {
    device_copies copies = allocate_copies();
    copy_parameters(copies, params);
    return copies;
}

struct executable::bindings {
    // Per step, the kernel's parameter values, and pointers to them (what cudaLaunchKernel
    // takes). The inner vectors are never resized after `slots` points into them.
    std::vector<std::vector<void*>> pointers;
    // Per step, the TMA tensor maps its kernel takes after the pointers (encoded from them).
    std::vector<std::vector<encoded_tensor_map>> maps;
    std::vector<std::vector<void*>> slots;
};

executable::bindings executable::bind(const device_pointers& memory) const {
    const lowered_program& p = program_;
    const state& st = *state_;
    CONFLUX_ASSERT(memory.parameters.size() == p.parameter_names.size() &&
                       memory.outputs.size() == p.output_buffers.size(),
                   "one address per parameter and output expected");
    auto address = [&](const operand& o) -> void* {
        std::byte* base = nullptr;
        switch (o.source) {
        case memory_source::parameter:
            // Kernels only read their inputs; cudaLaunchKernel takes every argument as void*.
            base = static_cast<std::byte*>(const_cast<void*>(memory.parameters.at(o.index)));
            break;
        case memory_source::literal:
            base = static_cast<std::byte*>(st.literals.at(o.index).data());
            break;
        case memory_source::buffer: {
            const buffer& buf = p.buffers.at(o.index);
            base = buf.is_output
                       ? static_cast<std::byte*>(memory.outputs.at(buf.output_index))
                       : static_cast<std::byte*>(st.arena.data()) + p.arena_offset[o.index];
            break;
        }
        }
        return base == nullptr ? nullptr : base + o.byte_offset;
    };
    bindings b;
    for (const kernel_step& step : p.steps) {
        std::vector<void*>& pointers = b.pointers.emplace_back();
        for (const operand& o : step.args)
            pointers.push_back(address(o));
        std::vector<encoded_tensor_map>& maps =
            b.maps.emplace_back(encode_tensor_maps(p.kernels[step.kernel], pointers));
        std::vector<void*>& slots = b.slots.emplace_back();
        for (void*& ptr : pointers)
            slots.push_back(&ptr);
        for (encoded_tensor_map& map : maps)
            slots.push_back(&map);
    }
    return b;
}

void executable::launch_step(bindings& b, std::size_t i, cudaStream_t s) {
    const kernel_step& step = program_.steps[i];
    try {
        launch(state_->kernels[step.kernel], step.launch, b.slots[i].data(), s);
    } catch (const internal_error& e) {
        throw internal_error(std::string(e.what()) + ", for " + step.origin);
    }
}

void executable::launch_all(bindings& b, cudaStream_t s) {
    for (std::size_t i = 0; i < program_.steps.size(); ++i)
        launch_step(b, i, s);
}

graph_exec executable::capture(bindings& b) {
    // Capturing records the launches without running them, so the program's own stream serves
    // whatever stream the graph is replayed on (and the caller's may be capturing already).
    const cudaStream_t s = state_->s.get();
    cuda_check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal),
               "capturing the program into a CUDA graph");
    cudaGraph_t graph = nullptr;
    try {
        launch_all(b, s);
    } catch (...) {
        (void)cudaStreamEndCapture(s, &graph);
        if (graph != nullptr) (void)cudaGraphDestroy(graph);
        throw;
    }
    cuda_check(cudaStreamEndCapture(s, &graph), "capturing the program");
    return graph_exec(graph);
}

const graph_exec& executable::graph_for(const device_pointers& memory) {
    std::vector<const void*> addresses = memory.parameters;
    addresses.insert(addresses.end(), memory.outputs.begin(), memory.outputs.end());
    std::list<cached_graph>& graphs = state_->graphs;
    for (auto it = graphs.begin(); it != graphs.end(); ++it)
        if (it->addresses == addresses) {
            graphs.splice(graphs.begin(), graphs, it);
            return graphs.front().exec;
        }
    bindings b = bind(memory);
    graphs.push_front({std::move(addresses), capture(b)});
    if (graphs.size() > graph_cache_capacity) graphs.pop_back();
    return graphs.front().exec;
}

std::vector<argument> executable::run(const std::map<std::string, argument>& params,
                                      const run_options& options) {
    const lowered_program& p = program_;
    state& st = *state_;
    if (!st.run_memory) st.run_memory = std::make_unique<device_copies>(allocate_copies());
    const device_copies& copies = *st.run_memory;
    copy_parameters(copies, params);
    if (!options.poison && !options.sync_each_step) {
        // The same addresses every run: one graph, captured by the first run, replayed after.
        graph_for(copies.pointers()).launch(st.s.get());
        return finish_run(copies);
    }
    bindings b = bind(copies.pointers());
    if (options.poison) {
        for (const auto& out : copies.outputs)
            if (out.size() != 0)
                cuda_check(cudaMemsetAsync(out.data(), 0xff, out.size(), st.s.get()),
                           "poisoning outputs");
        if (st.arena.size() != 0)
            cuda_check(cudaMemsetAsync(st.arena.data(), 0xff, st.arena.size(), st.s.get()),
                       "poisoning the arena");
    }
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        launch_step(b, i, st.s.get());
        const kernel_step& step = p.steps[i];
        if (options.sync_each_step)
            cuda_check(cudaStreamSynchronize(st.s.get()),
                       "kernel " + p.kernels[step.kernel].entry + " for " + step.origin);
    }
    return finish_run(copies);
}

std::vector<argument> executable::finish_run(const device_copies& copies) {
    const lowered_program& p = program_;
    cuda_check(cudaStreamSynchronize(state_->s.get()), "running the program");
    check_index_errors();
    std::vector<argument> results;
    for (std::size_t o = 0; o < p.output_buffers.size(); ++o) {
        argument host(p.output_shapes[o]);
        const std::size_t bytes = p.buffers[p.output_buffers[o]].bytes;
        if (bytes != 0)
            cuda_check(
                cudaMemcpy(host.data(), copies.outputs[o].data(), bytes, cudaMemcpyDeviceToHost),
                "download of output '" + p.output_names[o] + "'");
        results.push_back(std::move(host));
    }
    return results;
}

namespace {

// CUDA events created up front (so the timed loop allocates nothing), destroyed together.
class event_pool {
public:
    explicit event_pool(std::size_t n) {
        events_.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            cudaEvent_t e = nullptr;
            cuda_check(cudaEventCreate(&e), "creating a timing event");
            events_.push_back(e);
        }
    }
    ~event_pool() {
        for (cudaEvent_t e : events_)
            (void)cudaEventDestroy(e); // nothing to do about a failure while unwinding
    }
    event_pool(const event_pool&) = delete;
    event_pool& operator=(const event_pool&) = delete;

    cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

private:
    std::vector<cudaEvent_t> events_;
};

double elapsed_ms(cudaEvent_t start, cudaEvent_t stop, const std::string& what) {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start, stop), what);
    return ms;
}

// Linear interpolation between the closest ranks (numpy's default); q in [0, 1].
double percentile(std::vector<double> values, double q) {
    std::sort(values.begin(), values.end());
    const double rank = q * double(values.size() - 1);
    const auto lo = static_cast<std::size_t>(rank);
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (values[hi] - values[lo]) * (rank - double(lo));
}

} // namespace

profile_result executable::profile(const std::map<std::string, argument>& params,
                                   const profile_options& options) {
    CONFLUX_USER_CHECK(options.repetitions > 0, "profiling needs at least one repetition");
    const lowered_program& p = program_;
    state& st = *state_;
    const device_copies copies = upload(params);
    bindings b = bind(copies.pointers());
    const std::size_t steps = p.steps.size(), reps = options.repetitions;
    // Per repetition a pair around the whole run, and a pair around each of its launches.
    event_pool run_events(2 * reps), step_events(2 * reps * steps);

    for (std::size_t w = 0; w < options.warmup; ++w)
        launch_all(b, st.s.get());
    // Runs are queued back to back and synchronised once, so no run's time includes the host's
    // launch latency before its first kernel.
    for (std::size_t r = 0; r < reps; ++r) {
        cuda_check(cudaEventRecord(run_events[2 * r], st.s.get()), "recording a timing event");
        for (std::size_t i = 0; i < steps; ++i) {
            const std::size_t e = 2 * (r * steps + i);
            cuda_check(cudaEventRecord(step_events[e], st.s.get()), "recording a timing event");
            launch_step(b, i, st.s.get());
            cuda_check(cudaEventRecord(step_events[e + 1], st.s.get()), "recording a timing event");
        }
        cuda_check(cudaEventRecord(run_events[2 * r + 1], st.s.get()), "recording a timing event");
    }
    cuda_check(cudaStreamSynchronize(st.s.get()), "profiling the program");

    profile_result result;
    result.repetitions = reps;
    std::vector<double> times(reps);
    for (std::size_t r = 0; r < reps; ++r)
        times[r] = elapsed_ms(run_events[2 * r], run_events[2 * r + 1], "timing a run");
    result.eager_median_ms = percentile(times, 0.5);
    if (options.cuda_graph && steps > 0) {
        // The same launches captured once into a graph, then replayed: one launch per run.
        const graph_exec exec = capture(b);
        for (std::size_t w = 0; w < std::max<std::size_t>(options.warmup, 1); ++w)
            exec.launch(st.s.get());
        for (std::size_t r = 0; r < reps; ++r) {
            cuda_check(cudaEventRecord(run_events[2 * r], st.s.get()), "recording a timing event");
            exec.launch(st.s.get());
            cuda_check(cudaEventRecord(run_events[2 * r + 1], st.s.get()),
                       "recording a timing event");
        }
        cuda_check(cudaStreamSynchronize(st.s.get()), "profiling the program's CUDA graph");
        for (std::size_t r = 0; r < reps; ++r)
            times[r] = elapsed_ms(run_events[2 * r], run_events[2 * r + 1], "timing a replay");
        result.cuda_graph = true;
    }
    check_index_errors();
    result.median_ms = percentile(times, 0.5);
    result.p90_ms = percentile(times, 0.9);
    result.p99_ms = percentile(times, 0.99);
    for (std::size_t i = 0; i < steps; ++i) {
        const kernel_step& step = p.steps[i];
        const std::string& entry = p.kernels[step.kernel].entry;
        for (std::size_t r = 0; r < reps; ++r) {
            const std::size_t e = 2 * (r * steps + i);
            times[r] = elapsed_ms(step_events[e], step_events[e + 1],
                                  "timing kernel " + entry + " for " + step.origin);
        }
        result.steps.push_back({entry, step.origin, step.gemm, percentile(times, 0.5)});
    }
    return result;
}

namespace {

// One tensor a run_on_device call binds, for its checks and messages.
struct bound_tensor {
    std::string what; // "input 'x'", "output 'y'"
    const void* address;
    std::size_t bytes;
};

// Finds `name` in `given`, checking the pointer as far as it can be checked without a GPU.
template <class Pointer>
Pointer bound_pointer(const std::map<std::string, Pointer>& given, const std::string& kind,
                      const std::string& name, std::size_t bytes,
                      std::vector<bound_tensor>& bound) {
    const std::string what = kind + " '" + name + "'";
    auto it = given.find(name);
    CONFLUX_USER_CHECK(it != given.end(), "no device pointer given for ", what);
    const void* address = it->second;
    CONFLUX_USER_CHECK(bytes == 0 || address != nullptr, what, " is a null pointer but holds ",
                       bytes, " bytes");
    CONFLUX_USER_CHECK(
        bytes == 0 || reinterpret_cast<std::uintptr_t>(address) % device_pointer_alignment == 0,
        what, " at ", address, " is not aligned to ", device_pointer_alignment,
        " bytes (the generated kernels' widest access; cudaMalloc gives 256)");
    bound.push_back({what, address, bytes});
    return it->second;
}

template <class Pointer>
void check_names_known(const std::map<std::string, Pointer>& given, const std::string& kind,
                       const std::vector<std::string>& names) {
    for (const auto& entry : given) {
        if (std::find(names.begin(), names.end(), entry.first) != names.end()) continue;
        std::string known;
        for (const std::string& n : names)
            known += (known.empty() ? "'" : ", '") + n + "'";
        throw_user_error("unknown ", kind, " '", entry.first, "' (the program's ", kind,
                         "s: ", known.empty() ? "none" : known, ")");
    }
}

std::string byte_range(const bound_tensor& t) {
    return detail::concat("[", t.address, ", +", t.bytes, " bytes)");
}

// A user_error unless `address` is device memory of `device` or managed memory.
void check_device_memory(const std::string& what, const void* address, int device) {
    cudaPointerAttributes attributes{};
    const cudaError_t e = cudaPointerGetAttributes(&attributes, address);
    if (e == cudaErrorInvalidValue) {
        // The runtime knows nothing of the address (older drivers say so instead of answering
        // cudaMemoryTypeUnregistered). Reported here, so cleared for later calls.
        (void)cudaGetLastError();
        throw_user_error(what, " at ", address, " is not device memory (", cudaGetErrorName(e),
                         ": ", cudaGetErrorString(e), ")");
    }
    cuda_check(e, "query of the memory of " + what);
    switch (attributes.type) {
    case cudaMemoryTypeManaged:
        return;
    case cudaMemoryTypeDevice:
        CONFLUX_USER_CHECK(attributes.device == device, what, " at ", address,
                           " is memory of device ", attributes.device,
                           " but the program runs on device ", device);
        return;
    case cudaMemoryTypeHost:
        throw_user_error(what, " at ", address,
                         " is pinned host memory, not device memory; run_on_device binds "
                         "device buffers (cudaMalloc), run() takes host values");
    case cudaMemoryTypeUnregistered:
        break;
    }
    throw_user_error(what, " at ", address,
                     " is host memory, not device memory; run_on_device binds device buffers "
                     "(cudaMalloc), run() takes host values");
}

// Puts the calling thread in relaxed stream-capture mode while it lives: a caller capturing
// run_on_device's launches into a graph of its own (in the global or thread-local mode) must
// not have the pointer queries refused as potentially unsafe during capture.
class relaxed_capture_scope {
public:
    relaxed_capture_scope() {
        cuda_check(cudaThreadExchangeStreamCaptureMode(&saved_),
                   "setting the thread's stream capture mode");
    }
    ~relaxed_capture_scope() { (void)cudaThreadExchangeStreamCaptureMode(&saved_); }
    relaxed_capture_scope(const relaxed_capture_scope&) = delete;
    relaxed_capture_scope& operator=(const relaxed_capture_scope&) = delete;

private:
    cudaStreamCaptureMode saved_ = cudaStreamCaptureModeRelaxed;
};

} // namespace

device_pointers resolve_device_pointers(const lowered_program& program,
                                        const std::map<std::string, const void*>& inputs,
                                        const std::map<std::string, void*>& outputs) {
    const lowered_program& p = program;
    check_names_known(inputs, "input", p.parameter_names);
    check_names_known(outputs, "output", p.output_names);
    device_pointers memory;
    std::vector<bound_tensor> bound;
    for (std::size_t i = 0; i < p.parameter_names.size(); ++i)
        memory.parameters.push_back(bound_pointer(inputs, "input", p.parameter_names[i],
                                                  p.parameter_shapes[i].bytes(), bound));
    for (std::size_t o = 0; o < p.output_names.size(); ++o)
        memory.outputs.push_back(bound_pointer(outputs, "output", p.output_names[o],
                                               p.buffers[p.output_buffers[o]].bytes, bound));
    // Every output against every tensor before it (the inputs, then the earlier outputs); inputs
    // are only read, so they may share memory with each other.
    auto begin = [](const bound_tensor& t) { return reinterpret_cast<std::uintptr_t>(t.address); };
    for (std::size_t j = p.parameter_names.size(); j < bound.size(); ++j)
        for (std::size_t k = 0; k < j; ++k) {
            const bound_tensor &out = bound[j], &other = bound[k];
            const bool overlap = out.bytes != 0 && other.bytes != 0 &&
                                 begin(out) < begin(other) + other.bytes &&
                                 begin(other) < begin(out) + out.bytes;
            CONFLUX_USER_CHECK(!overlap, out.what, " ", byte_range(out), " overlaps ", other.what,
                               " ", byte_range(other),
                               "; an output must not share memory with an input or another output");
        }
    return memory;
}

void executable::run_on_device(const device_pointers& memory, const device_run_options& options) {
    const lowered_program& p = program_;
    state& st = *state_;
    {
        const relaxed_capture_scope relaxed;
        for (std::size_t i = 0; i < p.parameter_names.size(); ++i)
            if (p.parameter_shapes[i].bytes() != 0)
                check_device_memory("input '" + p.parameter_names[i] + "'", memory.parameters[i],
                                    st.device);
        for (std::size_t o = 0; o < p.output_names.size(); ++o)
            if (p.buffers[p.output_buffers[o]].bytes != 0)
                check_device_memory("output '" + p.output_names[o] + "'", memory.outputs[o],
                                    st.device);
    }
    const cudaStream_t s =
        options.stream != nullptr ? static_cast<cudaStream_t>(options.stream) : st.s.get();
    if (options.cuda_graph) {
        graph_for(memory).launch(s);
    } else {
        bindings b = bind(memory);
        launch_all(b, s);
    }
    // On the caller's stream the call does not wait, so the index check is left to the caller's
    // next synchronous run (see device_run_options).
    if (options.stream == nullptr) {
        cuda_check(cudaStreamSynchronize(s), "running the program");
        check_index_errors();
    }
}

} // namespace conflux::cuda
