# The sanitizer and fuzzing builds (scripts/sanitize.sh drives them):
#
#   -DCONFLUX_SANITIZE=ON  everything (library, tool, tests) with ASan + UBSan, any recoverable
#                          report made fatal; GCC or clang.
#   -DCONFLUX_FUZZ=ON      also the libFuzzer targets of tests/fuzz (clang only; implies
#                          CONFLUX_SANITIZE). The library then carries libFuzzer's coverage
#                          instrumentation too, so one build serves the sanitized tests and the
#                          fuzzers.
#
# Optimised at -O1 whatever CMAKE_BUILD_TYPE says (these flags come after the build type's):
# sanitizer reports keep usable stacks, and -O0 would make the NVRTC-heavy tests too slow.
# Debug information at level 1 (functions and line tables, no locals): a report's stack still
# names every file and line, and the build that CI times is faster than with full -g.
option(CONFLUX_SANITIZE "Build everything with ASan and UBSan" OFF)
option(CONFLUX_FUZZ "Build the libFuzzer targets in tests/fuzz (clang; implies CONFLUX_SANITIZE)"
       OFF)

if(CONFLUX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "CONFLUX_FUZZ needs clang (libFuzzer): configure with "
                        "-DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(CONFLUX_SANITIZE ON CACHE BOOL "Build everything with ASan and UBSan" FORCE)
endif()

if(CONFLUX_SANITIZE)
  set(CONFLUX_SANITIZER_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all
                              -fno-omit-frame-pointer)
  add_compile_options(${CONFLUX_SANITIZER_FLAGS} -O1 -g1
                      # Bounds of std::vector/string/span indexing, which ASan misses when the
                      # index stays inside the allocation's capacity.
                      -D_GLIBCXX_ASSERTIONS)
  add_link_options(${CONFLUX_SANITIZER_FLAGS})
  if(CONFLUX_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endif()
