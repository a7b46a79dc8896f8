// The Python extension `conflux._conflux`: compile, load, run, save and time programs from
// Python (python/conflux/__init__.py is the public face). Arrays cross as numpy arrays, copied
// into and out of the library's arguments; errors cross as conflux.UserError (a ValueError) and
// conflux.InternalError, with the CLI's one-line messages.
#include "conflux/cuda/devices.hpp"
#include "conflux/cuda/problem_cache.hpp"
#include "conflux/cuda/saved_program.hpp"
#include "conflux/cuda/target.hpp"
#include "conflux/ir/random_argument.hpp"
#include "conflux/onnx/import.hpp"
#include "conflux/passes/pass_manager.hpp"
#include "conflux/passes/pipeline.hpp"
#include "conflux/ref/evaluate.hpp"
#include "conflux/util/errors.hpp"

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <unistd.h>

namespace py = pybind11;
using namespace conflux;

namespace {

// A numpy dtype by its array-interface string ('<f4'); bf16 has none.
std::optional<dtype> dtype_of(const std::string& text) {
    static const std::map<std::string, dtype> types = {
        {"<f4", dtype::f32}, {"<f2", dtype::f16}, {"<f8", dtype::f64}, {"|i1", dtype::i8},
        {"|u1", dtype::u8},  {"<i4", dtype::i32}, {"<i8", dtype::i64}, {"|b1", dtype::boolean}};
    const auto it = types.find(text);
    if (it == types.end()) return std::nullopt;
    return it->second;
}

// numpy's name for t.
const char* numpy_type(dtype t, const std::string& what) {
    switch (t) {
    case dtype::f32:
        return "float32";
    case dtype::f16:
        return "float16";
    case dtype::f64:
        return "float64";
    case dtype::i8:
        return "int8";
    case dtype::u8:
        return "uint8";
    case dtype::i32:
        return "int32";
    case dtype::i64:
        return "int64";
    case dtype::boolean:
        return "bool";
    case dtype::bf16:
        break;
    }
    throw py::type_error(what + " is bf16, which numpy has no type for");
}

std::string dtype_name(dtype t) {
    return std::string(to_string(t));
}

struct tensor_info {
    std::string name;
    std::string dtype;
    std::vector<std::size_t> shape;
};

// A compiled program of either target, with what run() checks its inputs against.
class py_program {
public:
    std::string target; // "cuda" or "ref"
    std::optional<cuda::compiled_program> cuda;
    std::shared_ptr<program> ref;   // the reference target's program (as imported, or optimised)
    std::optional<dtype> precision; // what a cuda program was compiled in (fp16/bf16)
    std::string model;              // what a loaded program was compiled from (its header's)
    std::vector<std::string> input_names, output_names;
    std::vector<shape> input_shapes, output_shapes;

    static py_program of_cuda(cuda::compiled_program compiled, std::optional<dtype> precision) {
        py_program p;
        p.target = "cuda";
        p.precision = precision;
        p.input_names = compiled.parameter_names();
        p.input_shapes = compiled.parameter_shapes();
        p.output_names = compiled.output_names();
        p.output_shapes = compiled.output_shapes();
        p.cuda = std::move(compiled);
        return p;
    }

    static py_program of_ref(program prog) {
        py_program p;
        p.target = "ref";
        for (instruction_ref param : prog.main().parameters()) {
            p.input_names.push_back(param->get_operator().get_if<op::param>()->name_);
            p.input_shapes.push_back(param->get_shape());
        }
        p.output_names = prog.main().output_names();
        auto ret = prog.main().get_return();
        if (ret != nullptr)
            for (instruction_ref v : ret->inputs())
                p.output_shapes.push_back(v->get_shape().as_standard());
        p.ref = std::make_shared<program>(std::move(prog));
        return p;
    }

    std::vector<tensor_info> infos(const std::vector<std::string>& names,
                                   const std::vector<shape>& shapes) const {
        std::vector<tensor_info> out;
        for (std::size_t i = 0; i < names.size(); ++i)
            out.push_back({names[i], dtype_name(shapes[i].type()), shapes[i].lens()});
        return out;
    }

