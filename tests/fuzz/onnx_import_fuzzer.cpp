// The ONNX importer on arbitrary protobuf bytes, and what `conflux run --target ref` does with a
// model that imports: the program must validate, interpret on random inputs, go through the
// target-independent passes (what --optimize and the cuda target run) and interpret again.
// Interpreting is skipped for programs whose tensors would make one execution slow; a
// user_error at any step (e.g. an index out of range at run time) is a fine outcome.
#include "conflux/ir/builtin_ops.hpp"
#include "conflux/ir/random_argument.hpp"
#include "conflux/onnx/import.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/ref/evaluate.hpp"
#include "fuzz_support.hpp"

#include <algorithm>
#include <random>

namespace {

using namespace conflux;

// Element counts as doubles: a shape the importer let through may still be absurd, and this
// estimate must not overflow on it.
double elements(const shape& s) {
    if (s.is_tuple()) {
        double sum = 0;
        for (const auto& sub : s.sub_shapes())
            sum += elements(sub);
        return sum;
    }
    double n = 1;
    for (auto len : s.lens())
        n *= double(len);
    return n;
}

// An upper bound of the reference target's work on m and its submodules: per instruction its
// output elements times its largest input (exact for reductions, generous for elementwise ops).
double work(const module& m) {
    double total = 0;
    for (const auto& ins : m) {
        double largest_input = 1;
        for (const auto* in : ins.inputs())
            largest_input = std::max(largest_input, elements(in->get_shape()));
        total += elements(ins.get_shape()) * largest_input + elements(ins.get_shape());
        for (const auto* sub : ins.module_inputs())
            total += work(*sub);
    }
    return total;
}

constexpr double max_work = 1 << 22;

ref::parameter_map random_inputs(const module& m) {
    std::mt19937_64 rng(42);
    ref::parameter_map params;
    for (const auto* p : m.parameters()) {
        params[p->get_operator().get_if<op::param>()->name_] = random_argument(p->get_shape(), rng);
    }
    return params;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    program p;
    if (!fuzz::user_error_is_fine(
            [&] { p = onnx::import_model_bytes(fuzz::as_text(data, size), {}, "fuzz.onnx"); }))
        return 0;
    p.validate();
    if (work(p.main()) > max_work) return 0;

    const auto params = random_inputs(p.main());
    if (!fuzz::user_error_is_fine([&] { (void)ref::evaluate(p, params); })) return 0;
    if (!fuzz::user_error_is_fine([&] { run_passes(p.main(), target_independent_passes()); }))
        return 0;
    p.validate();
    if (work(p.main()) > max_work) return 0;
    (void)fuzz::user_error_is_fine([&] { (void)ref::evaluate(p, params); });
    return 0;
}
