# MXQ_BUILD_FUZZERS: every target is compiled with libFuzzer's coverage instrumentation and ASan +
# UBSan, so the fuzz targets of fuzz/ see (and check) the library code they reach, not just their
# own; the fuzz targets alone link libFuzzer's main (fuzz/CMakeLists.txt).
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "MXQ_BUILD_FUZZERS needs clang (-DCMAKE_CXX_COMPILER=clang++ or the `fuzz` preset), "
                      "not ${CMAKE_CXX_COMPILER_ID}")
endif()
if(MXQ_WITH_CUDA)
  message(FATAL_ERROR "MXQ_BUILD_FUZZERS fuzzes the CPU backend: configure with -DMXQ_ENABLE_CUDA=OFF")
endif()
set(MXQ_FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=undefined)
add_compile_options(-fsanitize=fuzzer-no-link ${MXQ_FUZZ_SANITIZERS} -fno-omit-frame-pointer)
add_link_options(${MXQ_FUZZ_SANITIZERS})
