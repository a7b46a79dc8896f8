#include "conflux/cuda/saved_program.hpp"

#include "conflux/ir/serialize.hpp"
#include "conflux/ops/program_serialization.hpp"
#include "conflux/util/errors.hpp"
#include "cuda/compile/compiled_program_impl.hpp"
#include "cuda/jit/nvrtc_compiler.hpp"
#include "cuda/runtime/lowered_program_json.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <ctime>

namespace conflux {

namespace cuda {

// compiled_program's constructor is private to compile(); a loaded program is made here.
struct saved_program_access {
    static const compiled_program::impl& of(const compiled_program& p) { return *p.impl_; }
    static compiled_program make(std::unique_ptr<compiled_program::impl> d) {
        compiled_program p;
        p.impl_ = std::move(d);
        return p;
    }
};

} // namespace cuda

namespace {

using nlohmann::json;

json stats_to_json(const cuda::compile_stats& s) {
    return {{"arch", s.arch},
            {"kernels", s.kernels},
            {"launches", s.launches},
            {"cache_hits", s.cache_hits},
            {"arena_bytes", s.arena_bytes},
            {"temporary_bytes", s.temporary_bytes},
            {"output_bytes", s.output_bytes},
            {"literal_bytes", s.literal_bytes},
            {"tf32_anchors", s.tf32_anchors},
            {"compile_seconds", s.compile_seconds},
            {"problems", s.problems},
            {"reused", s.reused},
            {"tuned", s.tuned},
            {"heuristic", s.heuristic},
            {"disqualified", s.disqualified},
            {"tuning_seconds", s.tuning_seconds}};
}

cuda::compile_stats stats_from_json(const json& j) {
    const std::string what = "section 'stats'";
    cuda::compile_stats s;
    s.arch = json_string(j, "arch", what);
    s.kernels = json_size(j, "kernels", what);
    s.launches = json_size(j, "launches", what);
    s.cache_hits = json_size(j, "cache_hits", what);
    s.arena_bytes = json_size(j, "arena_bytes", what);
    s.temporary_bytes = json_size(j, "temporary_bytes", what);
    s.output_bytes = json_size(j, "output_bytes", what);
    s.literal_bytes = json_size(j, "literal_bytes", what);
    s.tf32_anchors = json_size(j, "tf32_anchors", what);
    s.compile_seconds = json_number(j, "compile_seconds", what);
    s.problems = json_size(j, "problems", what);
    s.reused = json_size(j, "reused", what);
    s.tuned = json_size(j, "tuned", what);
    s.heuristic = json_size(j, "heuristic", what);
    s.disqualified = json_size(j, "disqualified", what);
    s.tuning_seconds = json_number(j, "tuning_seconds", what);
    return s;
}

json tensors_to_json(const std::vector<std::string>& names, const std::vector<shape>& shapes) {
    json out = json::array();
    for (std::size_t i = 0; i < names.size(); ++i)
        out.push_back({{"name", names[i]}, {"shape", to_string(shapes[i])}});
    return out;
}

std::string utc_now() {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

} // namespace

namespace {

json program_tensors(const program& p, bool outputs) {
    std::vector<std::string> names;
    std::vector<shape> shapes;
    if (!outputs) {
        for (instruction_ref param : p.main().parameters()) {
            names.push_back(param->get_operator().get_if<op::param>()->name_);
            shapes.push_back(param->get_shape());
        }
    } else if (instruction_ref ret = p.main().get_return(); ret != nullptr) {
        names = p.main().output_names();
        for (instruction_ref v : ret->inputs())
            shapes.push_back(v->get_shape());
    }
    return tensors_to_json(names, shapes);
}

json common_header(const std::string& target, const std::string& model) {
    return {
        {"conflux", CONFLUX_VERSION}, {"target", target}, {"model", model}, {"created", utc_now()}};
}

} // namespace

void save_program(const std::filesystem::path& path, const cuda::compiled_program& compiled,
                  const std::string& model, std::optional<dtype> precision,
                  const program* reference) {
    const auto& d = cuda::saved_program_access::of(compiled);
    json header = common_header("cuda", model);
    header.update(
        {{"arch", d.stats.arch},
         {"cuda_runtime", CUDART_VERSION},
         {"nvrtc", cuda::nvrtc_version()},
         {"precision", precision ? std::string(to_string(*precision)) : "as the model"},
         {"inputs", tensors_to_json(d.lowered.parameter_names, d.lowered.parameter_shapes)},
         {"outputs", tensors_to_json(d.lowered.output_names, d.lowered.output_shapes)},
         {"with_reference", reference != nullptr}});
    blob_list blobs;
    std::vector<std::pair<std::string, json>> sections;
    sections.emplace_back("stats", stats_to_json(d.stats));
    sections.emplace_back("cuda", cuda::lowered_program_to_json(d.lowered, d.binaries, blobs));
    if (reference != nullptr) sections.emplace_back("program", program_to_json(*reference, &blobs));
    write_program_file(path, std::move(header), sections, blobs);
}

void save_program(const std::filesystem::path& path, const program& p, const std::string& model) {
    json header = common_header("ref", model);
    header.update({{"inputs", program_tensors(p, false)}, {"outputs", program_tensors(p, true)}});
    blob_list blobs;
    json body = program_to_json(p, &blobs);
    write_program_file(path, std::move(header), {{"program", std::move(body)}}, blobs);
}

namespace {

// Runs `read`, naming the file in a user error of the content as the container's own do.
template <class Read> auto naming_the_file(const std::filesystem::path& path, Read read) {
    const std::string what = "program file '" + path.string() + "'";
    try {
        return read();
    } catch (const user_error& e) {
        const std::string message = e.what();
        if (message.rfind(what, 0) == 0) throw;
        throw_user_error(what, ": ", message);
    }
}

} // namespace

saved_program load_program(const std::filesystem::path& path, bool with_reference) {
    const auto file = std::make_shared<const program_file>(program_file::open(path));
    return naming_the_file(path, [&] {
        saved_program out;
        out.header = file->header();
        out.target = json_string(out.header, "target", "header");
        CONFLUX_USER_CHECK(out.target == "cuda" || out.target == "ref", "header.target: '",
                           out.target, "' is not a target this Conflux loads (cuda, ref)");
        if (out.target == "ref") {
            out.reference = program_from_json(file->section("program"), &file->blobs());
            return out;
        }
        const std::string precision = json_string(out.header, "precision", "header");
        if (precision != "as the model") {
            out.precision = parse_dtype(precision);
            CONFLUX_USER_CHECK(out.precision == dtype::f16 || out.precision == dtype::bf16,
                               "header.precision: '", precision, "' is not f16 or bf16");
        }
        auto d = std::make_unique<cuda::compiled_program::impl>();
        d->from_file = true;
        d->stats = stats_from_json(file->section("stats"));
        cuda::lowered_program_from_json(file->section("cuda"), file->blobs(), d->lowered,
                                        d->binaries);
        CONFLUX_USER_CHECK(d->stats.kernels == d->lowered.kernels.size(),
                           "section 'stats': ", d->stats.kernels,
                           " kernels, but section 'cuda' has ", d->lowered.kernels.size());
        out.cuda = cuda::saved_program_access::make(std::move(d));
        if (with_reference) {
            CONFLUX_USER_CHECK(file->has_section("program"),
                               "it was saved without the model (compile with --with-reference "
                               "to verify a saved program)");
            // From the file opened once: verify reads the model more than once.
            out.read_reference = [file, path] {
                return naming_the_file(path, [&] {
                    return program_from_json(file->section("program"), &file->blobs());
                });
            };
            out.reference = out.read_reference();
        }
        return out;
    });
}

} // namespace conflux
