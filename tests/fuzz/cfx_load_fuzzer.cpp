// Loading a compiled-program file (.cfx) whose content is arbitrary but whose digest matches: the
// digest only detects accidents, so everything behind it must hold against any bytes. The input
// is a .cfx without its 16-byte digest; the harness writes the file length into the preamble and
// appends the digest, so every mutation reaches the header, section and blob checks, the CBOR
// parser, the lowered-program checks and the IR program reader. A program that loads must print,
// save and load again to the same listing.
#include "conflux/cuda/saved_program.hpp"
#include "fuzz_support.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <sstream>

namespace {

std::string listing(const conflux::saved_program& p) {
    std::ostringstream os;
    if (p.cuda) p.cuda->print(os);
    if (p.reference) os << p.reference->to_string();
    return os.str();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace conflux;
    std::string bytes(reinterpret_cast<const char*>(data), size);
    if (bytes.size() >= 24) {
        const std::uint64_t total = bytes.size() + sizeof(XXH128_canonical_t);
        for (int i = 0; i < 8; ++i)
            bytes[16 + i] = char((total >> (8 * i)) & 0xff);
    }
    XXH128_canonical_t digest;
    XXH128_canonicalFromHash(&digest, XXH3_128bits(bytes.data(), bytes.size()));
    bytes.append(reinterpret_cast<const char*>(&digest), sizeof digest);
    const auto& dir = fuzz::scratch();
    const std::string path = dir.write("program.cfx", bytes);

    saved_program loaded;
    if (!fuzz::user_error_is_fine([&] { loaded = load_program(path, true); })) return 0;
    const std::string text = listing(loaded);
    const std::string again = dir.file("again.cfx");
    if (loaded.cuda)
        save_program(again, *loaded.cuda, "fuzz", loaded.precision,
                     loaded.reference ? &*loaded.reference : nullptr);
    else
        save_program(again, *loaded.reference, "fuzz");
    if (listing(load_program(again, true)) != text)
        fuzz::finding("a loaded program saved and loaded again prints differently");
    return 0;
}