    // Names and dtypes checked here, with Python's exception types; lens by the library.
    std::map<std::string, argument> bind(const py::dict& inputs) const {
        std::map<std::string, argument> bound;
        for (const auto& [key, value] : inputs) {
            const std::string name = py::str(key);
            const auto it = std::find(input_names.begin(), input_names.end(), name);
            if (it == input_names.end()) {
                std::string known;
                for (std::size_t i = 0; i < input_names.size(); ++i)
                    known += (i ? ", " : "") + input_names[i] + " (" +
                             to_string(input_shapes[i].as_standard()) + ")";
                throw user_error("input '" + name + "': the program has no such input; its " +
                                 "inputs are: " + (known.empty() ? "none" : known));
            }
            const shape& want = input_shapes[std::size_t(it - input_names.begin())];
            // numpy through Python and the buffer protocol only: pybind11's numpy accessors
            // read numpy's structs, whose layout numpy 2 changed.
            py::module_ np = py::module_::import("numpy");
            if (!py::isinstance(value, np.attr("ndarray")))
                throw py::type_error("input '" + name + "': expected a numpy array, got " +
                                     std::string(py::str(py::type::of(value).attr("__name__"))));
            const py::object array = np.attr("ascontiguousarray")(value);
            const std::string type_text = py::str(array.attr("dtype").attr("str"));
            const auto type = dtype_of(type_text);
            if (!type || *type != want.type())
                throw py::type_error("input '" + name + "' is " +
                                     std::string(py::str(array.attr("dtype"))) +
                                     " but the program expects " + dtype_name(want.type()));
            dims lens;
            for (const auto& d : py::tuple(array.attr("shape")))
                lens.push_back(d.cast<std::size_t>());
            if (lens != want.lens())
                throw user_error("input '" + name + "' has shape [" + to_string(lens) +
                                 "] but the program expects [" + to_string(want.lens()) + "]");
            const py::buffer_info info = py::buffer(array).request();
            argument a(shape(*type, lens));
            if (a.get_shape().bytes() != 0) std::memcpy(a.data(), info.ptr, a.get_shape().bytes());
            bound.emplace(name, std::move(a));
        }
        // Inputs not given get the random values `conflux run` gives them (seed 0, in input
        // order), with a warning, as the command line says so.
        std::mt19937_64 rng(0);
        for (std::size_t i = 0; i < input_names.size(); ++i) {
            if (bound.contains(input_names[i])) continue;
            const std::string message = "conflux: input '" + input_names[i] +
                                        "' not given: using random " +
                                        to_string(input_shapes[i].as_standard()) + " (seed 0)";
            if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 2) != 0)
                throw py::error_already_set();
            bound.emplace(input_names[i], random_argument(input_shapes[i], rng));
        }
        return bound;
    }

    py::dict run(const py::dict& inputs) {
        const auto bound = bind(inputs);
        std::vector<argument> results;
        {
            py::gil_scoped_release unlocked;
            results = cuda ? cuda->run(bound) : ref::evaluate(*ref, bound);
        }
        py::dict out;
        for (std::size_t i = 0; i < results.size(); ++i) {
            const argument dense = results[i].contiguous();
            const shape& s = dense.get_shape();
            py::object array = py::module_::import("numpy").attr("empty")(
                py::tuple(py::cast(s.lens())),
                numpy_type(s.type(), "output '" + output_names[i] + "'"));
            const py::buffer_info info = py::buffer(array).request(true);
            if (s.bytes() != 0) std::memcpy(info.ptr, dense.data(), s.bytes());
            out[py::str(output_names[i])] = std::move(array);
        }
        return out;
    }

    py::dict perf(const py::dict& inputs, std::size_t warmup, std::size_t iterations,
                  bool cuda_graph) {
        if (!cuda) throw user_error("perf times the cuda target; this program is for " + target);
        const auto bound = bind(inputs);
        cuda::profile_result r;
        {
            py::gil_scoped_release unlocked;
            r = cuda->profile(bound, cuda::profile_options{warmup, iterations, cuda_graph});
        }
        py::list steps;
        for (const auto& s : r.steps)
            steps.append(py::dict(py::arg("kernel") = s.kernel, py::arg("origin") = s.origin,
                                  py::arg("gemm") = s.gemm, py::arg("median_ms") = s.median_ms));
        const auto& st = cuda->stats();
        return py::dict(
            py::arg("median_ms") = r.median_ms, py::arg("p90_ms") = r.p90_ms,
            py::arg("p99_ms") = r.p99_ms, py::arg("eager_median_ms") = r.eager_median_ms,
            py::arg("cuda_graph") = r.cuda_graph, py::arg("repetitions") = r.repetitions,
            py::arg("kernels") = st.kernels, py::arg("launches") = st.launches,
            py::arg("weight_bytes") = st.literal_bytes, py::arg("arena_bytes") = st.arena_bytes,
            py::arg("steps") = steps);
    }

    // Device memory the caller owns, by name: no copies (compiled_program::run_on_device checks
    // names, alignment, overlap and that the memory is device memory of the program's device).
    void run_on_device(const std::map<std::string, std::uintptr_t>& inputs,
                       const std::map<std::string, std::uintptr_t>& outputs, std::uintptr_t stream,
                       bool cuda_graph) {
        if (!cuda)
            throw user_error("device tensors run on the cuda target; this program is for " +
                             target + " (compile with target='cuda')");
        std::map<std::string, const void*> in;
        std::map<std::string, void*> out;
        for (const auto& [name, ptr] : inputs)
            in.emplace(name, reinterpret_cast<const void*>(ptr));
        for (const auto& [name, ptr] : outputs)
            out.emplace(name, reinterpret_cast<void*>(ptr));
        py::gil_scoped_release unlocked;
        cuda->run_on_device(in, out,
                            cuda::device_run_options{reinterpret_cast<void*>(stream), cuda_graph});
    }

    void save(const std::filesystem::path& path, const std::string& model) const {
        if (cuda)
            save_program(path, *cuda, model, precision);
        else
            save_program(path, *ref, model);
    }
};

