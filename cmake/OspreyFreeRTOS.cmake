# The FreeRTOS kernel for -DOSPREY_PLATFORM=freertos (included by the
# top-level CMakeLists.txt). The kernel is not part of the repository: the
# pinned release tarball (../shared/third_party/ next to the repository by
# default) is checked against its sha256 and unpacked into the build tree,
# then built as the static library osprey_freertos_kernel: the kernel, the
# port for the target CPU and one heap implementation, compiled with the
# application's FreeRTOSConfig.h. osprey_base links it, so its include
# directories (kernel, port, config) reach every runtime library.
#
#   OSPREY_FREERTOS_TARBALL     the kernel release tarball
#   OSPREY_FREERTOS_CONFIG_DIR  directory holding FreeRTOSConfig.h (default:
#                               the one samples/rtos_loader uses)
#   OSPREY_FREERTOS_PORT        port folder under portable/ (default from the
#                               CPU: GCC/ARM_CM4F or GCC/RISC-V)
#   OSPREY_FREERTOS_HEAP        heap implementation, portable/MemMang/heap_N.c
set(OSPREY_FREERTOS_VERSION 11.3.0)
set(OSPREY_FREERTOS_SHA256 6470de63e698670c3701dfb3efa2edc9eb59969e267e3144b81369c5fdfc6865)
set(OSPREY_FREERTOS_TARBALL
    "${OSPREY_ROOT_DIR}/../shared/third_party/freertos-kernel-${OSPREY_FREERTOS_VERSION}.tar.gz"
    CACHE FILEPATH "FreeRTOS kernel release tarball (sha256-checked, unpacked into the build tree)")
set(OSPREY_FREERTOS_CONFIG_DIR "${OSPREY_ROOT_DIR}/samples/rtos_loader/config"
    CACHE PATH "Directory with the application's FreeRTOSConfig.h")
set(OSPREY_FREERTOS_PORT "" CACHE STRING
    "FreeRTOS port folder under portable/ (empty: chosen from the target CPU)")
set(OSPREY_FREERTOS_HEAP 4 CACHE STRING "FreeRTOS heap implementation (portable/MemMang/heap_N.c)")

get_filename_component(_tarball "${OSPREY_FREERTOS_TARBALL}" ABSOLUTE)
if(NOT EXISTS "${_tarball}")
  message(FATAL_ERROR "OSPREY_PLATFORM=freertos: no FreeRTOS kernel tarball at ${_tarball} "
                      "(set OSPREY_FREERTOS_TARBALL)")
endif()
set(_src_root ${CMAKE_BINARY_DIR}/third_party)
set(OSPREY_FREERTOS_DIR ${_src_root}/freertos-kernel-${OSPREY_FREERTOS_VERSION})
set(_stamp ${_src_root}/freertos-kernel.sha256)
set(_unpacked "")
if(EXISTS ${_stamp})
  file(READ ${_stamp} _unpacked)
endif()
if(NOT _unpacked STREQUAL OSPREY_FREERTOS_SHA256 OR NOT EXISTS ${OSPREY_FREERTOS_DIR}/tasks.c)
  file(SHA256 "${_tarball}" _actual)
  if(NOT _actual STREQUAL OSPREY_FREERTOS_SHA256)
    message(FATAL_ERROR "${_tarball}: sha256 is ${_actual}, expected ${OSPREY_FREERTOS_SHA256}")
  endif()
  file(REMOVE_RECURSE ${OSPREY_FREERTOS_DIR})
  file(ARCHIVE_EXTRACT INPUT "${_tarball}" DESTINATION ${_src_root})
  if(NOT EXISTS ${OSPREY_FREERTOS_DIR}/tasks.c)
    message(FATAL_ERROR "${_tarball} did not unpack to ${OSPREY_FREERTOS_DIR}")
  endif()
  file(WRITE ${_stamp} ${OSPREY_FREERTOS_SHA256})
