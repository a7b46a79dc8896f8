# Fails when BINARY depends on the CUDA driver library directly: Conflux links the CUDA runtime
# statically and must start (and compile ahead of time) on machines without a driver.
execute_process(COMMAND readelf -d ${BINARY} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${BINARY} failed")
endif()
if(dynamic MATCHES "libcuda\\.so")
  message(FATAL_ERROR "${BINARY} needs libcuda.so:\n${dynamic}")
endif()
# NVRTC_EXPECTED=OFF for a binary that never compiles kernels (the linker drops NVRTC there).
if(NOT NVRTC_EXPECTED STREQUAL "OFF" AND NOT dynamic MATCHES "libnvrtc\\.so")
  message(FATAL_ERROR "${BINARY} does not link NVRTC dynamically as expected:\n${dynamic}")
endif()
message(STATUS "${BINARY}: no libcuda dependency")
