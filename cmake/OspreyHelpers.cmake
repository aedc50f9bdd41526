# Build helpers shared by every folder.
#
#   osprey_runtime_library(NAME n SRCS ... DEPS ...)   runtime-side library:
#       no exceptions, no RTTI, builds for bare metal.
#   osprey_cc_library(NAME n SRCS ... DEPS ...)        host-side library.
#   osprey_cc_test(NAME n SRCS ... DEPS ... LABELS ...) GoogleTest executable + ctest.
#   osprey_cc_benchmark(NAME n SRCS ... DEPS ...)      Google Benchmark, label "bench".

set(OSPREY_ROOT_DIR ${CMAKE_CURRENT_LIST_DIR}/..)

set(OSPREY_RUNTIME_FLAGS -fno-exceptions -fno-rtti -Wall -Wextra -Wno-unused-parameter)

function(osprey_runtime_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;HDRS;DEPS;DEFINES" ${ARGN})
  if(ARG_SRCS)
    add_library(${ARG_NAME} STATIC ${ARG_SRCS} ${ARG_HDRS})
    target_include_directories(${ARG_NAME} PUBLIC
        $<BUILD_INTERFACE:${OSPREY_ROOT_DIR}> $<INSTALL_INTERFACE:include>)
    target_compile_options(${ARG_NAME} PRIVATE
        $<$<COMPILE_LANGUAGE:CXX>:${OSPREY_RUNTIME_FLAGS}>)
    target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
    target_compile_definitions(${ARG_NAME} PUBLIC ${ARG_DEFINES})
  else()
    add_library(${ARG_NAME} INTERFACE)
    target_include_directories(${ARG_NAME} INTERFACE
        $<BUILD_INTERFACE:${OSPREY_ROOT_DIR}> $<INSTALL_INTERFACE:include>)
    target_link_libraries(${ARG_NAME} INTERFACE ${ARG_DEPS})
  endif()
  set_property(GLOBAL APPEND PROPERTY OSPREY_RUNTIME_TARGETS ${ARG_NAME})
endfunction()

function(osprey_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;HDRS;DEPS;DEFINES" ${ARGN})
  add_library(${ARG_NAME} STATIC ${ARG_SRCS} ${ARG_HDRS})
  target_include_directories(${ARG_NAME} PUBLIC ${OSPREY_ROOT_DIR})
  target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
  target_compile_definitions(${ARG_NAME} PUBLIC ${ARG_DEFINES})
endfunction()

function(osprey_cc_test)
  if(NOT OSPREY_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS;ARGS;DATA_DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PRIVATE ${OSPREY_ROOT_DIR})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(ARG_DATA_DEPS)
    add_dependencies(${ARG_NAME} ${ARG_DATA_DEPS})
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} ${ARG_ARGS}
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT})
endfunction()

function(osprey_cc_benchmark)
  if(NOT OSPREY_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;ARGS;DATA_DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_include_directories(${ARG_NAME} PRIVATE ${OSPREY_ROOT_DIR})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} benchmark::benchmark benchmark::benchmark_main)
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench)
  if(ARG_DATA_DEPS)
    add_dependencies(${ARG_NAME} ${ARG_DATA_DEPS})
  endif()
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_NAME} --benchmark_min_time=0.05 ${ARG_ARGS}
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "bench" TIMEOUT 600)
endfunction()
