# Compiles DIR/MODEL.onnx for TARGET (default: the host; with COMPILE_ARGS, e.g.
# --accelerator=npu-v1), runs it
# on DEVICE (cpu-task with two workers; "cpu-sync,npu" for a CPU and the NPU) with osprey-run and
# checks the output against DIR/MODEL.ref0.npy (bit for bit) and DIR/MODEL.float0.npy (SNR) with
# check_int8.py. Files are named after TAG (default: DEVICE).
if(NOT TAG)
  set(TAG ${DEVICE})
endif()
if(NOT TARGET)
  set(TARGET host)
endif()
separate_arguments(_compile_args UNIX_COMMAND "${COMPILE_ARGS}")
set(_module ${DIR}/${MODEL}.${TAG}.osp)
set(_output ${DIR}/${MODEL}.${TAG}.out0.npy)
file(REMOVE ${_module} ${_output})
execute_process(COMMAND ${COMPILE} ${DIR}/${MODEL}.onnx --target=${TARGET} ${_compile_args} -o ${_module}
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "osprey-compile failed on ${MODEL}.onnx")
endif()
set(_args --module=${_module} --device=${DEVICE} --function=main
          --input=@${DIR}/${MODEL}.in0.npy --output=@${_output})
if(DEVICE MATCHES "cpu-task")
  list(APPEND _args --task_workers=2)
endif()
separate_arguments(_run_args UNIX_COMMAND "${RUN_ARGS}")
list(APPEND _args ${_run_args})
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
