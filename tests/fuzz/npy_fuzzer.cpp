// The .npy reader on arbitrary bytes. What reads must survive a write and a second read with
// the same dtype, lens and values (Fortran order comes back as C order).
#include "conflux/ir/npy.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace conflux;
    const auto& dir = fuzz::scratch();
    const std::string path = dir.write("input.npy", fuzz::as_text(data, size));
    argument value;
    if (!fuzz::user_error_is_fine([&] { value = read_npy(path); })) return 0;

    const std::string copy = dir.file("copy.npy");
    write_npy(copy, value);
    const argument again = read_npy(copy);
    if (!again.same_values(value))
        fuzz::finding("write_npy then read_npy changed " + to_string(value.get_shape()) + " into " +
                      to_string(again.get_shape()));
    return 0;
}
