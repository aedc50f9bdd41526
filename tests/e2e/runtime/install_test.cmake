# Installs the runtime package into a fresh prefix, builds the standalone
# embedding sample against it with find_package(Osprey) and runs it.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DMODULE=... -P install_test.cmake
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --component OspreyRuntime --prefix ${prefix})
if(NOT EXISTS ${prefix}/lib/cmake/Osprey/OspreyConfig.cmake)
  message(FATAL_ERROR "OspreyConfig.cmake was not installed")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/samples/embedding/standalone -B ${WORK_DIR}/build
    -G Ninja -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/embedding_sample ${MODULE})
message(STATUS "${last_output}")
if(NOT last_output MATCHES "= 4xf32 \\[11 22 33 44\\]")
  message(FATAL_ERROR "unexpected output of the installed sample")
endif()
