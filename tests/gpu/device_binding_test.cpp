// compiled_program::run_on_device on caller-owned device buffers: the results equal run()'s
// (bit for bit: the same kernels on the same values) and the reference target's, with and
// without the CUDA graph, on the program's stream and on the caller's, alternating between
// buffer sets (the graph cache serves each set its own graph, and evicts past 8 sets); the
// launches hold no copies (captured into the test's own graph they are kernel nodes only); host
// or overlapping buffers are user errors naming the tensor. Needs a GPU; without one main()
// says "no CUDA device" and CTest reports the test as skipped (SKIP_REGULAR_EXPRESSION).
#include "conflux/cuda/target.hpp"
#include "conflux/ir/output_comparison.hpp"
#include "conflux/ir/random_argument.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/ref/evaluate.hpp"
#include "conflux/util/errors.hpp"
#include "unit/test_helpers.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace conflux {
namespace {

using test::user_error_of;

void cuda_ok(cudaError_t e, const std::string& what) {
    if (e != cudaSuccess)
        throw std::runtime_error(what + ": " + cudaGetErrorName(e) + " " + cudaGetErrorString(e));
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// conv 3x3 (pad 1) + bias + relu stored transposed (NCHW -> NHWC) as output0, and the biased
// convolution before the relu as output1 (an extra return of the fused op).
void build(module& m) {
    auto x = m.add_parameter("x", shape{dtype::f32, {2, 8, 10, 10}});
    auto w = m.add_parameter("w", shape{dtype::f32, {16, 8, 3, 3}});
    auto b = m.add_parameter("b", shape{dtype::f32, {1, 16, 1, 1}});
    auto c = m.add_instruction(op::convolution{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1, false}, {x, w});
    auto bb = m.add_instruction(op::broadcast{{2, 16, 10, 10}}, {b});
    auto biased = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {c, bb});
    auto relu = m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {biased});
    m.add_return({m.add_instruction(op::transpose{{0, 2, 3, 1}}, {relu}), biased});
}

cuda::compiled_program compile_model() {
    program p;
    build(p.main());
    // Binding, not tuning: the heuristic's configs.
    cuda::compile_options o;
    o.tune = cuda::tune_mode::none;
    o.use_problem_cache = false;
    return cuda::compile(std::move(p), o);
}

ref::parameter_map random_inputs(const cuda::compiled_program& c, unsigned seed) {
    std::mt19937_64 rng(seed);
    ref::parameter_map params;
    for (std::size_t i = 0; i < c.parameter_names().size(); ++i)
        params[c.parameter_names()[i]] = random_argument(c.parameter_shapes()[i], rng);
    return params;
}

// cudaMalloc (or cudaMallocManaged) memory, freed with the object.
class device_memory {
public:
    device_memory(std::size_t bytes, bool managed) {
        const std::size_t n = std::max<std::size_t>(bytes, 1);
        cuda_ok(managed ? cudaMallocManaged(&data_, n, cudaMemAttachGlobal) : cudaMalloc(&data_, n),
                "allocating a test buffer");
    }
    ~device_memory() {
        if (data_ != nullptr) (void)cudaFree(data_);
    }
    device_memory(device_memory&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
    device_memory& operator=(device_memory&&) = delete;
    device_memory(const device_memory&) = delete;
    device_memory& operator=(const device_memory&) = delete;

    void* get() const { return data_; }

private:
    void* data_ = nullptr;
};

// One caller-owned set of every input and output of the program, and the values it holds.
struct buffer_set {
    const cuda::compiled_program* compiled = nullptr;
    std::vector<device_memory> inputs, outputs;
    std::map<std::string, const void*> input_map;
    std::map<std::string, void*> output_map;
    ref::parameter_map values;
    std::vector<argument> want_run; // what run() returns for `values`
    std::vector<argument> want_ref; // what the reference target does

    buffer_set(cuda::compiled_program& c, unsigned seed, bool managed = false) : compiled(&c) {
        values = random_inputs(c, seed);
        want_run = c.run(values);
        program reference;
        build(reference.main());
        want_ref = ref::evaluate(reference, values);
        for (std::size_t i = 0; i < c.parameter_names().size(); ++i) {
            const std::string& name = c.parameter_names()[i];
            const argument& v = values.at(name);
            const std::size_t bytes = c.parameter_shapes()[i].bytes();
            EXPECT_EQ(v.get_shape(), c.parameter_shapes()[i]) << name;
            inputs.emplace_back(bytes, managed);
            input_map[name] = inputs.back().get();
            cuda_ok(cudaMemcpy(inputs.back().get(), v.data(), bytes, cudaMemcpyHostToDevice),
                    "uploading " + name);
        }
        for (std::size_t o = 0; o < c.output_names().size(); ++o) {
            outputs.emplace_back(c.output_shapes()[o].bytes(), managed);
            output_map[c.output_names()[o]] = outputs.back().get();
        }
        // The program's stream does not synchronise with the legacy default stream the copies
        // above used.
        cuda_ok(cudaDeviceSynchronize(), "uploading the inputs");
    }

