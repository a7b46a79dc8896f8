// npy_compare EXPECTED ACTUAL [EXPECTED ACTUAL]...: compares .npy files pairwise with the
// conformance tolerances; prints one line per pair; exits 1 when any differs, 2 on bad usage or
// an unreadable file.
#include "compare.hpp"

#include "conflux/ir/npy.hpp"

#include <iostream>

int main(int argc, char** argv) {
    if (argc < 3 || argc % 2 != 1) {
        std::cerr << "usage: npy_compare EXPECTED.npy ACTUAL.npy [EXPECTED.npy ACTUAL.npy]...\n";
        return 2;
    }
    int status = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        try {
            auto expected = conflux::read_npy(argv[i]);
            auto actual = conflux::read_npy(argv[i + 1]);
            if (auto why = conflux::conformance::compare(expected, actual)) {
                std::cout << "DIFF " << argv[i + 1] << ": " << *why << "\n";
                status = 1;
            } else {
                std::cout << "SAME " << argv[i + 1] << "\n";
            }
        } catch (const conflux::user_error& e) {
            std::cerr << "npy_compare: error: " << e.what() << "\n";
            return 2;
        }
    }
    return status;
}
