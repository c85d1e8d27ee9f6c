# Runs `mxq demo` and checks that it exits 0 and prints a table row for every format and direction
# of both tensors. Usage: cmake -DMXQ=<path to mxq> -P check_demo.cmake
execute_process(COMMAND "${MXQ}" demo --backend cpu
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mxq demo exited with ${rc}")
endif()
if(NOT out MATCHES "backend: cpu")
  message(FATAL_ERROR "mxq demo did not name the backend that ran")
endif()
foreach(tensor activations expert_weights)
  foreach(format mxfp8 mxfp8_e5m2 mxfp4 nvfp4)
    foreach(direction rowwise colwise both)
      # One row per (tensor, format, direction), ending in a finite SQNR and timings.
      if(NOT out MATCHES "${tensor} +${format} +${direction} +[0-9x]+[^\n]* [0-9]+\\.[0-9][0-9](/[0-9]+\\.[0-9][0-9])? +[0-9.]+ +[0-9.]+\n")
        message(FATAL_ERROR "mxq demo: no table row for ${tensor} ${format} ${direction}")
      endif()
    endforeach()
  endforeach()
endforeach()
