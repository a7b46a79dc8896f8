#include "cuda/runtime/executable.hpp"

#include "conflux/ir/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/loaded_kernels.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>

namespace conflux::cuda {

struct executable::state {
    stream s;
    std::vector<loaded_kernel> kernels;
    std::vector<device_buffer> literals;
    device_buffer arena;
};

executable::executable(const lowered_program& program, const std::vector<compiled_kernel>& binaries)
    : program_(program), state_(std::make_unique<state>()) {
    CONFLUX_ASSERT(binaries.size() == program.kernels.size(), "one binary per kernel expected");
    for (std::size_t i = 0; i < binaries.size(); ++i)
        state_->kernels.emplace_back(binaries[i], program.kernels[i].launch.shared_bytes);
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

struct executable::bindings {
    std::vector<device_buffer> parameters;
    std::vector<device_buffer> outputs;
    // Per step, the kernel's parameter values, and pointers to them (what cudaLaunchKernel
    // takes). The inner vectors are never resized after `slots` points into them.
    std::vector<std::vector<void*>> pointers;
    std::vector<std::vector<void*>> slots;
};

executable::bindings executable::bind(const std::map<std::string, argument>& params) {
    const lowered_program& p = program_;
    state& st = *state_;
    bindings b;
    for (std::size_t i = 0; i < p.parameter_names.size(); ++i) {
        const argument value =
            checked_parameter(params, p.parameter_names[i], p.parameter_shapes[i]);
        const std::size_t bytes = value.get_shape().bytes();
        device_buffer buf(bytes);
        if (bytes != 0)
            cuda_check(cudaMemcpyAsync(buf.data(), value.data(), bytes, cudaMemcpyHostToDevice,
                                       st.s.get()),
                       "upload of input '" + p.parameter_names[i] + "'");
        // The host value must outlive the asynchronous copy.
        cuda_check(cudaStreamSynchronize(st.s.get()),
                   "upload of input '" + p.parameter_names[i] + "'");
        b.parameters.push_back(std::move(buf));
    }
    for (std::size_t o = 0; o < p.output_buffers.size(); ++o)
        b.outputs.emplace_back(p.buffers[p.output_buffers[o]].bytes);

    auto address = [&](const operand& o) -> void* {
        std::byte* base = nullptr;
        switch (o.source) {
        case memory_source::parameter:
            base = static_cast<std::byte*>(b.parameters.at(o.index).data());
            break;
        case memory_source::literal:
            base = static_cast<std::byte*>(st.literals.at(o.index).data());
            break;
        case memory_source::buffer: {
            const buffer& buf = p.buffers.at(o.index);
            base = buf.is_output
                       ? static_cast<std::byte*>(b.outputs.at(buf.output_index).data())
                       : static_cast<std::byte*>(st.arena.data()) + p.arena_offset[o.index];
            break;
        }
        }
        return base == nullptr ? nullptr : base + o.byte_offset;
    };
    for (const kernel_step& step : p.steps) {
        std::vector<void*>& pointers = b.pointers.emplace_back();
        for (const operand& o : step.args)
            pointers.push_back(address(o));
        std::vector<void*>& slots = b.slots.emplace_back();
        for (void*& ptr : pointers)
            slots.push_back(&ptr);
    }
    return b;
}

void executable::launch_step(bindings& b, std::size_t i) {
    const kernel_step& step = program_.steps[i];
    try {
        launch(state_->kernels[step.kernel], program_.kernels[step.kernel].launch,
               b.slots[i].data(), state_->s.get());
    } catch (const internal_error& e) {
        throw internal_error(std::string(e.what()) + ", for " + step.origin);
    }
}

std::vector<argument> executable::run(const std::map<std::string, argument>& params,
                                      const run_options& options) {
    const lowered_program& p = program_;
    state& st = *state_;
    bindings b = bind(params);
    if (options.poison) {
        for (auto& out : b.outputs)
            if (out.size() != 0)
                cuda_check(cudaMemsetAsync(out.data(), 0xff, out.size(), st.s.get()),
                           "poisoning outputs");
        if (st.arena.size() != 0)
            cuda_check(cudaMemsetAsync(st.arena.data(), 0xff, st.arena.size(), st.s.get()),
                       "poisoning the arena");
    }
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        launch_step(b, i);
        const kernel_step& step = p.steps[i];
        if (options.sync_each_step)
            cuda_check(cudaStreamSynchronize(st.s.get()),
                       "kernel " + p.kernels[step.kernel].entry + " for " + step.origin);
    }
    cuda_check(cudaStreamSynchronize(st.s.get()), "running the program");

    std::vector<argument> results;
    for (std::size_t o = 0; o < p.output_buffers.size(); ++o) {
        argument host(p.output_shapes[o]);
        const std::size_t bytes = p.buffers[p.output_buffers[o]].bytes;
        if (bytes != 0)
            cuda_check(cudaMemcpy(host.data(), b.outputs[o].data(), bytes, cudaMemcpyDeviceToHost),
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
    bindings b = bind(params);
    const std::size_t steps = p.steps.size(), reps = options.repetitions;
    // Per repetition a pair around the whole run, and a pair around each of its launches.
    event_pool run_events(2 * reps), step_events(2 * reps * steps);

    for (std::size_t w = 0; w < options.warmup; ++w)
        for (std::size_t i = 0; i < steps; ++i)
            launch_step(b, i);
    // Runs are queued back to back and synchronised once, so no run's time includes the host's
    // launch latency before its first kernel.
    for (std::size_t r = 0; r < reps; ++r) {
        cuda_check(cudaEventRecord(run_events[2 * r], st.s.get()), "recording a timing event");
        for (std::size_t i = 0; i < steps; ++i) {
            const std::size_t e = 2 * (r * steps + i);
            cuda_check(cudaEventRecord(step_events[e], st.s.get()), "recording a timing event");
            launch_step(b, i);
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
        cudaGraph_t graph = nullptr;
        cuda_check(cudaStreamBeginCapture(st.s.get(), cudaStreamCaptureModeThreadLocal),
                   "capturing the program into a CUDA graph");
        try {
            for (std::size_t i = 0; i < steps; ++i)
                launch_step(b, i);
        } catch (...) {
            (void)cudaStreamEndCapture(st.s.get(), &graph);
            if (graph != nullptr) (void)cudaGraphDestroy(graph);
            throw;
        }
        cuda_check(cudaStreamEndCapture(st.s.get(), &graph), "capturing the program");
        cudaGraphExec_t exec = nullptr;
        const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
        (void)cudaGraphDestroy(graph);
        cuda_check(instantiated, "instantiating the program's CUDA graph");
        struct exec_guard {
            cudaGraphExec_t e;
            ~exec_guard() { (void)cudaGraphExecDestroy(e); }
        } guard{exec};
        for (std::size_t w = 0; w < std::max<std::size_t>(options.warmup, 1); ++w)
            cuda_check(cudaGraphLaunch(exec, st.s.get()), "replaying the program's CUDA graph");
        for (std::size_t r = 0; r < reps; ++r) {
            cuda_check(cudaEventRecord(run_events[2 * r], st.s.get()), "recording a timing event");
            cuda_check(cudaGraphLaunch(exec, st.s.get()), "replaying the program's CUDA graph");
            cuda_check(cudaEventRecord(run_events[2 * r + 1], st.s.get()),
                       "recording a timing event");
        }
        cuda_check(cudaStreamSynchronize(st.s.get()), "profiling the program's CUDA graph");
        for (std::size_t r = 0; r < reps; ++r)
            times[r] = elapsed_ms(run_events[2 * r], run_events[2 * r + 1], "timing a replay");
        result.cuda_graph = true;
    }
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

} // namespace conflux::cuda
