// The small platform layer the runtime stands on: monotonic time, mutexes,
// condition variables, threads and the memory behind Allocator::Default().
// Everything OS-specific in the runtime is behind this header. One port is
// compiled per build, chosen with -DOSPREY_PLATFORM (docs/porting.md):
//
//   posix     platform_posix.cc: pthreads, clock_gettime, mimalloc or libc.
//   none      platform_none.cc: bare metal, single-threaded: no-op mutexes,
//             condition variables that return "timed out" at once (nobody
//             else can signal), thread creation fails with UNAVAILABLE.
//   freertos  platform_freertos.cc: FreeRTOS tasks, mutexes and task
//             notifications, the tick count, the FreeRTOS heap.
//
// A port adds one platform_<name>.cc, its native members below, and a
// case in runtime/base/CMakeLists.txt.
#ifndef OSPREY_RUNTIME_BASE_PLATFORM_PLATFORM_H_
#define OSPREY_RUNTIME_BASE_PLATFORM_PLATFORM_H_

#include <cstddef>
#include <cstdint>
#include <limits>

#include "runtime/base/config.h"
#include "runtime/base/status.h"

#if OSPREY_PLATFORM_FREERTOS
// The application's FreeRTOSConfig.h comes with these (see docs/porting.md).
#include "FreeRTOS.h"
#include "semphr.h"
#include "task.h"
#elif OSPREY_PLATFORM_POSIX
#include <pthread.h>
#endif

namespace osprey::platform {

//===----------------------------------------------------------------------===//
// Time
//===----------------------------------------------------------------------===//

// Absolute monotonic times and deadlines in nanoseconds.
inline constexpr int64_t kInfiniteFuture = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kImmediatePast = std::numeric_limits<int64_t>::min();

// Nanoseconds since an arbitrary fixed point. Bare-metal builds return what
// the clock installed with SetMonotonicClock() says (0 if none).
int64_t MonotonicNanos();
using ClockFn = int64_t (*)();
void SetMonotonicClock(ClockFn clock);

// Converts a relative timeout to an absolute deadline, saturating.
int64_t DeadlineFromTimeout(int64_t timeout_ns);

void SleepNanos(int64_t duration_ns);
void YieldProcessor();
// Number of logical processors (1 on bare metal and single-core RTOSes).
uint32_t ProcessorCount();

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

// The memory behind Allocator::Default(): |size| bytes aligned to
// |alignment| (a power of two), or null when exhausted. Thread-safe.
// POSIX: mimalloc or libc; none: the C library's heap; FreeRTOS: the
// FreeRTOS heap (pvPortMalloc).
void* AllocateMemory(size_t size, size_t alignment);
// Frees memory from AllocateMemory(); null is ignored.
void FreeMemory(void* ptr);

//===----------------------------------------------------------------------===//
// Synchronization
//===----------------------------------------------------------------------===//

class Mutex {
 public:
  Mutex();
  ~Mutex();
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void Lock();
  void Unlock();

 private:
  friend class ConditionVariable;
#if OSPREY_PLATFORM_FREERTOS
  StaticSemaphore_t storage_;
  SemaphoreHandle_t handle_;
#elif OSPREY_PLATFORM_POSIX
  pthread_mutex_t mutex_;
#endif
};

class MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) : mutex_(mutex) { mutex_.Lock(); }
  ~MutexLock() { mutex_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mutex_;
};

class ConditionVariable {
 public:
  ConditionVariable();
  ~ConditionVariable();
  ConditionVariable(const ConditionVariable&) = delete;
  ConditionVariable& operator=(const ConditionVariable&) = delete;

  // Waits with |mutex| held until notified or |deadline_ns| passes (spurious
  // wake-ups possible: re-check the predicate). Returns false on timeout.
  bool WaitUntil(Mutex& mutex, int64_t deadline_ns);
  void NotifyOne();
  void NotifyAll();

 private:
#if OSPREY_PLATFORM_FREERTOS
  // Tasks blocked in WaitUntil, each woken by a task notification.
  struct Waiter;
  Waiter* waiters_ = nullptr;
#elif OSPREY_PLATFORM_POSIX
  pthread_cond_t cond_;
#endif
};

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

struct ThreadOptions {
  const char* name = nullptr;     // Shown in debuggers (truncated to 15).
  int32_t processor_affinity = -1;  // Pin to this processor; -1: any.
  uint32_t stack_size = 0;        // Bytes; 0: platform default.
  // Scheduling priority where the platform has them (FreeRTOS: task
  // priority, 0 .. configMAX_PRIORITIES - 1); -1: the priority of the
  // thread calling Start(). POSIX threads ignore it.
  int32_t priority = -1;
};

class Thread {
 public:
  using EntryFn = void (*)(void* arg);

  Thread() = default;
  ~Thread();  // Joins if still joinable.
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;

  // Starts |entry(arg)| on a new thread. UNAVAILABLE without threads.
  Status Start(const ThreadOptions& options, EntryFn entry, void* arg);
  // Waits for the thread to finish. No-op if not started.
  void Join();
  bool joinable() const { return started_; }

 private:
  bool started_ = false;
#if OSPREY_PLATFORM_FREERTOS
  // Task control block, stack and completion semaphore, one allocation.
  struct Block;
  Block* block_ = nullptr;
#elif OSPREY_PLATFORM_POSIX
  pthread_t thread_{};
#endif
};

}  // namespace osprey::platform

#endif  // OSPREY_RUNTIME_BASE_PLATFORM_PLATFORM_H_
