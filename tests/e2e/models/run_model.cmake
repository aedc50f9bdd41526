# Compiles DIR/MODEL.onnx (DIR/MODEL.opOPSET.onnx when OPSET is set) for the
# host, runs it on DEVICE with osprey-run and checks the output against
# DIR/MODEL.ref0.npy with check_output.py (TOLERANCE relative to the scale of
# the reference output).
set(_onnx ${MODEL}.onnx)
set(_tag ${MODEL}.${DEVICE})
if(OPSET)
  set(_onnx ${MODEL}.op${OPSET}.onnx)
  set(_tag ${MODEL}.op${OPSET}.${DEVICE})
endif()
set(_module ${DIR}/${_tag}.osp)
set(_output ${DIR}/${_tag}.out0.npy)
file(REMOVE ${_module} ${_output})
execute_process(COMMAND ${COMPILE} ${DIR}/${_onnx} --target=host -o ${_module}
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "osprey-compile failed on ${_onnx}")
endif()
set(_args --module=${_module} --device=${DEVICE} --function=main
          --input=@${DIR}/${MODEL}.in0.npy --output=@${_output})
if(WORKERS)
  list(APPEND _args --task_workers=${WORKERS})
endif()
execute_process(COMMAND ${RUN} ${_args} RESULT_VARIABLE _rc OUTPUT_QUIET)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "osprey-run failed on ${MODEL} (${DEVICE})")
endif()
execute_process(COMMAND ${PYTHON} ${CHECK} ${_output} ${DIR}/${MODEL}.ref0.npy ${TOLERANCE}
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${_onnx} on ${DEVICE} does not match its reference output")
endif()
