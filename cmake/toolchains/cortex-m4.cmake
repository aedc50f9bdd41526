# Toolchain: Arm Cortex-M4F bare metal (arm-none-eabi-gcc + picolibc).
#
#   cmake -S . -B build-cortex-m4 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/cortex-m4.cmake
#
# Executables are linked for the memory map of QEMU's mps2-an386 board by
# default (code at 0x0, SRAM at 0x20000000; override OSPREY_BOARD_* for a
# real part) and talk to the host through semihosting (OSPREY_SEMIHOSTING).
# CMAKE_CROSSCOMPILING_EMULATOR runs them under qemu-system-arm, so ctest
# and add_test(COMMAND <target>) work unchanged.
set(OSPREY_TOOLCHAIN_CPU_FLAGS
    "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
set(OSPREY_QEMU_SYSTEM qemu-system-arm)
set(OSPREY_QEMU_MACHINE_ARGS -M mps2-an386 -cpu cortex-m4)
set(OSPREY_BOARD_FLASH_ORIGIN 0x00000000 CACHE STRING "Code memory origin")
set(OSPREY_BOARD_FLASH_SIZE 0x00400000 CACHE STRING "Code memory size")
set(OSPREY_BOARD_RAM_ORIGIN 0x20000000 CACHE STRING "RAM origin")
set(OSPREY_BOARD_RAM_SIZE 0x00400000 CACHE STRING "RAM size")
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi-picolibc.cmake)
