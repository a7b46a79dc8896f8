// Generated kernels compiled as host C++ with kernel_emulation_shim.hpp and run over their launch
// grid (each block's threads as fibers, so block barriers and warp shuffles work), against the
// reference target on the same input: the numbers CI can check without a GPU. Kernels with
// inline PTX (tensor cores, cp.async, ldmatrix) cannot run here. The kernels of a test go
// through the host compiler the project was built with (CONFLUX_HOST_CXX) into one shared
// library that the test loads. The GPU runs the same source through NVRTC; where the two
// differ (PTX conversions, the intrinsics) the shim follows the reference target's rules, and a
// vector access not aligned to its size, which x86 would allow, is reported as the GPU's fault.
#include "conflux/cuda/target.hpp"
#include "conflux/ir/output_comparison.hpp"
#include "conflux/ir/random_argument.hpp"
#include "conflux/ops/convolution.hpp"
#include "conflux/ops/data_movement.hpp"
#include "conflux/ops/elementwise.hpp"
#include "conflux/ops/pooling.hpp"
#include "conflux/ops/views.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/ref/evaluate.hpp"
#include "cuda/codegen/gemm/depthwise_kernel.hpp"
#include "cuda/codegen/gemm/fused_epilogue.hpp"
#include "cuda/codegen/gemm/gemm_problem.hpp"
#include "cuda/codegen/generator.hpp"
#include "cuda/lower/lower.hpp"
#include "data_movement_cases.hpp"
#include "elementwise_cases.hpp"
#include "fused_patterns.hpp"
#include "normalisation_cases.hpp"
#include "reduction_cases.hpp"
#include "resize_cases.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <unistd.h>

namespace conflux::cuda {
namespace cuda_kernel_emulation_test {

namespace fs = std::filesystem;

// A directory of this process's, removed at exit.
const fs::path& work_directory() {
    static const fs::path dir = [] {
        fs::path d =
            fs::temp_directory_path() / ("conflux_emulation_" + std::to_string(::getpid()));
        fs::create_directories(d);
        // The kernels include "conflux/<header>": the device headers themselves.
        fs::create_directory_symlink(fs::path(CONFLUX_SOURCE_DIR) / "src/cuda/kernels",
                                     d / "conflux");
        std::atexit([] {
            fs::remove_all(fs::temp_directory_path() /
                           ("conflux_emulation_" + std::to_string(::getpid())));
        });
        return d;
    }();
    return dir;
}

// Kernels compiled together for the host into one shared library (one compiler run for many
// kernels): each kernel's text after its #include lines goes into a namespace of its own, so
// their cx_index typedefs do not meet; the headers are included once.
class emulated_kernels {
public:
    explicit emulated_kernels(const std::vector<kernel_source>& kernels) {
        static int serial = 0;
        const fs::path dir = work_directory();
        const std::string name = "batch_" + std::to_string(serial++);
        const fs::path source = dir / (name + ".cpp"), library = dir / (name + ".so");
        std::ofstream out(source);
        // Every header any of the kernels includes, once, before them.
        std::set<std::string> includes;
        for (const kernel_source& k : kernels) {
            std::istringstream lines(k.code);
            for (std::string line; std::getline(lines, line);)
                if (line.starts_with("#include") && includes.insert(line).second)
                    out << line << "\n";
        }
        for (std::size_t i = 0; i < kernels.size(); ++i) {
            out << "namespace cx_kernel_" << i << " {\n";
            std::istringstream lines(kernels[i].code);
            // The dynamic shared memory array points at the emulator's block buffer.
            static const std::regex dynamic_shared(
                R"(extern __shared__ __align__\(\d+\) ([\w:]+) (\w+)\[\];)");
            for (std::string line; std::getline(lines, line);)
                if (!line.starts_with("#include"))
                    out << std::regex_replace(
                               line, dynamic_shared,
                               "$1* const $2 = reinterpret_cast<$1*>(cx_emu.dynamic_shared);")
                        << "\n";
            out << "}\nextern \"C\" void cx_call_" << i
                << "(void* const* args) { cx_emulation_call(&cx_kernel_" << i
                << "::" << kernels[i].entry << ", args); }\n";
            index_[kernels[i].entry] = i;
        }
        out.close();
        const fs::path log = dir / (name + ".log");
        const std::string command =
            std::string(CONFLUX_HOST_CXX) + " -std=c++20 -O1 -ffp-contract=off -w -shared -fPIC" +
            " -include " + CONFLUX_SOURCE_DIR + "/tests/unit/kernel_emulation_shim.hpp -I" +
            dir.string() + " -I" + CONFLUX_SOURCE_DIR + "/include " + source.string() + " -o " +
            library.string() + " 2>" + log.string();
        if (std::system(command.c_str()) != 0) {
            std::ifstream in(log);
            error_ = "host compile failed: " + std::string(std::istreambuf_iterator<char>(in), {});
            return;
        }
        handle_ = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_ == nullptr) error_ = std::string("dlopen: ") + ::dlerror();
    }
    ~emulated_kernels() {
        if (handle_ != nullptr) ::dlclose(handle_);
    }
    emulated_kernels(const emulated_kernels&) = delete;
    emulated_kernels& operator=(const emulated_kernels&) = delete;

