# Runs COMMAND, then CHECK (both |-separated lists); fails if either fails.
#   cmake -DCOMMAND=a|b -DCHECK=c|d -P run_and_check.cmake
foreach(_var COMMAND CHECK)
  string(REPLACE "|" ";" _cmd "${${_var}}")
  execute_process(COMMAND ${_cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 60)
  message(STATUS "${_var}: exit ${rc}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${_var} failed")
  endif()
endforeach()
