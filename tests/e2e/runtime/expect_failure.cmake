# Runs COMMAND (a |-separated list) and checks it fails cleanly: exit code 1
# (not a crash or a signal) and stderr matching REGEX.
#   cmake -DCOMMAND=... -DREGEX=... -P expect_failure.cmake
string(REPLACE "|" ";" COMMAND "${COMMAND}")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
message(STATUS "exit: ${rc}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT rc STREQUAL "1")
  message(FATAL_ERROR "expected exit code 1, got '${rc}'")
endif()
if(NOT err MATCHES "${REGEX}")
  message(FATAL_ERROR "stderr does not match '${REGEX}'")
endif()