    // Why the library did not build or load; empty when it did.
    const std::string& error() const { return error_; }

    // Runs k's grid (`l`, else its own), one thread after another; `pointers` are its arguments
    // in order (inputs, then outputs). Empty when it ran, else why not.
    std::string run(const kernel_source& k, const std::vector<void*>& pointers) const {
        return run(k, pointers, k.launch);
    }
    std::string run(const kernel_source& k, const std::vector<void*>& pointers,
                    const launch_dims& l) const {
        if (handle_ == nullptr) return error_;
        using run_fn = int (*)(void (*)(void* const*), void* const*, const unsigned*,
                               const unsigned*, unsigned, char*, std::size_t);
        auto run_grid = reinterpret_cast<run_fn>(::dlsym(handle_, "cx_emulation_run"));
        const auto at = index_.find(k.entry);
        if (run_grid == nullptr || at == index_.end()) return "no kernel " + k.entry;
        using call_fn = void (*)(void* const*);
        auto call = reinterpret_cast<call_fn>(
            ::dlsym(handle_, ("cx_call_" + std::to_string(at->second)).c_str()));
        if (call == nullptr) return "no symbol for " + k.entry;
        char why[256] = {};
        if (run_grid(call, pointers.data(), l.grid.data(), l.block.data(), l.shared_bytes, why,
                     sizeof why) != 0)
            return k.entry + ": " + why;
        return "";
    }

private:
    void* handle_ = nullptr;
    std::string error_;
    std::map<std::string, std::size_t> index_; // kernel entry -> its cx_call_ index
};

std::string emulate(const kernel_source& k, const std::vector<void*>& pointers) {
    const emulated_kernels library({k});
    return library.run(k, pointers);
}

// The pooling `op` of the view of x (shape `view` starting `offset` elements into x's memory):
// the generated kernel's output, byte for byte, against the reference target's (the kernel
// pools each element's taps in the reference's order, so they are the same bits).
void expect_pooling_matches_reference(const op::pooling& op, const shape& x_shape,
                                      const shape& view, std::size_t offset,
                                      const std::string& expected_packing) {
    SCOPED_TRACE(op.name() + " of " + to_string(view) + " at offset " + std::to_string(offset));
    std::mt19937_64 rng(11);
    const argument x = random_argument(x_shape, rng);
    // NaN in the first element: max pooling spreads it, as the reference does.
    if (x_shape.type() == dtype::f16 || x_shape.type() == dtype::bf16) {
        const std::uint16_t nan = x_shape.type() == dtype::f16 ? 0x7e00 : 0x7fc0;
        std::memcpy(x.data(), &nan, 2);
    }
    const operation pool = op;
    const shape y = pool.compute_shape({view});
    static int serial = 0;
    kernel_request r;
    r.op = &pool;
    r.inputs = {view};
    r.outputs = {y};
    r.entry = "cx_emulated_" + std::to_string(serial++);
    r.input_offsets = {offset};
    const kernel_source k = generate_kernel(r);
    EXPECT_NE(k.code.find(expected_packing), std::string::npos) << k.code;
    std::vector<std::byte> out(y.bytes(), std::byte{0x7f}); // poisoned
    const std::string why =
        emulate(k, {static_cast<void*>(x.data() + offset * size_of(view.type())), out.data()});
    ASSERT_EQ(why, "") << k.code;

    // The reference: the same view of x, pooled.
    program p;
    module& m = p.main();
    auto param = m.add_parameter("x", x_shape);
    instruction_ref in = param;
    if (view.lens() != x_shape.lens()) {
        // A channel slice [offset, offset + C) of the last axis (the cases below).
        const std::int64_t last = std::int64_t(x_shape.rank()) - 1;
        in = m.add_instruction(
            op::slice{
                {last}, {std::int64_t(offset)}, {std::int64_t(offset + view.lens().back())}, {}},
            {param});
    }
    m.add_return({m.add_instruction(pool, {in})});
    const auto want = ref::evaluate(p, {{"x", x}});
    ASSERT_EQ(want.size(), 1u);
    ASSERT_EQ(want[0].get_shape().bytes(), out.size());
    EXPECT_EQ(std::memcmp(want[0].data(), out.data(), out.size()), 0);
}

op::pooling channels_last_pool(op::pooling_mode mode, bool count_include_pad) {
    op::pooling p;
    p.mode = mode;
    p.lengths = {3, 3};
    p.stride = {2, 2};
    p.padding = {1, 1, 1, 1};
    p.count_include_pad = count_include_pad;
    p.channels_last = true;
    return p;
}

TEST(CudaKernelEmulation, ChannelsLastPoolingMatchesTheReference) {
    using enum op::pooling_mode;
    // 16 bytes of channels a thread: 8 f16, 4 f32 (and 4 f16 for 20 channels).
    for (auto mode : {max, average}) {
        const op::pooling p = channels_last_pool(mode, mode == average);
        const shape f16{dtype::f16, {2, 9, 9, 64}};
        expect_pooling_matches_reference(p, f16, f16, 0, "cx_packed<cx_f16, 8>");
        const shape f32{dtype::f32, {2, 9, 9, 20}};
        expect_pooling_matches_reference(p, f32, f32, 0, "cx_packed<float, 4>");
        const shape bf16{dtype::bf16, {1, 7, 9, 20}};
        expect_pooling_matches_reference(p, bf16, bf16, 0, "cx_packed<cx_bf16, 4>");
    }
    // 64 of 72 channels from the 4th (or the 3rd): the offset narrows the vector.
    const shape wide{dtype::f16, {2, 9, 9, 72}};
    const shape slice{dtype::f16, {2, 9, 9, 64}, wide.strides()};
    expect_pooling_matches_reference(channels_last_pool(average, false), wide, slice, 4,
                                     "cx_packed<cx_f16, 4>");
    expect_pooling_matches_reference(channels_last_pool(max, false), wide, slice, 3,
                                     "cx_packed<cx_f16, 1>");
}

TEST(CudaKernelEmulation, ChannelsFirstPoolingMatchesTheReference) {
    op::pooling p;
    p.mode = op::pooling_mode::max;
    p.lengths = {3, 2};
    p.stride = {2, 1};
    p.padding = {1, 0, 1, 1};
    p.ceil_mode = true;
    const shape x{dtype::f16, {2, 5, 10, 11}};
    expect_pooling_matches_reference(p, x, x, 0, "cx_packed<cx_f16, 1>");
}

// Every elementwise kind in every type it takes, as the GPU op tests run them: input 0 a
// transposed view, the others broadcast along an axis (strides of 0), so the kernels' index
// arithmetic is checked with the values. All kernels build into one library.
TEST(CudaKernelEmulation, EveryElementwiseKindMatchesTheReference) {
    using op::elementwise_kind;
    struct case_data {
        std::string label;
        operation op;
        std::vector<argument> params;
        std::vector<shape> views;
        shape y;
        kernel_source kernel;
        argument want;
    };
    std::vector<case_data> cases;
    std::mt19937_64 rng(5);
    for (const test::elementwise_case& listed : test::elementwise_cases()) {
        const op::elementwise e = listed.op;
        const dtype t = listed.type;
        const auto kind = e.kind;
        const std::size_t n = op::arity(kind);
        case_data c{e.name() + " " + std::string(to_string(t)), e, {}, {}, {}, {}, {}};
        const operation transpose = op::transpose{{1, 0, 2}};
        const operation broadcast = op::broadcast{{3, 5, 7}};
        program p;
        module& m = p.main();
        std::vector<instruction_ref> in;
        const shape a{kind == elementwise_kind::where ? dtype::boolean : t, {5, 3, 7}};
        c.params.push_back(random_argument(a, rng));
        in.push_back(m.add_instruction(transpose, {m.add_parameter("p0", a)}));
        c.views.push_back(transpose.compute_shape({a}));
        for (std::size_t i = 1; i < n; ++i) {
            const shape b{t, {3, 1, 7}};
            c.params.push_back(random_argument(b, rng));
            in.push_back(
                m.add_instruction(broadcast, {m.add_parameter("p" + std::to_string(i), b)}));
            c.views.push_back(broadcast.compute_shape({b}));
        }
        const auto result = m.add_instruction(c.op, in);
        m.add_return({result});
        c.y = shape{result->get_shape().type(), result->get_shape().lens()};
        ref::parameter_map params;
        for (std::size_t i = 0; i < c.params.size(); ++i)
            params["p" + std::to_string(i)] = c.params[i];
        c.want = ref::evaluate(p, params).at(0);
        kernel_request r;
        r.op = &c.op;
        r.inputs = c.views;
        r.outputs = {c.y};
        r.entry = "cx_elementwise_" + std::to_string(cases.size());
        c.kernel = generate_kernel(r);
        cases.push_back(std::move(c));
    }
    std::vector<kernel_source> kernels;
    for (const auto& c : cases)
        kernels.push_back(c.kernel);
    const emulated_kernels library(kernels);
    ASSERT_EQ(library.error(), "");
    EXPECT_GT(cases.size(), 120u);
    for (auto& c : cases) {
        SCOPED_TRACE(c.label);
        argument got(c.y);
        std::memset(got.data(), 0x7f, c.y.bytes()); // poisoned
        std::vector<void*> pointers;
        for (const auto& a : c.params)
            pointers.push_back(a.data());
        pointers.push_back(got.data());
        ASSERT_EQ(library.run(c.kernel, pointers), "");
        const output_comparison cmp = compare_outputs(got, c.want);
        EXPECT_TRUE(cmp.passed) << "rel rms " << cmp.relative_rms << ", max |diff| "
                                << cmp.max_abs_diff << ", " << cmp.mismatches << " differ";
    }
}

// Programs built by their builders, each through the CUDA target's passes and lowering, every
// kernel of its launch sequence run on the host over the lowered memory (parameters, literals,
// the arena, output buffers, views at their byte offsets), against the reference target on the
// unoptimised program: what `conflux verify` does on a GPU. All their kernels build into one
// library (kernel names are hashes of their text, so a name met twice is the same kernel).
class program_emulation {
public:
    // `adjust`, when given, changes the random inputs before both runs (e.g. an Inf in them).
    void add(const std::string& label, const std::function<void(module&)>& build,
             const lowering_options& options = {},
             const std::function<void(ref::parameter_map&)>& adjust = {}) {
        entry e{label, {}, {}, {}};
        program reference, compiled;
        build(reference.main());
        build(compiled.main());
        std::mt19937_64 rng(1);
        for (instruction_ref p : reference.main().parameters())
            e.params[p->get_operator().get_if<op::param>()->name_] =
                random_argument(p->get_shape(), rng);
        if (adjust) adjust(e.params);
        e.want = ref::evaluate(reference, e.params);
        run_passes(compiled.main(), target_passes({}, nullptr));
        e.lowered = lower_program(compiled, options);
        entries_.push_back(std::move(e));
    }

