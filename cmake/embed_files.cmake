# Writes OUTPUT: a C++ file defining conflux::cuda::embedded_headers(), the device headers in
# INPUT_DIR as (include name, text) pairs, so NVRTC finds them without any path on the machine
# that runs the compiler. Run at build time by the rule in the top-level CMakeLists.txt.
file(GLOB headers RELATIVE ${INPUT_DIR} ${INPUT_DIR}/*.cuh)
list(SORT headers)
set(body "")
set(table "")
set(i 0)
foreach(h IN LISTS headers)
  file(READ ${INPUT_DIR}/${h} hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(APPEND body "const char file${i}[] = {${hex}0};\n")
  string(APPEND table "        {\"conflux/${h}\", file${i}},\n")
  math(EXPR i "${i} + 1")
endforeach()
file(WRITE ${OUTPUT}.tmp
"// Generated from src/cuda/kernels by cmake/embed_files.cmake; do not edit.
#include \"cuda/jit/embedded_headers.hpp\"
namespace conflux::cuda {
namespace {
${body}} // namespace
const std::vector<embedded_header>& embedded_headers() {
    static const std::vector<embedded_header> files = {
${table}    };
    return files;
}
} // namespace conflux::cuda
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
