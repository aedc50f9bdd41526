# Shared part of the Arm bare-metal toolchains (cortex-m4.cmake,
# cortex-m55.cmake): arm-none-eabi-gcc with Debian's picolibc and its
# libstdc++ build. The including file sets OSPREY_TOOLCHAIN_CPU_FLAGS,
# OSPREY_QEMU_SYSTEM, OSPREY_QEMU_MACHINE_ARGS and OSPREY_BOARD_*.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# Links code built outside CMake's rules (shared objects for the ELF loader).
set(OSPREY_TOOLCHAIN_SHARED_LINKER arm-none-eabi-gcc)
set(OSPREY_TOOLCHAIN_SHARED_LINK_FLAGS "${OSPREY_TOOLCHAIN_CPU_FLAGS}")
set(CMAKE_AR arm-none-eabi-ar CACHE FILEPATH "")
set(CMAKE_RANLIB arm-none-eabi-ranlib CACHE FILEPATH "")
set(CMAKE_SIZE arm-none-eabi-size CACHE FILEPATH "")
set(CMAKE_NM arm-none-eabi-nm CACHE FILEPATH "")
# Configure checks cannot link without a board memory map.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

option(OSPREY_SEMIHOSTING
       "Link picolibc's semihosting crt0 and I/O (stdout, exit code to the debugger or QEMU)" ON)

# picolibcpp.specs adds picolibc's include directory at compile time and its
# crt0, linker script and libc at link time.
set(_osprey_common
    "${OSPREY_TOOLCHAIN_CPU_FLAGS} --specs=picolibcpp.specs -ffunction-sections -fdata-sections")
set(CMAKE_C_FLAGS_INIT "${_osprey_common}")
include(${CMAKE_CURRENT_LIST_DIR}/header_only_deps.cmake)
set(CMAKE_CXX_FLAGS_INIT
    "${_osprey_common} -fno-exceptions -fno-rtti -fno-threadsafe-statics ${OSPREY_CROSS_INCLUDE_FLAGS}")
set(CMAKE_ASM_FLAGS_INIT "${OSPREY_TOOLCHAIN_CPU_FLAGS}")

set(_osprey_link "-Wl,--gc-sections")
string(APPEND _osprey_link
    " -Wl,--defsym=__flash=${OSPREY_BOARD_FLASH_ORIGIN},--defsym=__flash_size=${OSPREY_BOARD_FLASH_SIZE}"
    " -Wl,--defsym=__ram=${OSPREY_BOARD_RAM_ORIGIN},--defsym=__ram_size=${OSPREY_BOARD_RAM_SIZE}")
if(OSPREY_SEMIHOSTING)
  string(APPEND _osprey_link " --oslib=semihost --crt0=semihost")
endif()
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_osprey_link}")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# ctest runs cross-built executables under QEMU; the executable follows
# -kernel and its exit code comes back through semihosting.
set(CMAKE_CROSSCOMPILING_EMULATOR
    ${OSPREY_QEMU_SYSTEM} ${OSPREY_QEMU_MACHINE_ARGS} -nographic -monitor none
    -semihosting-config enable=on,target=native -kernel)
