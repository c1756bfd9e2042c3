# Runs a program and writes its standard output to a file; fails when the program fails. Used
# at build time to generate the man page and the shell completions from the fencelock binary
# itself (cmake/install.cmake), so that they always describe the binary that is installed.
#
#   cmake -DPROGRAM=<exe> -DARGS=<arg;arg...> -DOUTPUT=<file> -P run_to_file.cmake

foreach(var PROGRAM OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_to_file.cmake: ${var} is not set")
  endif()
endforeach()
execute_process(COMMAND "${PROGRAM}" ${ARGS} OUTPUT_FILE "${OUTPUT}.tmp" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE "${OUTPUT}.tmp")
  message(FATAL_ERROR "run_to_file.cmake: ${PROGRAM} ${ARGS} failed: ${rc}")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
