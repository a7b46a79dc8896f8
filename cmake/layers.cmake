# The library's layers (docs/ARCHITECTURE.md, "Layers"): one static library per layer, and a
# layer sees only its own headers and those of the layers it depends on, directly or not.
#
#   conflux_layer(<name> SOURCES <folders under src/> [HEADERS <paths under include/>]
#                 [DEPENDS <layers>] [LINK <other targets>] [EXTRA_SOURCES <files>])
#
# The headers a layer may include are gathered into a folder of its own in the build tree
# (layers/<name>/include and layers/<name>/src, symbolic links to the source tree), and that
# folder is the layer's only include path: `#include "cuda/tuning/tuner.hpp"` in a file of
# conflux_cuda_codegen is "file not found", so a wrong include fails the build, not a review.
# Linking follows the same edges (each layer links the layers it depends on), so a call into a
# higher layer fails to link as well.
#
# Executables that may see everything (the tool, tests, benchmarks) link `conflux` and get the
# whole include/ and src/ (conflux_full_view).

define_property(TARGET PROPERTY CONFLUX_VISIBLE_SOURCES BRIEF_DOCS "src/ folders a layer sees"
                FULL_DOCS "Its own and those of every layer below it.")
define_property(TARGET PROPERTY CONFLUX_VISIBLE_HEADERS BRIEF_DOCS "include/ paths a layer sees"
                FULL_DOCS "Its own and those of every layer below it.")

# Links `link` -> `target` for the layer's view, replacing what an earlier configure left.
function(_conflux_view_link target link)
  get_filename_component(parent ${link} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(IS_SYMLINK ${link} OR EXISTS ${link})
    file(REMOVE ${link})
  endif()
  file(CREATE_LINK ${target} ${link} SYMBOLIC)
endfunction()

function(conflux_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;HEADERS;DEPENDS;LINK;EXTRA_SOURCES" ${ARGN})
  set(files)
  foreach(dir IN LISTS L_SOURCES)
    file(GLOB found CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${dir}/*.cpp)
    list(APPEND files ${found})
  endforeach()
  set(target conflux_${name})
  add_library(${target} STATIC ${files} ${L_EXTRA_SOURCES})

  set(sources ${L_SOURCES})
  set(headers ${L_HEADERS})
  foreach(dep IN LISTS L_DEPENDS)
    get_target_property(dep_sources conflux_${dep} CONFLUX_VISIBLE_SOURCES)
    get_target_property(dep_headers conflux_${dep} CONFLUX_VISIBLE_HEADERS)
    list(APPEND sources ${dep_sources})
    list(APPEND headers ${dep_headers})
    target_link_libraries(${target} PUBLIC conflux_${dep})
  endforeach()
  list(REMOVE_DUPLICATES sources)
  list(REMOVE_DUPLICATES headers)
  set_target_properties(${target} PROPERTIES CONFLUX_VISIBLE_SOURCES "${sources}"
                                             CONFLUX_VISIBLE_HEADERS "${headers}")

  # The view. A path below one already linked is skipped (src/cuda/codegen brings
  # src/cuda/codegen/gemm along): a link made through a linked folder would land in the source
  # tree.
  set(view ${CMAKE_BINARY_DIR}/layers/${name})
  file(REMOVE_RECURSE ${view})
  foreach(root IN ITEMS src include)
    if(root STREQUAL "src")
      set(paths ${sources})
    else()
      set(paths ${headers})
    endif()
    list(SORT paths)
    set(linked)
    foreach(path IN LISTS paths)
      set(covered FALSE)
      foreach(done IN LISTS linked)
        string(FIND "${path}/" "${done}/" at)
        if(at EQUAL 0)
          set(covered TRUE)
        endif()
      endforeach()
      if(NOT covered)
        _conflux_view_link(${CMAKE_SOURCE_DIR}/${root}/${path} ${view}/${root}/${path})
        list(APPEND linked ${path})
      endif()
    endforeach()
  endforeach()
  target_include_directories(${target} PRIVATE ${view}/include ${view}/src)
  target_link_libraries(${target} PUBLIC ${L_LINK})
  target_compile_options(${target} PRIVATE ${CONFLUX_WARNINGS})
  target_precompile_headers(${target} REUSE_FROM conflux_pch)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