    // Each of these perf configs is the one that ran some program's fused op, fused.
    void expect_each_config_ran_fused(const std::vector<std::string>& configs) const {
        const auto all = traces();
        for (const std::string& config : configs)
            EXPECT_TRUE(std::any_of(all.begin(), all.end(), [&](const std::string& line) {
                return line.find(" config " + config + " -> fused") != std::string::npos;
            })) << config;
    }

    // The traces of every program added, for what the lowering decided.
    std::vector<std::string> traces() const {
        std::vector<std::string> all;
        for (const entry& e : entries_)
            all.insert(all.end(), e.lowered.trace.begin(), e.lowered.trace.end());
        return all;
    }

    void expect_each_matches_the_reference() {
        std::vector<kernel_source> kernels;
        std::set<std::string> seen;
        for (const entry& e : entries_)
            for (const kernel_source& k : e.lowered.kernels)
                if (seen.insert(k.entry).second) kernels.push_back(k);
        const emulated_kernels library(kernels);
        ASSERT_EQ(library.error(), "");
        for (const entry& e : entries_) {
            SCOPED_TRACE(e.label);
            check(e, library);
        }
    }

private:
    struct entry {
        std::string label;
        ref::parameter_map params;
        std::vector<argument> want;
        lowered_program lowered;
    };
    std::vector<entry> entries_;