struct compile_request {
    std::string target = "auto";
    bool fp16 = false, bf16 = false;
    bool narrow_outputs = false;
    std::optional<std::size_t> batch;
    std::map<std::string, std::vector<std::size_t>> input_dims;
    std::string tune = "quick";
    std::optional<std::string> problem_cache;
    std::string arch;
};

// The note (empty or "no CUDA device ...") and the program.
std::pair<std::string, py_program> compile_program(program p, const compile_request& r) {
    CONFLUX_USER_CHECK(!(r.fp16 && r.bf16), "fp16 and bf16 exclude each other");
    CONFLUX_USER_CHECK(r.target == "auto" || r.target == "cuda" || r.target == "ref", "target '",
                       r.target, "': expected 'auto', 'cuda' or 'ref'");
    std::optional<dtype> precision;
    if (r.fp16) precision = dtype::f16;
    if (r.bf16) precision = dtype::bf16;
    CONFLUX_USER_CHECK(!r.narrow_outputs || precision,
                       "narrow_outputs: the outputs are narrowed to the precision of fp16 or bf16, "
                       "and neither is set");
    std::string note;
    std::string target = r.target;
    if (target == "auto") {
        target = cuda::available_devices() > 0 ? "cuda" : "ref";
        if (target == "ref")
            note = "no CUDA device (" + cuda::no_device_reason() +
                   "): running on the reference target (an interpreter; slow)";
    }
    if (target == "ref") {
        if (precision)
            run_passes(p.main(),
                       target_independent_passes(reduced_precision{*precision, r.narrow_outputs},
                                                 fuse_attention{}));
        return {note, py_program::of_ref(std::move(p))};
    }
    cuda::compile_options options;
    options.arch = r.arch;
    options.precision = precision;
    options.narrow_outputs = r.narrow_outputs;
    if (r.tune == "none")
        options.tune = cuda::tune_mode::none;
    else if (r.tune == "quick")
        options.tune = cuda::tune_mode::quick;
    else if (r.tune == "exhaustive")
        options.tune = cuda::tune_mode::exhaustive;
    else
        throw_user_error("tune '", r.tune, "': expected 'none', 'quick' or 'exhaustive'");
    if (r.problem_cache) options.problem_cache_path = *r.problem_cache;
    std::vector<std::string> warnings;
    options.warn = [&](const std::string& w) { warnings.push_back(w); };
    options.note = [&](const std::string& n) { note += (note.empty() ? "" : "; ") + n; };
    // A progress line while tuning, only where someone watches (a terminal).
    if (::isatty(2))
        options.tuning_status = [](const std::string& line, bool done) {
            std::cerr << "\r\033[K" << line << (done ? "\n" : "") << std::flush;
        };
    cuda::compiled_program compiled = cuda::compile(std::move(p), options);
    for (const auto& w : warnings)
        note += (note.empty() ? "" : "; ") + w;
    return {note, py_program::of_cuda(std::move(compiled), precision)};
}

