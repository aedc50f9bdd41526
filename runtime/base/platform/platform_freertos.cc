// FreeRTOS implementation of the platform layer: threads are tasks whose
// control block and stack come from the FreeRTOS heap, mutexes are FreeRTOS
// mutexes (priority inheritance), condition variables park tasks on a task
// notification, time is the tick count (or a finer clock the application
// installs), and memory is the FreeRTOS heap (pvPortMalloc).
//
// Requirements on the application's FreeRTOSConfig.h are checked below;
// docs/porting.md lists them. Every call except MonotonicNanos,
// SetMonotonicClock, ProcessorCount, AllocateMemory, FreeMemory and
// constructing or destroying a Mutex or ConditionVariable must come from a
// task (after vTaskStartScheduler), never from an interrupt handler.
#include <new>

#include "runtime/base/platform/platform.h"

#if !defined(configSUPPORT_STATIC_ALLOCATION) || configSUPPORT_STATIC_ALLOCATION != 1
#error "the Osprey FreeRTOS port needs configSUPPORT_STATIC_ALLOCATION 1"
#endif
#if !defined(configUSE_MUTEXES) || configUSE_MUTEXES != 1
#error "the Osprey FreeRTOS port needs configUSE_MUTEXES 1"
#endif
#if !INCLUDE_vTaskSuspend || !INCLUDE_vTaskDelete || !INCLUDE_vTaskDelay || \
    !INCLUDE_xTaskGetCurrentTaskHandle || !INCLUDE_uxTaskPriorityGet
// Also listed in docs/porting.md.
#error "the Osprey FreeRTOS port needs the INCLUDE_ options checked here"
#endif
#if defined(configNUMBER_OF_CORES) && configNUMBER_OF_CORES != 1
// Join deletes a finished task and frees its stack at once, which is only
// safe when the task cannot still be running on another core.
#error "the Osprey FreeRTOS port supports single-core FreeRTOS (configNUMBER_OF_CORES 1)"
#endif

// The task notification index condition variables use. The application
// must leave it alone; by default the last one, so index 0 (what
// xTaskNotifyGive uses) stays the application's.
#ifndef OSPREY_FREERTOS_NOTIFY_INDEX
#define OSPREY_FREERTOS_NOTIFY_INDEX (configTASK_NOTIFICATION_ARRAY_ENTRIES - 1)
#endif
#if OSPREY_FREERTOS_NOTIFY_INDEX < 1 || \
    OSPREY_FREERTOS_NOTIFY_INDEX >= configTASK_NOTIFICATION_ARRAY_ENTRIES
#error "set configTASK_NOTIFICATION_ARRAY_ENTRIES to 2 or more (OSPREY_FREERTOS_NOTIFY_INDEX)"
#endif

// Stack of threads started without ThreadOptions::stack_size, in bytes.
#ifndef OSPREY_FREERTOS_DEFAULT_STACK_SIZE
#define OSPREY_FREERTOS_DEFAULT_STACK_SIZE (16 * 1024)
#endif

