#include "cuda/runtime/executable.hpp"

#include "conflux/ir/errors.hpp"
#include "cuda/runtime/cuda_check.hpp"
#include "cuda/runtime/loaded_kernels.hpp"

#include <cuda_runtime_api.h>

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

std::vector<argument> executable::run(const std::map<std::string, argument>& params,
                                      const run_options& options) {
    const lowered_program& p = program_;
    state& st = *state_;
    std::vector<device_buffer> param_buffers;
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
        param_buffers.push_back(std::move(buf));
    }
    std::vector<device_buffer> outputs;
    for (std::size_t o = 0; o < p.output_buffers.size(); ++o)
        outputs.emplace_back(p.buffers[p.output_buffers[o]].bytes);
    if (options.poison) {
        for (auto& b : outputs)
            if (b.size() != 0)
                cuda_check(cudaMemsetAsync(b.data(), 0xff, b.size(), st.s.get()),
                           "poisoning outputs");
        if (st.arena.size() != 0)
            cuda_check(cudaMemsetAsync(st.arena.data(), 0xff, st.arena.size(), st.s.get()),
                       "poisoning the arena");
    }

    auto address = [&](const operand& o) -> void* {
        std::byte* base = nullptr;
        switch (o.source) {
        case memory_source::parameter:
            base = static_cast<std::byte*>(param_buffers.at(o.index).data());
            break;
        case memory_source::literal:
            base = static_cast<std::byte*>(st.literals.at(o.index).data());
            break;
        case memory_source::buffer: {
            const buffer& b = p.buffers.at(o.index);
            base = b.is_output ? static_cast<std::byte*>(outputs.at(b.output_index).data())
                               : static_cast<std::byte*>(st.arena.data()) + p.arena_offset[o.index];
            break;
        }
        }
        return base == nullptr ? nullptr : base + o.byte_offset;
    };

    std::vector<void*> pointers;
    std::vector<void*> arg_slots;
    for (const kernel_step& step : p.steps) {
        pointers.clear();
        for (const operand& o : step.args)
            pointers.push_back(address(o));
        arg_slots.clear();
        for (void*& ptr : pointers)
            arg_slots.push_back(&ptr);
        try {
            launch(st.kernels[step.kernel], p.kernels[step.kernel].launch, arg_slots.data(),
                   st.s.get());
        } catch (const internal_error& e) {
            throw internal_error(std::string(e.what()) + ", for " + step.origin);
        }
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
            cuda_check(cudaMemcpy(host.data(), outputs[o].data(), bytes, cudaMemcpyDeviceToHost),
                       "download of output '" + p.output_names[o] + "'");
        results.push_back(std::move(host));
    }
    return results;
}

} // namespace conflux::cuda
