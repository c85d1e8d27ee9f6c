# Script mode (cmake -P): install the built mxq into a scratch prefix, then configure,
# build and run tests/consumer against it.
#   -DMXQ_BINARY_DIR=<mxq build dir> -DMXQ_SOURCE_DIR=<mxq source dir>
cmake_minimum_required(VERSION 3.25)

foreach(var MXQ_BINARY_DIR MXQ_SOURCE_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run.cmake: ${var} is not set")
  endif()
endforeach()

set(work   "${MXQ_BINARY_DIR}/install_consumer")
set(prefix "${work}/prefix")
set(build  "${work}/build")
file(REMOVE_RECURSE "${work}")

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "install_consumer: step failed (${rc}): ${cmd}")
  endif()
endfunction()

# Reuse the generator of the main build so the consumer builds the same way.
set(gen_args)
if(EXISTS "${MXQ_BINARY_DIR}/CMakeCache.txt")
  file(STRINGS "${MXQ_BINARY_DIR}/CMakeCache.txt" gen REGEX "^CMAKE_GENERATOR:INTERNAL=")
  string(REPLACE "CMAKE_GENERATOR:INTERNAL=" "" gen "${gen}")
  if(gen)
    set(gen_args -G "${gen}")
  endif()
endif()

step("${CMAKE_COMMAND}" --install "${MXQ_BINARY_DIR}" --prefix "${prefix}")
step("${CMAKE_COMMAND}" -S "${MXQ_SOURCE_DIR}/tests/consumer" -B "${build}" ${gen_args}
     -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}")
step("${CMAKE_COMMAND}" --build "${build}")
step("${build}/mxq_consumer")
message(STATUS "install_consumer: OK")
