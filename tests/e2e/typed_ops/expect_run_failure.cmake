# Compiles DIR/MODEL.onnx for the host, runs it on DEVICE with its inputs and
# checks the run fails cleanly (exit code 1, no crash) with an error that
# names the failing dispatch region and says an index was out of range.
set(_module ${DIR}/${MODEL}.${DEVICE}.osp)
file(REMOVE ${_module})
execute_process(COMMAND ${COMPILE} ${DIR}/${MODEL}.onnx --target=host -o ${_module}
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "osprey-compile failed on ${MODEL}.onnx")
endif()
file(GLOB _inputs ${DIR}/${MODEL}.in*.npy)
list(SORT _inputs)
set(_args --module=${_module} --device=${DEVICE} --function=main)
foreach(_f ${_inputs})
  list(APPEND _args --input=@${_f})
endforeach()
execute_process(COMMAND ${RUN} ${_args} RESULT_VARIABLE _rc
                OUTPUT_VARIABLE _out ERROR_VARIABLE _err TIMEOUT 60)
message(STATUS "exit: ${_rc}\nstdout:\n${_out}\nstderr:\n${_err}")
if(NOT _rc STREQUAL "1")
  message(FATAL_ERROR "expected exit code 1, got '${_rc}'")
endif()
if(NOT _err MATCHES "export '[A-Za-z0-9_]+_dispatch_[0-9]+'.*index out of range")
  message(FATAL_ERROR "the error does not name the dispatch region and the out-of-range index")
endif()
