/* FreeRTOS configuration of Osprey's FreeRTOS builds (-DOSPREY_PLATFORM=
 * freertos): the rtos_loader firmware and the platform checks, on QEMU's
 * mps2-an386 (Cortex-M4F, port GCC/ARM_CM4F) and riscv32 virt (port
 * GCC/RISC-V with the CLINT timer). An application with its own
 * configuration points OSPREY_FREERTOS_CONFIG_DIR at it; what the Osprey
 * port needs from it is marked "Osprey:" (docs/porting.md). */
#ifndef OSPREY_SAMPLES_RTOS_LOADER_FREERTOS_CONFIG_H_
#define OSPREY_SAMPLES_RTOS_LOADER_FREERTOS_CONFIG_H_

/*-------------------------------------------------------------------------*/
/* Scheduler                                                               */
/*-------------------------------------------------------------------------*/

#define configUSE_PREEMPTION 1
#define configUSE_TIME_SLICING 1
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 0
#define configUSE_TICKLESS_IDLE 0
#define configTICK_RATE_HZ 1000
#define configMAX_PRIORITIES 8
#define configMINIMAL_STACK_SIZE 256 /* words */
#define configMAX_TASK_NAME_LEN 16
#define configTICK_TYPE_WIDTH_IN_BITS TICK_TYPE_WIDTH_32_BITS
#define configIDLE_SHOULD_YIELD 1
#define configNUMBER_OF_CORES 1 /* Osprey: single core */
/* Osprey: condition variables use the last notification index. */
#define configUSE_TASK_NOTIFICATIONS 1
#define configTASK_NOTIFICATION_ARRAY_ENTRIES 2

/*-------------------------------------------------------------------------*/
/* Synchronization and memory                                              */
/*-------------------------------------------------------------------------*/

#define configUSE_MUTEXES 1 /* Osprey */
#define configUSE_RECURSIVE_MUTEXES 1 /* picolibc's locks (rtos_board.c) */
#define configUSE_COUNTING_SEMAPHORES 1
#define configQUEUE_REGISTRY_SIZE 0
#define configUSE_QUEUE_SETS 0
#define configSUPPORT_STATIC_ALLOCATION 1 /* Osprey: tasks, mutexes */
#define configSUPPORT_DYNAMIC_ALLOCATION 1
#define configKERNEL_PROVIDED_STATIC_MEMORY 1 /* idle and timer tasks */
/* The heap behind Allocator::Default() (heap_4, in .bss). */
#ifndef configTOTAL_HEAP_SIZE
#define configTOTAL_HEAP_SIZE (2 * 1024 * 1024)
#endif
#define configAPPLICATION_ALLOCATED_HEAP 0
#define configSTACK_DEPTH_TYPE uint32_t
#define configMESSAGE_BUFFER_LENGTH_TYPE size_t
/* Each task gets its own picolibc TLS block (errno, the task executor's
 * current worker). */
#define configUSE_PICOLIBC_TLS 1

/*-------------------------------------------------------------------------*/
/* Hooks and checks                                                        */
/*-------------------------------------------------------------------------*/

#define configUSE_IDLE_HOOK 0
#define configUSE_TICK_HOOK 0
#define configUSE_MALLOC_FAILED_HOOK 0 /* Osprey reports RESOURCE_EXHAUSTED */
#define configCHECK_FOR_STACK_OVERFLOW 2
#define configUSE_TRACE_FACILITY 0
#define configGENERATE_RUN_TIME_STATS 0
#define configUSE_TIMERS 1
#define configTIMER_TASK_PRIORITY (configMAX_PRIORITIES - 1)
#define configTIMER_QUEUE_LENGTH 4
#define configTIMER_TASK_STACK_DEPTH configMINIMAL_STACK_SIZE
#define configUSE_CO_ROUTINES 0
#define configENABLE_BACKWARD_COMPATIBILITY 0

#ifdef __cplusplus
extern "C" {
#endif
void osprey_rtos_assert_failed(const char* file, int line);
#ifdef __cplusplus
}
#endif
#define configASSERT(x) \
  do {                  \
    if (!(x)) osprey_rtos_assert_failed(__FILE__, __LINE__); \
  } while (0)

/* Osprey: the API the port calls. */
#define INCLUDE_vTaskPrioritySet 1
#define INCLUDE_uxTaskPriorityGet 1
#define INCLUDE_vTaskDelete 1
#define INCLUDE_vTaskSuspend 1
#define INCLUDE_vTaskDelay 1
#define INCLUDE_xTaskDelayUntil 1
#define INCLUDE_xTaskGetCurrentTaskHandle 1
#define INCLUDE_xTaskGetSchedulerState 1
#define INCLUDE_uxTaskGetStackHighWaterMark 1
#define INCLUDE_eTaskGetState 1

/*-------------------------------------------------------------------------*/
/* Ports                                                                   */
/*-------------------------------------------------------------------------*/

#if defined(__riscv)
/* riscv32 virt: the CLINT's machine timer runs at 10 MHz. */
#define configCPU_CLOCK_HZ 10000000
#define configMTIME_BASE_ADDRESS 0x0200BFF8UL
#define configMTIMECMP_BASE_ADDRESS 0x02004000UL
#define configISR_STACK_SIZE_WORDS 1024
/* The port's assembly saves the FPU registers with configENABLE_FPU=1,
 * which cmake/OspreyFreeRTOS.cmake passes from the target's -march. */
#elif defined(__ARM_ARCH)
/* mps2-an386: 25 MHz system clock, 3 NVIC priority bits. */
#define configCPU_CLOCK_HZ 25000000
#define configPRIO_BITS 3
#define configKERNEL_INTERRUPT_PRIORITY (7 << (8 - configPRIO_BITS))
#define configMAX_SYSCALL_INTERRUPT_PRIORITY (5 << (8 - configPRIO_BITS))
#define configMAX_API_CALL_INTERRUPT_PRIORITY configMAX_SYSCALL_INTERRUPT_PRIORITY
/* The port's handlers under the names picolibc's vector table uses. */
#define vPortSVCHandler arm_svc_isr
#define xPortPendSVHandler arm_pendsv_isr
#define xPortSysTickHandler arm_systick_isr
#endif

#endif /* OSPREY_SAMPLES_RTOS_LOADER_FREERTOS_CONFIG_H_ */