    // Fills the outputs with 0xff bytes (NaN for f32), so a run that writes nothing fails.
    void poison() const {
        for (std::size_t o = 0; o < outputs.size(); ++o)
            cuda_ok(cudaMemset(outputs[o].get(), 0xff, compiled->output_shapes()[o].bytes()),
                    "poisoning an output");
        cuda_ok(cudaDeviceSynchronize(), "poisoning the outputs");
    }

    std::vector<argument> download() const {
        std::vector<argument> got;
        for (std::size_t o = 0; o < outputs.size(); ++o) {
            const shape& s = compiled->output_shapes()[o];
            argument host(s);
            cuda_ok(cudaMemcpy(host.data(), outputs[o].get(), s.bytes(), cudaMemcpyDeviceToHost),
                    "downloading " + compiled->output_names()[o]);
            got.push_back(std::move(host));
        }
        return got;
    }

    // The outputs equal run()'s byte for byte (the same kernels on the same values), and the
    // reference target's within the f32 tolerance.
    void expect_results(const std::string& label) const {
        const std::vector<argument> got = download();
        ASSERT_EQ(got.size(), want_run.size());
        ASSERT_EQ(got.size(), want_ref.size());
        for (std::size_t o = 0; o < got.size(); ++o) {
            const std::string& name = compiled->output_names()[o];
            const std::size_t bytes = compiled->output_shapes()[o].bytes();
            ASSERT_EQ(want_run[o].get_shape().bytes(), bytes);
            EXPECT_EQ(std::memcmp(got[o].data(), want_run[o].data(), bytes), 0)
                << label << ": output " << name << " differs from run()'s";
            const output_comparison cmp = compare_outputs(got[o], want_ref[o]);
            EXPECT_TRUE(cmp.passed) << label << ": output " << name << " rel rms "
                                    << cmp.relative_rms << " against the reference";
        }
    }
};

class cuda_stream {
public:
    cuda_stream() {
        cuda_ok(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "creating a stream");
    }
    ~cuda_stream() { (void)cudaStreamDestroy(s_); }
    cuda_stream(const cuda_stream&) = delete;
    cuda_stream& operator=(const cuda_stream&) = delete;
    cudaStream_t get() const { return s_; }

private:
    cudaStream_t s_ = nullptr;
};

TEST(DeviceBinding, RunsOnCallerBuffersLikeRunAndTheReference) {
    cuda::compiled_program c = compile_model();
    ASSERT_EQ(c.output_names().size(), 2u);
    std::deque<buffer_set> sets; // a deque: emplace_back never moves (or copies) a set
    sets.emplace_back(c, 1);
    sets.emplace_back(c, 2);
    // run() itself against the reference target, and the two sets' results apart, or
    // alternating between them would prove nothing.
    for (const buffer_set& set : sets)
        for (std::size_t o = 0; o < set.want_ref.size(); ++o) {
            const output_comparison cmp = compare_outputs(set.want_run[o], set.want_ref[o]);
            EXPECT_TRUE(cmp.passed) << "run() output " << o << " rel rms " << cmp.relative_rms;
        }
    for (std::size_t o = 0; o < 2; ++o)
        EXPECT_GT(compare_outputs(sets[0].want_run[o], sets[1].want_run[o]).max_abs_diff, 0.1)
            << "output " << o;

    const cuda_stream stream;
    for (bool graph : {true, false})
        for (bool caller_stream : {false, true})
            for (int round = 0; round < 2; ++round)
                for (std::size_t k = 0; k < sets.size(); ++k) {
                    const std::string label = std::string(graph ? "graph" : "launch by launch") +
                                              (caller_stream ? ", caller's stream" : "") +
                                              ", round " + std::to_string(round) + ", set " +
                                              std::to_string(k);
                    const buffer_set& set = sets[k];
                    set.poison();
                    cuda::device_run_options options;
                    options.cuda_graph = graph;
                    if (caller_stream) options.stream = stream.get();
                    ASSERT_NO_THROW(c.run_on_device(set.input_map, set.output_map, options))
                        << label;
                    if (caller_stream)
                        cuda_ok(cudaStreamSynchronize(stream.get()), "synchronising " + label);
                    set.expect_results(label);
                }
}

TEST(DeviceBinding, MoreBufferSetsThanTheGraphCacheHoldsStayCorrect) {
    cuda::compiled_program c = compile_model();
    std::deque<buffer_set> sets;
    for (unsigned seed = 10; seed < 20; ++seed) // more than the 8 graphs kept
        sets.emplace_back(c, seed);
    for (int round = 0; round < 3; ++round)
        for (std::size_t k = 0; k < sets.size(); ++k) {
            const std::string label =
                "round " + std::to_string(round) + ", set " + std::to_string(k);
            sets[k].poison();
            ASSERT_NO_THROW(c.run_on_device(sets[k].input_map, sets[k].output_map)) << label;
            sets[k].expect_results(label);
        }
    // Managed memory is bound like device memory.
    const buffer_set managed(c, 30, true);
    managed.poison();
    ASSERT_NO_THROW(c.run_on_device(managed.input_map, managed.output_map));
    managed.expect_results("managed memory");
}

// Launched launch by launch into a stream the test captures, the run is kernel nodes only: the
// kernels read and write the caller's buffers, nothing is copied in or out. The graph the test
// captured then runs on its own and gives run()'s results.
TEST(DeviceBinding, TheLaunchesHoldNoCopies) {
    cuda::compiled_program c = compile_model();
    const buffer_set set(c, 3);
    set.poison();
    const cuda_stream stream;
    // Global: the strictest mode, as a framework capturing its own graph would use.
    cuda_ok(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeGlobal), "begin capture");
    cudaGraph_t graph = nullptr;
    try {
        c.run_on_device(set.input_map, set.output_map,
                        {.stream = stream.get(), .cuda_graph = false});
    } catch (...) {
        (void)cudaStreamEndCapture(stream.get(), &graph);
        if (graph != nullptr) (void)cudaGraphDestroy(graph);
        throw;
    }
    cuda_ok(cudaStreamEndCapture(stream.get(), &graph), "end capture");
    std::size_t n = 0;
    cuda_ok(cudaGraphGetNodes(graph, nullptr, &n), "counting the graph's nodes");
    std::vector<cudaGraphNode_t> nodes(n);
    cuda_ok(cudaGraphGetNodes(graph, nodes.data(), &n), "listing the graph's nodes");
    EXPECT_EQ(n, c.stats().launches);
    for (std::size_t i = 0; i < n; ++i) {
        cudaGraphNodeType type{};
        cuda_ok(cudaGraphNodeGetType(nodes[i], &type), "a node's type");
        EXPECT_EQ(type, cudaGraphNodeTypeKernel) << "node " << i << " is not a kernel launch";
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    cuda_ok(instantiated, "instantiating the captured graph");
    const cudaError_t launched = cudaGraphLaunch(exec, stream.get());
    const cudaError_t synchronised = cudaStreamSynchronize(stream.get());
    (void)cudaGraphExecDestroy(exec);
    cuda_ok(launched, "launching the captured graph");
    cuda_ok(synchronised, "running the captured graph");
    set.expect_results("the test's own graph");
}

TEST(DeviceBinding, HostOrOverlappingBuffersAreUserErrorsNamingTheTensor) {
    cuda::compiled_program c = compile_model();
    const buffer_set set(c, 4);
    auto error = [&](const std::map<std::string, const void*>& in,
                     const std::map<std::string, void*>& out) {
        return user_error_of([&] { c.run_on_device(in, out); });
    };
    // Ordinary host memory (malloc'd, so 16-byte aligned) for input 'x'.
    std::vector<float> host(c.parameter_shapes()[0].bytes() / sizeof(float));
    ASSERT_EQ(c.parameter_names()[0], "x");
    auto in = set.input_map;
    in["x"] = host.data();
    std::string e = error(in, set.output_map);
    EXPECT_TRUE(contains(e, "input 'x'") && contains(e, "host memory")) << e;
    // Pinned host memory for output 'output1'.
    void* pinned = nullptr;
    cuda_ok(cudaMallocHost(&pinned, c.output_shapes()[1].bytes()), "cudaMallocHost");
    auto out = set.output_map;
    out["output1"] = pinned;
    e = error(set.input_map, out);
    (void)cudaFreeHost(pinned);
    EXPECT_TRUE(contains(e, "output 'output1'") && contains(e, "pinned host memory")) << e;
    // An output over an input, and an output over another output.
    out = set.output_map;
    out["output1"] = const_cast<void*>(set.input_map.at("x"));
    e = error(set.input_map, out);
    EXPECT_TRUE(contains(e, "output 'output1'") && contains(e, "overlaps input 'x'")) << e;
    out["output1"] = static_cast<char*>(set.output_map.at("output0")) + 64;
    e = error(set.input_map, out);
    EXPECT_TRUE(contains(e, "output 'output1'") && contains(e, "overlaps output 'output0'")) << e;
    // An unknown name, and nothing run: the buffers still hold the poison; then a good run.
    set.poison();
    in = set.input_map;
    in["y"] = set.input_map.at("x");
    e = error(in, set.output_map);
    EXPECT_TRUE(contains(e, "unknown input 'y'")) << e;
    const std::vector<argument> untouched = set.download();
    const auto* first = reinterpret_cast<const unsigned char*>(untouched[0].data());
    EXPECT_EQ(first[0], 0xff) << "a rejected run wrote an output";
    ASSERT_NO_THROW(c.run_on_device(set.input_map, set.output_map));
    set.expect_results("after the errors");
}

} // namespace
} // namespace conflux

int main(int argc, char** argv) {
    if (conflux::cuda::available_devices() == 0) {
        std::cout << "no CUDA device (" << conflux::cuda::no_device_reason()
                  << "): the device binding tests are skipped\n";
        return 0;
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