onnx::import_options import_options_of(const compile_request& r) {
    onnx::import_options o;
    o.batch = r.batch;
    for (const auto& [name, lens] : r.input_dims)
        o.input_dims[name] = dims(lens.begin(), lens.end());
    return o;
}

// A tensor exported through DLPack (`__dlpack__`), described for Program.run's device path:
// its address, device, dtype (code, bits, lanes), shape and strides (None: row-major). The
// capsule is consumed and its deleter called at once: the memory stays owned by the object
// that exported it, which the caller holds for the run (as for any CUDA launch).
py::dict dlpack_describe(const py::object& tensor, const py::object& stream) {
    py::object capsule = stream.is_none() ? tensor.attr("__dlpack__")()
                                          : tensor.attr("__dlpack__")(py::arg("stream") = stream);
    if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
        throw py::type_error("__dlpack__ returned no unused DLPack capsule");
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    if (managed == nullptr) throw py::error_already_set();
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    const DLTensor& t = managed->dl_tensor;
    py::list shape, strides;
    for (int i = 0; i < t.ndim; ++i) {
        shape.append(t.shape[i]);
        if (t.strides != nullptr) strides.append(t.strides[i]);
    }
    py::dict out(py::arg("data") = reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset,
                 py::arg("device_type") = int(t.device.device_type),
                 py::arg("device_id") = t.device.device_id, py::arg("code") = int(t.dtype.code),
                 py::arg("bits") = int(t.dtype.bits), py::arg("lanes") = int(t.dtype.lanes),
                 py::arg("shape") = py::tuple(shape),
                 py::arg("strides") = t.strides == nullptr ? py::object(py::none())
                                                           : py::object(py::tuple(strides)));
    if (managed->deleter != nullptr) managed->deleter(managed);
    return out;
}

} // namespace