endif()
# Re-check when the tarball changes.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_tarball}")

if(NOT EXISTS "${OSPREY_FREERTOS_CONFIG_DIR}/FreeRTOSConfig.h")
  message(FATAL_ERROR "OSPREY_FREERTOS_CONFIG_DIR=${OSPREY_FREERTOS_CONFIG_DIR} has no "
                      "FreeRTOSConfig.h")
endif()

set(_port "${OSPREY_FREERTOS_PORT}")
if(NOT _port)
  if(CMAKE_SYSTEM_PROCESSOR STREQUAL "riscv32")
    set(_port GCC/RISC-V)
  elseif(CMAKE_SYSTEM_PROCESSOR STREQUAL "arm" AND OSPREY_TOOLCHAIN_CPU_FLAGS MATCHES "cortex-m4")
    set(_port GCC/ARM_CM4F)
  else()
    message(FATAL_ERROR "OSPREY_PLATFORM=freertos: no FreeRTOS port known for this CPU "
                        "(${CMAKE_SYSTEM_PROCESSOR} ${OSPREY_TOOLCHAIN_CPU_FLAGS}); set "
                        "OSPREY_FREERTOS_PORT to a folder under portable/")
  endif()
endif()
set(_port_dir ${OSPREY_FREERTOS_DIR}/portable/${_port})
if(NOT IS_DIRECTORY ${_port_dir})
  message(FATAL_ERROR "OSPREY_FREERTOS_PORT=${_port}: no ${_port_dir}")
endif()
file(GLOB _port_srcs ${_port_dir}/*.c ${_port_dir}/*.S)
set(_port_includes ${_port_dir})
if(_port STREQUAL "GCC/RISC-V")
  # The machine timer is the CLINT's (mtime/mtimecmp), no extra registers.
  list(APPEND _port_includes
       ${_port_dir}/chip_specific_extensions/RISCV_MTIME_CLINT_no_extensions)
endif()
# Preprocessed assembly goes through the C compiler driver (the toolchain
# files configure no ASM language), told that it is assembly. The RISC-V
# port's context switch does not read FreeRTOSConfig.h: whether it saves the
# floating-point registers comes from here, from the target's -march (a
# task switch that dropped them would corrupt every task using the FPU).
set(_asm_defs "")
if(_port STREQUAL "GCC/RISC-V" AND OSPREY_TOOLCHAIN_CPU_FLAGS MATCHES "-march=rv(32|64)[a-z]*[fdg]")
  list(APPEND _asm_defs configENABLE_FPU=1)
endif()
foreach(_src ${_port_srcs})
  if(_src MATCHES "\\.S$")
    set_source_files_properties(${_src} PROPERTIES LANGUAGE C
                                COMPILE_OPTIONS "-x;assembler-with-cpp"
                                COMPILE_DEFINITIONS "${_asm_defs}")
  endif()
endforeach()

add_library(osprey_freertos_kernel STATIC
  ${OSPREY_FREERTOS_DIR}/tasks.c
  ${OSPREY_FREERTOS_DIR}/queue.c
  ${OSPREY_FREERTOS_DIR}/list.c
  ${OSPREY_FREERTOS_DIR}/timers.c
  ${OSPREY_FREERTOS_DIR}/event_groups.c
  ${OSPREY_FREERTOS_DIR}/stream_buffer.c
  ${OSPREY_FREERTOS_DIR}/portable/MemMang/heap_${OSPREY_FREERTOS_HEAP}.c
  ${_port_srcs})
target_include_directories(osprey_freertos_kernel SYSTEM PUBLIC
  ${OSPREY_FREERTOS_CONFIG_DIR} ${OSPREY_FREERTOS_DIR}/include ${_port_includes})
message(STATUS "FreeRTOS ${OSPREY_FREERTOS_VERSION}: port ${_port}, "
               "heap_${OSPREY_FREERTOS_HEAP}, config ${OSPREY_FREERTOS_CONFIG_DIR}")
