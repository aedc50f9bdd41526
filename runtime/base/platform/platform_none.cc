// Single-threaded (bare-metal) implementation of the platform layer.
#include "runtime/base/platform/platform.h"

#if !OSPREY_HAVE_THREADS

namespace osprey::platform {

namespace {
ClockFn g_clock = nullptr;
}  // namespace

int64_t MonotonicNanos() { return g_clock ? g_clock() : 0; }
void SetMonotonicClock(ClockFn clock) { g_clock = clock; }

void SleepNanos(int64_t duration_ns) {
  if (!g_clock || duration_ns <= 0) return;
  int64_t end = g_clock() + duration_ns;
  while (g_clock() < end) {
  }
}
void YieldProcessor() {}
uint32_t ProcessorCount() { return 1; }

Mutex::Mutex() = default;
Mutex::~Mutex() = default;
void Mutex::Lock() {}
void Mutex::Unlock() {}

ConditionVariable::ConditionVariable() = default;
ConditionVariable::~ConditionVariable() = default;
// Nothing else runs, so nothing can change the predicate while we wait.
bool ConditionVariable::WaitUntil(Mutex&, int64_t) { return false; }
void ConditionVariable::NotifyOne() {}
void ConditionVariable::NotifyAll() {}

Thread::~Thread() = default;
Status Thread::Start(const ThreadOptions&, EntryFn, void*) {
  return UnavailableError("threads are not available in this build");
}
void Thread::Join() {}

}  // namespace osprey::platform

#endif  // !OSPREY_HAVE_THREADS
