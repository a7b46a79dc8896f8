# Fails when a unit test file does not open a namespace named after itself: the unit tests build
# in unity batches (tests/CMakeLists.txt), where file-local helpers and `using` directives outside
# such a namespace meet those of the other files in the batch.
file(GLOB sources ${UNIT_DIR}/*.cpp)
set(missing "")
foreach(source IN LISTS sources)
  get_filename_component(stem ${source} NAME_WE)
  file(READ ${source} text)
  string(FIND "${text}" "namespace ${stem} {" at)
  if(at EQUAL -1)
    list(APPEND missing ${source})
  endif()
endforeach()
if(missing)
  list(JOIN missing "\n  " files)
  message(FATAL_ERROR "unit test files without a namespace named after the file (put everything "
                      "after the includes in `namespace <file name> {`):\n  ${files}")
endif()
list(LENGTH sources count)
message(STATUS "${count} unit test files, each in its own namespace")