    static void check(const entry& e, const emulated_kernels& library) {
        const lowered_program& lp = e.lowered;
        // Host memory laid out as the device's would be.
        std::vector<argument> inputs;
        for (std::size_t i = 0; i < lp.parameter_names.size(); ++i) {
            const argument& given = e.params.at(lp.parameter_names[i]);
            ASSERT_EQ(given.get_shape(), lp.parameter_shapes[i]) << lp.parameter_names[i];
            inputs.push_back(given);
        }
        std::vector<std::byte> arena(lp.plan.arena_bytes + 16, std::byte{0x7f});
        std::vector<argument> outputs;
        for (const shape& s : lp.output_shapes) {
            outputs.emplace_back(s);
            std::memset(outputs.back().data(), 0x7f, s.bytes()); // poisoned
        }
        auto address = [&](const operand& o) -> void* {
            std::byte* base = nullptr;
            switch (o.source) {
            case memory_source::parameter:
                base = inputs.at(o.index).data();
                break;
            case memory_source::literal:
                base = lp.literals.at(o.index).data();
                break;
            case memory_source::buffer: {
                const buffer& b = lp.buffers.at(o.index);
                base = b.is_output ? outputs.at(b.output_index).data()
                                   : arena.data() + lp.arena_offset.at(o.index);
                break;
            }
            }
            return base + o.byte_offset;
        };
        for (const kernel_step& step : lp.steps) {
            std::vector<void*> pointers;
            for (const operand& o : step.args)
                pointers.push_back(address(o));
            ASSERT_EQ(library.run(lp.kernels.at(step.kernel), pointers, step.launch), "")
                << step.origin;
        }
        ASSERT_EQ(outputs.size(), e.want.size());
        for (std::size_t i = 0; i < e.want.size(); ++i) {
            const output_comparison c = compare_outputs(outputs[i], e.want[i]);
            EXPECT_TRUE(c.passed) << "output " << i << ": rel rms " << c.relative_rms
                                  << ", max |diff| " << c.max_abs_diff << ", " << c.mismatches
                                  << " differ";
        }
    }
};

instruction_ref param(module& m, const std::string& name, dtype t, dims lens) {
    return m.add_parameter(name, shape{t, std::move(lens)});
}

// The layout copies, data movement (gathers and scatters with every reduction) and resizes of
// the GPU op tests (the tiled transpose among them), and pointwise chains fused through views,
// as whole programs.
TEST(CudaKernelEmulation, DataMovementProgramsMatchTheReference) {
    program_emulation programs;
    for (const auto& c : test::resize_cases())
        programs.add(c.name, c.build);
    for (dtype t : {dtype::f32, dtype::f16, dtype::i64}) {
        const std::string ts(to_string(t));
        for (const auto& c : test::data_movement_cases(t))
            programs.add(c.name, c.build);
        // A pointwise chain over a slice at an odd offset, with a transposed second output.
        programs.add("pointwise over a slice " + ts, [&](module& m) {
            auto x = param(m, "x", t, {3, 9, 10});
            auto v = m.add_instruction(op::slice{{2}, {1}, {9}, {}}, {x});
            auto d = m.add_instruction(op::make_elementwise(op::elementwise_kind::mul), {v, v});
            auto e = m.add_instruction(op::make_elementwise(op::elementwise_kind::add), {d, v});
            m.add_return({e, m.add_instruction(op::transpose{{2, 0, 1}}, {e})});
        });
    }
    programs.expect_each_matches_the_reference();
}

// The normalisation programs of the GPU op tests: layer norm's dense-row kernel (warp shuffles,
// a block barrier for long rows), the general kernel, RMS norm, a slice at an odd offset, batch
// norm.
TEST(CudaKernelEmulation, NormalisationProgramsMatchTheReference) {
    program_emulation programs;
    for (dtype t : {dtype::f32, dtype::f16, dtype::bf16})
        for (const auto& c : test::normalisation_cases(t))
            programs.add(c.name, c.build);
    programs.expect_each_matches_the_reference();
}

// The GPU op tests' reductions, softmax and arg reductions (block-per-row reductions through a
// block barrier, warp-per-row ones through shuffles, the split spatial reduction).
TEST(CudaKernelEmulation, ReductionProgramsMatchTheReference) {
    program_emulation programs;
    for (const auto& c : test::reduction_cases())
        programs.add(c.name, c.build);
    programs.expect_each_matches_the_reference();
}

// A fused epilogue's functions on the host (fused_epilogue.cpp), over every element of an NHWC
// convolution's [2, 6, 5, 32] f16 output: relu((anchor + bias) * f16(scale) + residual), the
// bias f16 and the scale f32 (two 16-byte loads for eight lanes) through broadcasts, the
// residual 0, 8 or 3 elements into its buffer. cx_epilogue_vec, which reads the inputs a vector
// at a time where they are aligned (not the residual at 3), must give the bits of cx_epilogue,
// which reads them element by element, and of the reference target on the module, and make no
// vector access off its alignment (the shim reports one). So must cx_epilogue_load followed by
// cx_epilogue_vec_loaded, the split the batched walk calls (gemm.cuh).
TEST(CudaKernelEmulation, FusedEpilogueVectorLoadsMatchTheScalarPathAndTheReference) {
    const dims lens{2, 6, 5, 32};
    const shape out{dtype::f16, lens};
    const std::size_t rows = 60, cols = 32, elements = rows * cols;
    op::convolution conv{{1, 1, 1, 1}, {1, 1}, {1, 1}, 1, true};
    const auto problem = make_gemm_problem(
        conv, {shape{dtype::f16, {2, 6, 5, 16}}, {dtype::f16, {32, 3, 3, 16}}}, out);
    ASSERT_TRUE(problem.has_value());
    std::mt19937_64 rng(5);
    // The anchor's values: f16 numbers, so that the accumulators narrow to them exactly.
    const argument anchor = random_argument(out, rng);
    const auto anchor_values = to_vector<float>(anchor);
    const argument bias = random_argument(shape{dtype::f16, {cols}}, rng);
    const argument scale = random_argument(shape{dtype::f32, {cols}}, rng);
    const argument residual_values = random_argument(out, rng);
    for (std::size_t offset : {0u, 8u, 3u}) {
        SCOPED_TRACE("residual at offset " + std::to_string(offset));
        program p;
        module& m = p.main();
        auto add = op::make_elementwise(op::elementwise_kind::add);
        auto a = m.add_parameter("anchor", out);
        auto b = m.add_parameter("bias", bias.get_shape());
        auto sc = m.add_parameter("scale", scale.get_shape());
        auto r = m.add_parameter("residual", out);
        auto x = m.add_instruction(add, {a, m.add_instruction(op::broadcast{lens}, {b})});
        auto s16 = m.add_instruction(op::make_convert(dtype::f16),
                                     {m.add_instruction(op::broadcast{lens}, {sc})});
        x = m.add_instruction(op::make_elementwise(op::elementwise_kind::mul), {x, s16});
        x = m.add_instruction(add, {x, r});
        m.add_return({m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {x})});
        const epilogue_module e{
            &m, 0, {out, bias.get_shape(), scale.get_shape(), out}, {out}, {0, 0, 0, offset}};
        const gemm_epilogue g = fused_epilogue(*problem, e);
        ASSERT_EQ(g.lanes, 8u);
        EXPECT_NE(g.code.find("*>(in1 + "), std::string::npos) << g.code;
        EXPECT_NE(g.code.find("cx_packed<float, 4>"), std::string::npos) << g.code;
        EXPECT_EQ(g.code.find("*>(in3 + ") != std::string::npos, offset % 8 == 0) << g.code;
        EXPECT_TRUE(g.batched_loads); // the bias is read a vector at a time at every offset

        // One thread per eight columns (vector) or per column (scalar), a block per row.
        std::string parameters = "const float* cx_acc", arguments;
        for (const auto& q : g.parameters)
            parameters += ", " + q;
        for (const auto& q : g.arguments)
            arguments += ", " + q;
        static int serial = 0;
        const std::string id = std::to_string(serial++);
        kernel_source vec, scalar, loaded;
        vec.entry = "cx_epilogue_vec_test" + id;
        scalar.entry = "cx_epilogue_scalar_test" + id;
        loaded.entry = "cx_epilogue_loaded_test" + id;
        const std::string functions = "#include \"conflux/types.cuh\"\n" + g.code;
        vec.code =
            functions + "extern \"C\" __global__ void " + vec.entry + "(" + parameters +
            ") {\n    const long long m = blockIdx.x, n = threadIdx.x * 8;\n"
            "    float v[8];\n    for (int l = 0; l < 8; ++l) v[l] = cx_acc[m * 32 + n + l];\n"
            "    cx_epilogue_vec(v, 0, m, n" +
            arguments + ");\n}\n";
        loaded.code =
            functions + "extern \"C\" __global__ void " + loaded.entry + "(" + parameters +
            ") {\n    const long long m = blockIdx.x, n = threadIdx.x * 8;\n"
            "    cx_epilogue_loads cx_loads;\n    cx_epilogue_load(cx_loads, 0, m, n" +
            arguments +
            ");\n    float v[8];\n    for (int l = 0; l < 8; ++l) v[l] = cx_acc[m * 32 + n + l];\n"
            "    cx_epilogue_vec_loaded(v, cx_loads, 0, m, n" +
            arguments + ");\n}\n";
        scalar.code = functions + "extern \"C\" __global__ void " + scalar.entry + "(" +
                      parameters +
                      ") {\n    const long long m = blockIdx.x, n = threadIdx.x;\n"
                      "    cx_epilogue(cx_acc[m * 32 + n], 0, m, n" +
                      arguments + ");\n}\n";
        vec.launch.grid = scalar.launch.grid = loaded.launch.grid = {unsigned(rows), 1, 1};
        vec.launch.block = loaded.launch.block = {unsigned(cols / 8), 1, 1};
        scalar.launch.block = {unsigned(cols), 1, 1};

        std::vector<std::uint16_t> residual(elements + 16, 0x7e00); // NaN around the view
        std::memcpy(residual.data() + offset, residual_values.data(), elements * 2);
        std::vector<std::uint16_t> got_vec(elements, 0x7c01), got_scalar(elements, 0x7c01),
            got_loaded(elements, 0x7c01);
        auto pointers = [&](std::vector<std::uint16_t>& result) {
            return std::vector<void*>{const_cast<float*>(anchor_values.data()), bias.data(),
                                      scale.data(), residual.data() + offset, result.data()};
        };
        const emulated_kernels library({vec, scalar, loaded});
        ASSERT_EQ(library.run(vec, pointers(got_vec)), "");
        ASSERT_EQ(library.run(scalar, pointers(got_scalar)), "");
        ASSERT_EQ(library.run(loaded, pointers(got_loaded)), "");
        EXPECT_EQ(got_vec, got_scalar);
        EXPECT_EQ(got_loaded, got_scalar);
        const auto want = ref::evaluate(
            p,
            {{"anchor", anchor}, {"bias", bias}, {"scale", scale}, {"residual", residual_values}});
        ASSERT_EQ(want.size(), 1u);
        EXPECT_EQ(std::memcmp(want[0].data(), got_vec.data(), elements * 2), 0);
    }
}

