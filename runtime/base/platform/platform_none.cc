// Single-threaded (bare-metal) implementation of the platform layer.
#include "runtime/base/platform/platform.h"

#include <stdlib.h>

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

// The C library's heap (picolibc: between .bss and the stack). Bare-metal
// applications usually hand the runtime a StaticArenaAllocator instead.
void* AllocateMemory(size_t size, size_t alignment) {
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (size == 0) size = 1;
  size_t rounded = (size + alignment - 1) & ~(alignment - 1);
  if (rounded < size) return nullptr;
  return aligned_alloc(alignment, rounded);
}
void FreeMemory(void* ptr) { free(ptr); }

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
