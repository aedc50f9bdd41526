// Board support for Osprey's FreeRTOS images: start-up, FreeRTOS hooks,
// picolibc locks, RV32 trap vector and clock. See rtos_board.h.
#include "samples/rtos_loader/board/rtos_board.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/lock.h>
#include <unistd.h>

#include "FreeRTOS.h"
#include "runtime/base/platform/platform.h"
#include "semphr.h"
#include "task.h"

namespace {

int g_argc = 0;
char** g_argv = nullptr;

void MainTask(void*) {
  int rc = osprey_rtos_main(g_argc, g_argv);
  fflush(stdout);
  exit(rc);
}

#if defined(__riscv)
// The CLINT's mtime counts at configCPU_CLOCK_HZ (10 MHz on virt): a
// 100 ns clock for the platform layer, finer than the 1 ms tick.
int64_t MachineTimerNanos() {
  volatile uint32_t* mtime = reinterpret_cast<volatile uint32_t*>(configMTIME_BASE_ADDRESS);
  uint32_t high, low;
  do {
    high = mtime[1];
    low = mtime[0];
  } while (high != mtime[1]);
  uint64_t ticks = (uint64_t(high) << 32) | low;
  return int64_t(ticks * (1000000000ull / configCPU_CLOCK_HZ));
}
#endif

}  // namespace

#if defined(__riscv)
extern "C" void freertos_risc_v_trap_handler(void);
#endif

int main(int argc, char** argv) {
  g_argc = argc;
  g_argv = argv;
#if defined(__riscv)
  // Every trap (timer, ecall yields) goes to the FreeRTOS port.
  __asm__ volatile("csrw mtvec, %0" : : "r"(&freertos_risc_v_trap_handler));
  osprey::platform::SetMonotonicClock(&MachineTimerNanos);
#endif
  static StaticTask_t tcb;
  static StackType_t stack[OSPREY_RTOS_MAIN_STACK_BYTES / sizeof(StackType_t)];
  xTaskCreateStatic(&MainTask, "main", sizeof(stack) / sizeof(stack[0]), nullptr,
                    OSPREY_RTOS_MAIN_PRIORITY, stack, &tcb);
  vTaskStartScheduler();
  printf("error: the FreeRTOS scheduler did not start\n");
  return OSPREY_RTOS_EXIT_NO_SCHEDULER;
}

//===----------------------------------------------------------------------===//
// FreeRTOS hooks
//===----------------------------------------------------------------------===//

extern "C" void osprey_rtos_assert_failed(const char* file, int line) {
  printf("FreeRTOS assertion failed at %s:%d\n", file, line);
  fflush(stdout);
  _exit(OSPREY_RTOS_EXIT_ASSERT);
}

extern "C" void vApplicationStackOverflowHook(TaskHandle_t, char* name) {
  printf("FreeRTOS task '%s' overflowed its stack\n", name);
  fflush(stdout);
  _exit(OSPREY_RTOS_EXIT_STACK_OVERFLOW);
}

//===----------------------------------------------------------------------===//
// picolibc locks (malloc, stdio) on FreeRTOS mutexes
//===----------------------------------------------------------------------===//

// Before the scheduler runs there is one thread of execution: locking is a
// no-op then. A lock's mutex is created on first use.
struct __lock {
  StaticSemaphore_t storage;
  SemaphoreHandle_t handle;
  bool recursive;
};
// Declared by <sys/lock.h>; global variables have unmangled names in C++.
struct __lock __lock___libc_recursive_mutex = {{}, nullptr, true};

namespace {

bool SchedulerRunning() { return xTaskGetSchedulerState() != taskSCHEDULER_NOT_STARTED; }

SemaphoreHandle_t HandleOf(struct __lock* lock) {
  if (!lock->handle) {
    vTaskSuspendAll();
    if (!lock->handle) {
      lock->handle = lock->recursive ? xSemaphoreCreateRecursiveMutexStatic(&lock->storage)
                                     : xSemaphoreCreateMutexStatic(&lock->storage);
    }
    (void)xTaskResumeAll();
  }
  return lock->handle;
}

void InitLock(_LOCK_T* lock, bool recursive) {
  auto* created = static_cast<struct __lock*>(pvPortMalloc(sizeof(struct __lock)));
  if (created) {
    created->handle = nullptr;
    created->recursive = recursive;
  }
  *lock = created;
}

void CloseLock(_LOCK_T lock) {
  if (!lock || lock == &__lock___libc_recursive_mutex) return;
  if (lock->handle) vSemaphoreDelete(lock->handle);
  vPortFree(lock);
}

}  // namespace

extern "C" {

void __retarget_lock_init(_LOCK_T* lock) { InitLock(lock, false); }
void __retarget_lock_init_recursive(_LOCK_T* lock) { InitLock(lock, true); }
void __retarget_lock_close(_LOCK_T lock) { CloseLock(lock); }
void __retarget_lock_close_recursive(_LOCK_T lock) { CloseLock(lock); }

void __retarget_lock_acquire(_LOCK_T lock) {
  if (lock && SchedulerRunning()) xSemaphoreTake(HandleOf(lock), portMAX_DELAY);
}
void __retarget_lock_acquire_recursive(_LOCK_T lock) {
  if (lock && SchedulerRunning()) xSemaphoreTakeRecursive(HandleOf(lock), portMAX_DELAY);
}
int __retarget_lock_try_acquire(_LOCK_T lock) {
  if (!lock || !SchedulerRunning()) return 1;
  return xSemaphoreTake(HandleOf(lock), 0) == pdTRUE;
}
int __retarget_lock_try_acquire_recursive(_LOCK_T lock) {
  if (!lock || !SchedulerRunning()) return 1;
  return xSemaphoreTakeRecursive(HandleOf(lock), 0) == pdTRUE;
}
void __retarget_lock_release(_LOCK_T lock) {
  if (lock && SchedulerRunning()) xSemaphoreGive(HandleOf(lock));
}
void __retarget_lock_release_recursive(_LOCK_T lock) {
  if (lock && SchedulerRunning()) xSemaphoreGiveRecursive(HandleOf(lock));
}

}  // extern "C"