// Every fused gemm pattern with the anchor on the direct kernel (what runs when the generator has
// no problem for it): the op splits into gemm | pointwise or gemm | pointwise | layout copy and
// must still write each output in the layout the graph asked for. The split paths, their
// pointwise parts and layout copies, checked for numbers in CI.
TEST(CudaKernelEmulation, FusedPatternsSplitPathsMatchTheReference) {
    lowering_options direct;
    direct.use_gemm_generator = false;
    program_emulation programs;
    for (const auto& pattern : test::fused_patterns())
        for (dtype t : {dtype::f32, dtype::f16, dtype::bf16})
            programs.add(
                pattern.name + " " + std::string(to_string(t)),
                [&](module& m) { pattern.build(m, t); }, direct);
    std::size_t two_way = 0, three_way = 0;
    for (const std::string& line : programs.traces()) {
        two_way += line.find("-> 2-way") != std::string::npos;
        three_way += line.find("-> 3-way") != std::string::npos;
    }
    EXPECT_GT(two_way, 0u);
    EXPECT_GT(three_way, 0u);
    programs.expect_each_matches_the_reference();
}

// The depthwise kernel family (depthwise_kernel.cpp) on the host: the first candidates of each
// problem (what quick tuning times: direct and tiled forms, every vector width the dtype
// allows), forced one at a time, on channels-last depthwise convolutions with a fused bias and
// relu, against the reference target. Odd sizes leave partial strips, row tiles and channel
// vectors; a stride and a dilation move the windows. The GPU harness runs every config
// (tests/gpu/gemm_kernel_test.cpp); this is what CI can check without one.
TEST(CudaKernelEmulation, DepthwiseConfigsMatchTheReference) {
    struct layer {
        std::string name;
        dims x; // NHWC
        std::size_t kernel, stride, dilation;
    };
    const std::vector<layer> layers = {{"3x3", {1, 9, 10, 16}, 3, 1, 1},
                                       {"5x5 stride 2", {2, 11, 9, 24}, 5, 2, 1},
                                       {"7x7", {1, 8, 13, 8}, 7, 1, 1},
                                       {"3x3 dilation 2", {1, 9, 7, 12}, 3, 1, 2}};
    constexpr std::size_t configs_per_problem = 6;
    program_emulation programs;
    std::vector<std::string> forced;
    for (const layer& l : layers)
        for (dtype t : {dtype::f16, dtype::bf16, dtype::f32}) {
            const std::size_t c = l.x[3], pad = (l.kernel - 1) * l.dilation / 2;
            const op::convolution conv{
                {pad, pad, pad, pad}, {l.stride, l.stride}, {l.dilation, l.dilation}, c, true};
            const shape x{t, l.x}, w{t, {c, l.kernel, l.kernel, 1}};
            const shape y = conv.compute_shape({x, w});
            const auto problem = make_gemm_problem(conv, {x, w}, y);
            ASSERT_TRUE(problem.has_value()) << l.name;
            ASSERT_TRUE(is_depthwise(*problem)) << l.name;
            const auto candidates = depthwise_candidates(*problem);
            ASSERT_GE(candidates.size(), 2u) << l.name;
            for (std::size_t i = 0; i < std::min(configs_per_problem, candidates.size()); ++i) {
                lowering_options options;
                options.perf_config = to_string(candidates[i]);
                forced.push_back(options.perf_config);
                programs.add(
                    l.name + " " + std::string(to_string(t)) + " " + options.perf_config,
                    [&](module& m) {
                        auto conv_out = m.add_instruction(
                            conv, {param(m, "x", t, l.x), param(m, "w", t, w.lens())});
                        auto bias =
                            m.add_instruction(op::broadcast{y.lens()}, {param(m, "b", t, {c})});
                        auto sum = m.add_instruction(
                            op::make_elementwise(op::elementwise_kind::add), {conv_out, bias});
                        m.add_return({m.add_instruction(
                            op::make_elementwise(op::elementwise_kind::relu), {sum})});
                    },
                    options);
            }
        }
    // Each forced config is the one that ran, fused with the bias and relu.
    programs.expect_each_config_ran_fused(forced);
    programs.expect_each_matches_the_reference();
}