namespace osprey::platform {

namespace {

constexpr UBaseType_t kNotifyIndex = OSPREY_FREERTOS_NOTIFY_INDEX;
static_assert(1000000000ll % configTICK_RATE_HZ == 0,
              "configTICK_RATE_HZ must divide one second into whole nanoseconds");
constexpr int64_t kTickNanos = 1000000000ll / configTICK_RATE_HZ;

ClockFn g_clock = nullptr;

// The tick count extended to 64 bits: wrap-arounds are counted when seen,
// so some call must come at least once per wrap period (49 days at 1 kHz
// with 32-bit ticks).
int64_t TickCount() {
  if constexpr (sizeof(TickType_t) >= sizeof(int64_t)) {
    return int64_t(xTaskGetTickCount());
  } else {
    static uint32_t wraps = 0;
    static TickType_t last = 0;
    taskENTER_CRITICAL();
    TickType_t now = xTaskGetTickCount();
    if (now < last) ++wraps;
    last = now;
    int64_t ticks = (int64_t(wraps) << (8 * sizeof(TickType_t))) | int64_t(now);
    taskEXIT_CRITICAL();
    return ticks;
  }
}

// Ticks to block so that at least |duration_ns| pass (a tick period may be
// partly over when the block starts), capped below portMAX_DELAY, which
// means "forever".
TickType_t TicksFor(int64_t duration_ns) {
  if (duration_ns <= 0) return 0;
  int64_t ticks = duration_ns / kTickNanos + 2;
  if (ticks >= int64_t(portMAX_DELAY)) return portMAX_DELAY - 1;
  return TickType_t(ticks);
}

}  // namespace

//===----------------------------------------------------------------------===//
// Time
//===----------------------------------------------------------------------===//

int64_t MonotonicNanos() {
  ClockFn clock = g_clock;
  return clock ? clock() : TickCount() * kTickNanos;
}

void SetMonotonicClock(ClockFn clock) { g_clock = clock; }

// Ticks and the clock can disagree for a while (an installed clock keeps
// running while the guest is stalled, and the tick interrupts then catch up
// in a burst), so sleeps and waits end by the clock, not by tick counts.
void SleepNanos(int64_t duration_ns) {
  if (duration_ns <= 0) return;
  const int64_t end = MonotonicNanos() + duration_ns;
  for (int64_t now = MonotonicNanos(); now < end; now = MonotonicNanos()) {
    vTaskDelay(TicksFor(end - now));
  }
}

void YieldProcessor() { taskYIELD(); }

uint32_t ProcessorCount() { return 1; }

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

// The FreeRTOS heap aligns to portBYTE_ALIGNMENT only: over-allocate and keep
// the block's start in the word before the aligned pointer.
void* AllocateMemory(size_t size, size_t alignment) {
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (size > SIZE_MAX - alignment - sizeof(void*)) return nullptr;
  void* raw = pvPortMalloc(size + alignment - 1 + sizeof(void*));
  if (!raw) return nullptr;
  uintptr_t aligned = (uintptr_t(raw) + sizeof(void*) + alignment - 1) & ~uintptr_t(alignment - 1);
  reinterpret_cast<void**>(aligned)[-1] = raw;
  return reinterpret_cast<void*>(aligned);
}

void FreeMemory(void* ptr) {
  if (ptr) vPortFree(static_cast<void**>(ptr)[-1]);
}

//===----------------------------------------------------------------------===//
// Mutex
//===----------------------------------------------------------------------===//

Mutex::Mutex() : handle_(xSemaphoreCreateMutexStatic(&storage_)) {}
Mutex::~Mutex() { vSemaphoreDelete(handle_); }
void Mutex::Lock() { xSemaphoreTake(handle_, portMAX_DELAY); }
void Mutex::Unlock() { xSemaphoreGive(handle_); }

//===----------------------------------------------------------------------===//
// ConditionVariable
//===----------------------------------------------------------------------===//

// A task blocked in WaitUntil; lives on its stack. The list and |notified|
// change only with the scheduler suspended, and a notifier unlinks the
// waiter and gives its notification in one such section, so no notification
// can reach a task after it left WaitUntil.
struct ConditionVariable::Waiter {
  TaskHandle_t task;
  Waiter* next;
  bool notified;
};

ConditionVariable::ConditionVariable() = default;
ConditionVariable::~ConditionVariable() = default;

bool ConditionVariable::WaitUntil(Mutex& mutex, int64_t deadline_ns) {
  TickType_t ticks = portMAX_DELAY;
  if (deadline_ns != kInfiniteFuture) {
    const int64_t now = MonotonicNanos();
    if (deadline_ns <= now) return false;
    ticks = TicksFor(deadline_ns - now);
  }
  Waiter self{xTaskGetCurrentTaskHandle(), nullptr, false};
  // A notification left over from an earlier wait that timed out just as it
  // was notified must not end this one early.
  (void)xTaskNotifyStateClearIndexed(nullptr, kNotifyIndex);
  (void)ulTaskNotifyValueClearIndexed(nullptr, kNotifyIndex, ~uint32_t(0));
  vTaskSuspendAll();
  Waiter** link = &waiters_;
  while (*link) link = &(*link)->next;  // FIFO: the longest waiter wakes first.
  *link = &self;
  (void)xTaskResumeAll();

  mutex.Unlock();
  bool notified = false;
  for (bool expired = false; !notified && !expired;) {
    (void)ulTaskNotifyTakeIndexed(kNotifyIndex, pdTRUE, ticks);
    vTaskSuspendAll();
    notified = self.notified;
    if (!notified) {
      // Timed out by ticks: done if the clock agrees, else wait on.
      const int64_t now = MonotonicNanos();
      expired = deadline_ns != kInfiniteFuture && now >= deadline_ns;
      if (expired) {
        for (link = &waiters_; *link; link = &(*link)->next) {
          if (*link == &self) {
            *link = self.next;
            break;
          }
        }
      } else if (deadline_ns != kInfiniteFuture) {
        ticks = TicksFor(deadline_ns - now);
      }
    }
    (void)xTaskResumeAll();
  }
  mutex.Lock();
  return notified;
}

void ConditionVariable::NotifyOne() {
  vTaskSuspendAll();
  if (Waiter* waiter = waiters_) {
    waiters_ = waiter->next;
    waiter->notified = true;
    xTaskNotifyGiveIndexed(waiter->task, kNotifyIndex);
  }
  (void)xTaskResumeAll();
}

void ConditionVariable::NotifyAll() {
  vTaskSuspendAll();
  while (Waiter* waiter = waiters_) {
    waiters_ = waiter->next;
    waiter->notified = true;
    xTaskNotifyGiveIndexed(waiter->task, kNotifyIndex);
  }
  (void)xTaskResumeAll();
}

//===----------------------------------------------------------------------===//
// Thread
//===----------------------------------------------------------------------===//

// One allocation per thread: this header, then the stack.
struct Thread::Block {
  StaticTask_t tcb;
  StaticSemaphore_t done_storage;
  SemaphoreHandle_t done;  // Given when |entry| has returned.
  TaskHandle_t task;
  EntryFn entry;
  void* arg;
};

namespace {
constexpr size_t kStackAlignment = 16;
size_t AlignUp(size_t value, size_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}
}  // namespace

Thread::~Thread() { Join(); }

Status Thread::Start(const ThreadOptions& options, EntryFn entry, void* arg) {
  if (started_) return FailedPreconditionError("thread already started");
  UBaseType_t priority =
      options.priority < 0 ? uxTaskPriorityGet(nullptr) : UBaseType_t(options.priority);
  if (priority >= UBaseType_t(configMAX_PRIORITIES)) {
    return InvalidArgumentError("thread priority %d is not below configMAX_PRIORITIES (%d)",
                                int(options.priority), int(configMAX_PRIORITIES));
  }
  size_t stack_bytes = options.stack_size ? options.stack_size : OSPREY_FREERTOS_DEFAULT_STACK_SIZE;
  const size_t min_bytes = size_t(configMINIMAL_STACK_SIZE) * sizeof(StackType_t);
  if (stack_bytes < min_bytes) stack_bytes = min_bytes;
  const size_t depth = (stack_bytes + sizeof(StackType_t) - 1) / sizeof(StackType_t);
  const size_t header = AlignUp(sizeof(Block), kStackAlignment);
  void* memory = AllocateMemory(header + depth * sizeof(StackType_t), kStackAlignment);
  if (!memory) {
    return ResourceExhaustedError("no FreeRTOS heap for a thread with a %zu-byte stack",
                                  stack_bytes);
  }
  Block* block = new (memory) Block();
  block->entry = entry;
  block->arg = arg;
  block->done = xSemaphoreCreateBinaryStatic(&block->done_storage);
  auto* stack = reinterpret_cast<StackType_t*>(static_cast<uint8_t*>(memory) + header);
  // Runs |entry|, reports completion and parks: Join deletes the task, so
  // its stack is never freed while the task could still run.
  TaskFunction_t task_main = [](void* raw) {
    auto* self = static_cast<Block*>(raw);
    self->entry(self->arg);
    xSemaphoreGive(self->done);
    vTaskSuspend(nullptr);
  };
  block->task = xTaskCreateStatic(task_main, options.name ? options.name : "osprey",
                                  uint32_t(depth), block, priority, stack, &block->tcb);
  if (!block->task) {
    vSemaphoreDelete(block->done);
    block->~Block();
    FreeMemory(memory);
    return UnavailableError("xTaskCreateStatic failed");
  }
  block_ = block;
  started_ = true;
  return OkStatus();
}

void Thread::Join() {
  if (!started_) return;
  xSemaphoreTake(block_->done, portMAX_DELAY);
  // The task is suspended or about to suspend itself; on a single core it
  // is not running while we are, so deleting it and freeing its stack is
  // safe.
  vTaskDelete(block_->task);
  vSemaphoreDelete(block_->done);
  block_->~Block();
  FreeMemory(block_);
  block_ = nullptr;
  started_ = false;
}

}  // namespace osprey::platform
