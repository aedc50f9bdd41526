# Compiles DIR/MODEL.onnx for the host, runs it on DEVICE (cpu-task with two workers) with
# osprey-run and checks the output against DIR/MODEL.ref0.npy (bit for bit) and
# DIR/MODEL.float0.npy (SNR) with check_int8.py.
set(_module ${DIR}/${MODEL}.${DEVICE}.osp)
set(_output ${DIR}/${MODEL}.${DEVICE}.out0.npy)
file(REMOVE ${_module} ${_output})
execute_process(COMMAND ${COMPILE} ${DIR}/${MODEL}.onnx --target=host -o ${_module}
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "osprey-compile failed on ${MODEL}.onnx")
endif()
set(_args --module=${_module} --device=${DEVICE} --function=main
          --input=@${DIR}/${MODEL}.in0.npy --output=@${_output})
if(DEVICE STREQUAL "cpu-task")
  list(APPEND _args --task_workers=2)
endif()
execute_process(COMMAND ${RUN} ${_args} RESULT_VARIABLE _rc OUTPUT_QUIET)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "osprey-run failed on ${MODEL} (${DEVICE})")
endif()
execute_process(COMMAND ${PYTHON} ${CHECK} ${_output} ${DIR}/${MODEL}.ref0.npy
                        ${DIR}/${MODEL}.float0.npy ${DIR}/${MODEL}.onnx
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${MODEL} on ${DEVICE} does not match its integer reference")
endif()
