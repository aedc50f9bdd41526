// Board support shared by Osprey's FreeRTOS images on QEMU (mps2-an386,
// riscv32 virt): main() starts the scheduler with one task that runs the
// application's osprey_rtos_main(); FreeRTOS's hooks; picolibc's locks on
// FreeRTOS mutexes, so malloc and stdio are safe from several tasks; and on
// RV32 the trap vector and the machine timer as the platform clock.
#ifndef OSPREY_SAMPLES_RTOS_LOADER_BOARD_RTOS_BOARD_H_
#define OSPREY_SAMPLES_RTOS_LOADER_BOARD_RTOS_BOARD_H_

#ifdef __cplusplus
extern "C" {
#endif

// Priority and stack of the task running osprey_rtos_main. The stack is
// static (not from the FreeRTOS heap), sized for the VM interpreter plus
// compiled dispatches on cpu-sync, which keep their scratch on the caller's
// stack (at most 16 KiB for the embedded targets).
#define OSPREY_RTOS_MAIN_PRIORITY 2
#define OSPREY_RTOS_MAIN_STACK_BYTES (48 * 1024)

// Exit codes of board failures (the application uses small bit masks).
#define OSPREY_RTOS_EXIT_ASSERT 120
#define OSPREY_RTOS_EXIT_STACK_OVERFLOW 121
#define OSPREY_RTOS_EXIT_NO_SCHEDULER 122

// Defined by the application; runs in a task once the scheduler runs. Its
// result is the image's exit code (through semihosting).
int osprey_rtos_main(int argc, char** argv);

#ifdef __cplusplus
}
#endif

#endif  // OSPREY_SAMPLES_RTOS_LOADER_BOARD_RTOS_BOARD_H_
