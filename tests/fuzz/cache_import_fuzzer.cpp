// `conflux cache import` on arbitrary bytes: problem_cache::import_json into a store in memory.
// Entries that import must survive export_json and a second import unchanged, and an import
// that fails must leave the store as it was.
#include "conflux/cuda/problem_cache.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace conflux;
    using conflux::cuda::problem_cache;
    const auto& dir = fuzz::scratch();
    const std::string path = dir.write("import.json", fuzz::as_text(data, size));

    problem_cache cache = problem_cache::in_memory();
    cache.put({"fuzz-slot", "fuzz-key", "sm_90/132", "gemm-0", "64x64x32_w2x2_s3_k1", 1.5});
    const auto before = cache.list();
    if (!fuzz::user_error_is_fine([&] { cache.import_json(path); })) {
        if (cache.list() != before) fuzz::finding("a failed import changed the store");
        return 0;
    }

    const auto imported = cache.list();
    const std::string exported = dir.file("export.json");
    cache.export_json(exported);
    problem_cache again = problem_cache::in_memory();
    again.import_json(exported);
    if (again.list() != imported) fuzz::finding("export_json then import_json changed the entries");
    return 0;
}