// The tensor-core depthwise configs (dw_mma, depthwise_mma.cuh) with mma.sync emulated from its
// register layouts (mma.cuh): several row, column and channel blocks with partial ones at the
// ends, a vertical stride, a column dilation, asymmetric padding, the widest kernel row a
// product holds (9 columns), f16 and bf16, each with a fused bias + relu, against the reference
// target. Then windows with an Inf and a NaN in them: those blocks compute directly and give
// the reference's Inf and NaN exactly where it has them, and finite values around them.
TEST(CudaKernelEmulation, DepthwiseTensorCoreConfigsMatchTheReference) {
    struct layer {
        std::string name;
        dims x; // NHWC
        std::size_t kh, kw;
        std::vector<std::size_t> padding, stride, dilation;
    };
    const std::vector<layer> layers = {
        {"7x7", {2, 20, 37, 32}, 7, 7, {3, 3, 3, 3}, {1, 1}, {1, 1}},
        {"3x3", {1, 9, 10, 16}, 3, 3, {1, 1, 1, 1}, {1, 1}, {1, 1}},
        {"5x5 rows stride 2", {1, 17, 19, 24}, 5, 5, {2, 2, 2, 2}, {2, 1}, {1, 1}},
        {"3x3 dilation 2", {1, 13, 11, 8}, 3, 3, {2, 2, 2, 2}, {1, 1}, {2, 2}},
        {"3x3 asymmetric padding", {1, 9, 11, 16}, 3, 3, {0, 2, 1, 1}, {1, 1}, {1, 1}},
        {"1x9", {1, 5, 30, 8}, 1, 9, {0, 4, 0, 4}, {1, 1}, {1, 1}}};
    program_emulation programs;
    std::vector<std::string> forced;
    auto build_layer = [&](const layer& l, dtype t) {
        const std::size_t c = l.x[3];
        const op::convolution conv{l.padding, l.stride, l.dilation, c, true};
        const shape x{t, l.x}, w{t, {c, l.kh, l.kw, 1}};
        const shape y = conv.compute_shape({x, w});
        return [=](module& m) {
            auto conv_out =
                m.add_instruction(conv, {param(m, "x", t, x.lens()), param(m, "w", t, w.lens())});
            auto bias = m.add_instruction(op::broadcast{y.lens()}, {param(m, "b", t, {c})});
            auto sum = m.add_instruction(op::make_elementwise(op::elementwise_kind::add),
                                         {conv_out, bias});
            m.add_return(
                {m.add_instruction(op::make_elementwise(op::elementwise_kind::relu), {sum})});
        };
    };
    auto mma_configs = [&](const layer& l, dtype t, bool pipelined = false) {
        const std::size_t c = l.x[3];
        const op::convolution conv{l.padding, l.stride, l.dilation, c, true};
        const shape x{t, l.x}, w{t, {c, l.kh, l.kw, 1}};
        const auto problem = make_gemm_problem(conv, {x, w}, conv.compute_shape({x, w}));
        EXPECT_TRUE(problem.has_value() && is_depthwise(*problem)) << l.name;
        std::vector<std::string> r;
        if (!problem) return r;
        for (const perf_config& pc : depthwise_candidates(*problem))
            if (pc.tensor_cores && pc.pipelined == pipelined) r.push_back(to_string(pc));
        return r;
    };
    for (const layer& l : layers)
        for (dtype t : {dtype::f16, dtype::bf16}) {
            const auto configs = mma_configs(l, t);
            ASSERT_GE(configs.size(), 3u) << l.name;
            // The best three, and a spread of the rest (every block shape among them).
            for (std::size_t i = 0; i < configs.size(); ++i) {
                if (i >= 3 && i % 6 != 0) continue;
                lowering_options options;
                options.perf_config = configs[i];
                forced.push_back(configs[i]);
                programs.add(l.name + " " + std::string(to_string(t)) + " " + configs[i],
                             build_layer(l, t), options);
            }
        }
    // The pipelined form's best three, generated for a device of one SM, so that each block
    // walks many tiles (up to 12 here) and every window after the first is loaded while the
    // block computes the one before.
    lowering_options one_sm;
    one_sm.limits.sm_count = 1;
    for (const layer& l : layers)
        for (dtype t : {dtype::f16, dtype::bf16}) {
            const auto configs = mma_configs(l, t, true);
            ASSERT_GE(configs.size(), 1u) << l.name;
            for (std::size_t i = 0; i < std::min<std::size_t>(3, configs.size()); ++i) {
                lowering_options options = one_sm;
                options.perf_config = configs[i];
                forced.push_back(configs[i]);
                programs.add(l.name + " " + std::string(to_string(t)) + " " + configs[i] +
                                 " on one SM",
                             build_layer(l, t), options);
            }
        }
    // Inf and NaN in the input of the 7x7 layer, in different blocks (and, pipelined, in
    // different tiles of one block: the next tile computes with tensor cores again).
    for (bool pipelined : {false, true})
        for (dtype t : {dtype::f16, dtype::bf16}) {
            const layer& l = layers[0];
            lowering_options options = pipelined ? one_sm : lowering_options{};
            options.perf_config = mma_configs(l, t, pipelined).at(0);
            programs.add("7x7 with Inf and NaN " + std::string(to_string(t)) + " " +
                             options.perf_config,
                         build_layer(l, t), options, [&](ref::parameter_map& params) {
                             argument& x = params.at("x");
                             auto* bits = reinterpret_cast<std::uint16_t*>(x.data());
                             const bool f16 = t == dtype::f16;
                             // [n, h, w, c] = [0, 4, 5, 3] Inf, [1, 15, 30, 20] NaN.
                             bits[((0 * 20 + 4) * 37 + 5) * 32 + 3] = f16 ? 0x7c00 : 0x7f80;
                             bits[((1 * 20 + 15) * 37 + 30) * 32 + 20] = f16 ? 0x7e00 : 0x7fc0;
                         });
        }
    programs.expect_each_config_ran_fused(forced);
    programs.expect_each_matches_the_reference();
}

// The lowering tells the pooling kernel where a slice starts (kernel_request::input_offsets): a
// channels-last pool of 64 of 72 channels from the 3rd, 4th or 8th loads 1, 4 or 8 f16 at once
// from the aliased memory, with the same results.
TEST(CudaKernelEmulation, PoolingOfASliceThroughTheLowering) {
    program_emulation programs;
    for (std::int64_t start : {3, 4, 8})
        for (dtype t : {dtype::f16, dtype::f32}) {
            programs.add(
                "pool of channels from " + std::to_string(start) + " " + std::string(to_string(t)),
                [&](module& m) {
                    auto x = param(m, "x", t, {2, 9, 9, 72});
                    auto v = m.add_instruction(op::slice{{3}, {start}, {start + 64}, {}}, {x});
                    m.add_return(
                        {m.add_instruction(channels_last_pool(op::pooling_mode::max, false), {v})});
                });
        }
    programs.expect_each_matches_the_reference();
}

} // namespace cuda_kernel_emulation_test
} // namespace conflux::cuda
