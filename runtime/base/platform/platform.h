// The small platform layer the runtime stands on: monotonic time, mutexes,
// condition variables and threads. Everything OS-specific in the runtime is
// behind this header; an RTOS port reimplements platform_*.cc only.
//
// Builds with OSPREY_HAVE_THREADS=0 (bare metal) get no-op mutexes,
// condition variables that return "timed out" at once (nobody else can
// signal), and thread creation that fails with UNAVAILABLE.
#ifndef OSPREY_RUNTIME_BASE_PLATFORM_PLATFORM_H_
#define OSPREY_RUNTIME_BASE_PLATFORM_PLATFORM_H_

#include <cstdint>
#include <limits>

#include "runtime/base/config.h"
#include "runtime/base/status.h"

#if OSPREY_HAVE_THREADS
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
// Number of logical processors (1 on bare metal).
uint32_t ProcessorCount();

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
#if OSPREY_HAVE_THREADS
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
#if OSPREY_HAVE_THREADS
  pthread_cond_t cond_;
#endif
};

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

struct ThreadOptions {
  const char* name = nullptr;     // Shown in debuggers (truncated to 15).
  int32_t processor_affinity = -1;  // Pin to this processor; -1: any.
  uint32_t stack_size = 0;        // 0: platform default.
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
#if OSPREY_HAVE_THREADS
  pthread_t thread_{};
#endif
};

}  // namespace osprey::platform

#endif  // OSPREY_RUNTIME_BASE_PLATFORM_PLATFORM_H_
