# Runs `conflux run` (or SUBCOMMAND) on a model with .npy inputs and --output-dir, then compares
# every written file with the expected .npy of the same name. Invoked by CTest with cmake -P and:
#   CONFLUX, NPY_COMPARE  the two executables
#   MODEL_DIR             data/<model> with npy/<input>.npy and npy/expected/<output>.npy
#   WORK_DIR              scratch folder (recreated)
#   SUBCOMMAND            optional: the subcommand and its options, ;-separated (default run)
file(REMOVE_RECURSE ${WORK_DIR})
file(GLOB input_files ${MODEL_DIR}/npy/*.npy)
set(input_args)
foreach(f IN LISTS input_files)
  get_filename_component(name ${f} NAME_WE)
  list(APPEND input_args --input ${name}=${f})
endforeach()

if(NOT SUBCOMMAND)
  set(SUBCOMMAND run)
endif()
execute_process(
  COMMAND ${CONFLUX} ${SUBCOMMAND} ${MODEL_DIR}/model.onnx ${input_args} --output-dir
          ${WORK_DIR}/out
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "conflux ${SUBCOMMAND} exited with ${rc}")
endif()

file(GLOB expected_files ${MODEL_DIR}/npy/expected/*.npy)
if(NOT expected_files)
  message(FATAL_ERROR "no expected outputs in ${MODEL_DIR}/npy/expected")
endif()
set(pairs)
foreach(f IN LISTS expected_files)
  get_filename_component(name ${f} NAME)
  list(APPEND pairs ${f} ${WORK_DIR}/out/${name})
endforeach()
execute_process(COMMAND ${NPY_COMPARE} ${pairs} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "outputs differ from the expected values (npy_compare exited with ${rc})")
endif()
