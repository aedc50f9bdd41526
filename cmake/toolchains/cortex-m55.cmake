# Toolchain: Arm Cortex-M55 bare metal (arm-none-eabi-gcc + picolibc), linked
# for QEMU's mps3-an547 board (ITCM at 0x0, DTCM at 0x20000000). Helium
# (MVE) code generation is on; see cortex-m4.cmake for the common notes.
set(OSPREY_TOOLCHAIN_CPU_FLAGS "-mcpu=cortex-m55 -mthumb -mfloat-abi=hard")
set(OSPREY_QEMU_SYSTEM qemu-system-arm)
set(OSPREY_QEMU_MACHINE_ARGS -M mps3-an547)
set(OSPREY_BOARD_FLASH_ORIGIN 0x00000000 CACHE STRING "Code memory origin")
set(OSPREY_BOARD_FLASH_SIZE 0x00080000 CACHE STRING "Code memory size")
set(OSPREY_BOARD_RAM_ORIGIN 0x20000000 CACHE STRING "RAM origin")
set(OSPREY_BOARD_RAM_SIZE 0x00080000 CACHE STRING "RAM size")
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi-picolibc.cmake)
