# Toolchain: RISC-V 32 bare metal (RV32IMAFC, ilp32f) with clang-19 + picolibc.
#
#   cmake -S . -B build-riscv32 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/riscv32.cmake
#
# Debian ships no C++ library for riscv*-unknown-elf, so C++ compiles with
# clang-19 against libc++'s headers (header-only use: the runtime needs no
# compiled C++ library) configured for no threads, locales or wide chars,
# and picolibc's headers. Linking goes through the riscv64-unknown-elf-gcc
# driver: it picks picolibc's rv32imafc/ilp32f multilib, crt0, libgcc and
# picolibc.ld, which ld.lld cannot parse. The 'a' extension is required
# because std::atomic (ref counts) otherwise becomes __atomic_* libcalls that
# no Debian package provides for this target.
#
# Executables are linked for QEMU's riscv32 'virt' machine (RAM at
# 0x80000000; run with -bios none) and use semihosting for stdout and the
# exit code. CMAKE_CROSSCOMPILING_EMULATOR runs them under qemu-system-riscv32.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)

find_program(OSPREY_RISCV_CLANG NAMES clang-19 PATHS /usr/lib/llvm-19/bin REQUIRED)
find_program(OSPREY_RISCV_CLANGXX NAMES clang++-19 PATHS /usr/lib/llvm-19/bin REQUIRED)
find_program(OSPREY_RISCV_GCC NAMES riscv64-unknown-elf-gcc REQUIRED)
set(CMAKE_C_COMPILER ${OSPREY_RISCV_CLANG})
set(CMAKE_CXX_COMPILER ${OSPREY_RISCV_CLANGXX})
set(CMAKE_C_COMPILER_TARGET riscv32-unknown-elf)
set(CMAKE_CXX_COMPILER_TARGET riscv32-unknown-elf)
set(CMAKE_AR /usr/lib/llvm-19/bin/llvm-ar CACHE FILEPATH "")
set(CMAKE_RANLIB /usr/lib/llvm-19/bin/llvm-ranlib CACHE FILEPATH "")
set(CMAKE_SIZE riscv64-unknown-elf-size CACHE FILEPATH "")
set(CMAKE_NM riscv64-unknown-elf-nm CACHE FILEPATH "")
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(OSPREY_BOARD_FLASH_ORIGIN 0x80000000 CACHE STRING "Code memory origin")
set(OSPREY_BOARD_FLASH_SIZE 0x00200000 CACHE STRING "Code memory size")
set(OSPREY_BOARD_RAM_ORIGIN 0x80200000 CACHE STRING "RAM origin")
set(OSPREY_BOARD_RAM_SIZE 0x00200000 CACHE STRING "RAM size")
option(OSPREY_SEMIHOSTING
       "Link picolibc's semihosting crt0 and I/O (stdout, exit code to the debugger or QEMU)" ON)

set(_osprey_arch "-march=rv32imafc -mabi=ilp32f")
# For code built outside CMake's rules (e.g. shared objects for the ELF
# loader): the CPU flags, and the linker for shared objects (the
# riscv64-unknown-elf binutils do not support -shared).
set(OSPREY_TOOLCHAIN_CPU_FLAGS "${_osprey_arch}")
find_program(OSPREY_TOOLCHAIN_SHARED_LINKER NAMES ld.lld-19 PATHS /usr/lib/llvm-19/bin)
set(OSPREY_TOOLCHAIN_SHARED_LINK_FLAGS "")
set(_osprey_picolibc /usr/lib/picolibc/riscv64-unknown-elf)
set(_osprey_common "${_osprey_arch} -ffunction-sections -fdata-sections")
set(CMAKE_C_FLAGS_INIT "${_osprey_common} -isystem ${_osprey_picolibc}/include")
include(${CMAKE_CURRENT_LIST_DIR}/header_only_deps.cmake)
set(CMAKE_CXX_FLAGS_INIT
    "${_osprey_common} -nostdinc++ -isystem /usr/lib/llvm-19/include/c++/v1 -isystem ${_osprey_picolibc}/include -D_LIBCPP_HAS_NO_THREADS -D_LIBCPP_HAS_NO_LOCALIZATION -D_LIBCPP_HAS_NO_WIDE_CHARACTERS -fno-exceptions -fno-rtti -fno-threadsafe-statics ${OSPREY_CROSS_INCLUDE_FLAGS}")

set(_osprey_link "${_osprey_arch} --specs=picolibc.specs -Wl,--gc-sections")
string(APPEND _osprey_link
    " -Wl,--defsym=__flash=${OSPREY_BOARD_FLASH_ORIGIN},--defsym=__flash_size=${OSPREY_BOARD_FLASH_SIZE}"
    " -Wl,--defsym=__ram=${OSPREY_BOARD_RAM_ORIGIN},--defsym=__ram_size=${OSPREY_BOARD_RAM_SIZE}")
if(OSPREY_SEMIHOSTING)
  string(APPEND _osprey_link " --oslib=semihost --crt0=semihost")
endif()
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_osprey_link}")
# The gcc driver links; the compile flags (clang-only) stay out of the line.
set(CMAKE_C_LINK_EXECUTABLE
    "${OSPREY_RISCV_GCC} <CMAKE_C_LINK_FLAGS> <LINK_FLAGS> <OBJECTS> -o <TARGET> <LINK_LIBRARIES>")
set(CMAKE_CXX_LINK_EXECUTABLE
    "${OSPREY_RISCV_GCC} <CMAKE_CXX_LINK_FLAGS> <LINK_FLAGS> <OBJECTS> -o <TARGET> <LINK_LIBRARIES>")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR
    qemu-system-riscv32 -M virt -bios none -nographic -monitor none
    -semihosting-config enable=on,target=native -kernel)