PYBIND11_MODULE(_conflux, m) {
    m.doc() = "Conflux's compiler and runtime (use the `conflux` package)";
    // Registered on the Python side's classes (python/conflux/__init__.py defines them, so they
    // are ordinary, documented classes); the translator maps the library's two error kinds.
    static py::object user_error_type, internal_error_type;
    m.def("_set_error_types", [](py::object user, py::object internal) {
        user_error_type = std::move(user);
        internal_error_type = std::move(internal);
    });
    py::register_exception_translator([](std::exception_ptr e) {
        try {
            if (e) std::rethrow_exception(e);
        } catch (const user_error& x) {
            PyErr_SetString(user_error_type ? user_error_type.ptr() : PyExc_ValueError, x.what());
        } catch (const internal_error& x) {
            PyErr_SetString(internal_error_type ? internal_error_type.ptr() : PyExc_RuntimeError,
                            x.what());
        }
    });

    py::class_<tensor_info>(m, "TensorInfo")
        .def_readonly("name", &tensor_info::name)
        .def_readonly("dtype", &tensor_info::dtype)
        .def_property_readonly("shape",
                               [](const tensor_info& t) { return py::tuple(py::cast(t.shape)); })
        .def("__repr__", [](const tensor_info& t) {
            std::string s = "TensorInfo(name='" + t.name + "', dtype='" + t.dtype + "', shape=(";
            for (std::size_t i = 0; i < t.shape.size(); ++i)
                s += std::to_string(t.shape[i]) +
                     (t.shape.size() == 1 || i + 1 < t.shape.size() ? "," : "");
            return s + "))";
        });

    py::class_<compile_request>(m, "CompileRequest")
        .def(py::init<>())
        .def_readwrite("target", &compile_request::target)
        .def_readwrite("fp16", &compile_request::fp16)
        .def_readwrite("bf16", &compile_request::bf16)
        .def_readwrite("narrow_outputs", &compile_request::narrow_outputs)
        .def_readwrite("batch", &compile_request::batch)
        .def_readwrite("input_dims", &compile_request::input_dims)
        .def_readwrite("tune", &compile_request::tune)
        .def_readwrite("problem_cache", &compile_request::problem_cache)
        .def_readwrite("arch", &compile_request::arch);

    py::class_<py_program>(m, "Program")
        .def_readonly("target", &py_program::target)
        .def_readonly("model", &py_program::model)
        .def_property_readonly(
            "inputs", [](const py_program& p) { return p.infos(p.input_names, p.input_shapes); })
        .def_property_readonly(
            "outputs", [](const py_program& p) { return p.infos(p.output_names, p.output_shapes); })
        .def_property_readonly("arch",
                               [](const py_program& p) -> std::optional<std::string> {
                                   if (!p.cuda) return std::nullopt;
                                   return p.cuda->stats().arch;
                               })
        .def("run", &py_program::run, py::arg("inputs"))
        .def("run_on_device", &py_program::run_on_device, py::arg("inputs"), py::arg("outputs"),
             py::arg("stream"), py::arg("cuda_graph"))
        // Per output, its strides in elements in run_on_device's buffers (the layout the graph
        // asked for need not be row-major).
        .def_property_readonly("output_strides",
                               [](const py_program& p) {
                                   std::vector<std::vector<std::size_t>> out;
                                   for (const shape& s : p.output_shapes)
                                       out.push_back(s.strides());
                                   return out;
                               })
        .def("perf", &py_program::perf, py::arg("inputs"), py::arg("warmup"), py::arg("iterations"),
             py::arg("cuda_graph"))
        .def("save", &py_program::save, py::arg("path"), py::arg("model"));

    m.def("compile_path", [](const std::string& path, const compile_request& r) {
        program p = onnx::import_model(path, import_options_of(r));
        py::gil_scoped_release unlocked;
        return compile_program(std::move(p), r);
    });
    m.def("compile_bytes", [](const py::bytes& bytes, const compile_request& r) {
        const std::string_view view(bytes);
        program p = onnx::import_model_bytes(view, import_options_of(r), "<bytes>");
        py::gil_scoped_release unlocked;
        return compile_program(std::move(p), r);
    });
    m.def("load", [](const std::filesystem::path& path) {
        saved_program saved;
        {
            py::gil_scoped_release unlocked;
            saved = load_program(path);
        }
        py_program p = saved.cuda ? py_program::of_cuda(std::move(*saved.cuda), saved.precision)
                                  : py_program::of_ref(std::move(*saved.reference));
        p.model = saved.header.value("model", std::string());
        return p;
    });
    m.def("available_devices", [] { return cuda::available_devices(); });
    m.def("dlpack_describe", &dlpack_describe, py::arg("tensor"), py::arg("stream"));
    m.attr("__version__") = CONFLUX_VERSION;
}
