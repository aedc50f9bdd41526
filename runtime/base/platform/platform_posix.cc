// POSIX implementation of the platform layer.
#include "runtime/base/platform/platform.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "runtime/base/allocator.h"

#if defined(OSPREY_HAVE_MIMALLOC)
#include <mimalloc.h>
#endif

namespace osprey::platform {

int64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000ll + ts.tv_nsec;
}

void SetMonotonicClock(ClockFn) {}

void SleepNanos(int64_t duration_ns) {
  if (duration_ns <= 0) return;
  timespec ts{time_t(duration_ns / 1000000000ll), long(duration_ns % 1000000000ll)};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

void YieldProcessor() { sched_yield(); }

uint32_t ProcessorCount() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? uint32_t(n) : 1;
}

void* AllocateMemory(size_t size, size_t alignment) {
  if (size == 0) size = 1;
#if defined(OSPREY_HAVE_MIMALLOC)
  return mi_malloc_aligned(size, alignment);
#else
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  size_t rounded = (size + alignment - 1) & ~(alignment - 1);
  if (rounded < size) return nullptr;
  return aligned_alloc(alignment, rounded);
#endif
}

void FreeMemory(void* ptr) {
#if defined(OSPREY_HAVE_MIMALLOC)
  mi_free(ptr);
#else
  free(ptr);
#endif
}

Mutex::Mutex() { pthread_mutex_init(&mutex_, nullptr); }
Mutex::~Mutex() { pthread_mutex_destroy(&mutex_); }
void Mutex::Lock() { pthread_mutex_lock(&mutex_); }
void Mutex::Unlock() { pthread_mutex_unlock(&mutex_); }

ConditionVariable::ConditionVariable() {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&cond_, &attr);
  pthread_condattr_destroy(&attr);
}
ConditionVariable::~ConditionVariable() { pthread_cond_destroy(&cond_); }

bool ConditionVariable::WaitUntil(Mutex& mutex, int64_t deadline_ns) {
  if (deadline_ns == kInfiniteFuture) {
    pthread_cond_wait(&cond_, &mutex.mutex_);
    return true;
  }
  if (deadline_ns <= MonotonicNanos()) return false;
  timespec ts{time_t(deadline_ns / 1000000000ll), long(deadline_ns % 1000000000ll)};
  return pthread_cond_timedwait(&cond_, &mutex.mutex_, &ts) != ETIMEDOUT;
}
void ConditionVariable::NotifyOne() { pthread_cond_signal(&cond_); }
void ConditionVariable::NotifyAll() { pthread_cond_broadcast(&cond_); }

namespace {
struct StartInfo {
  Thread::EntryFn entry;
  void* arg;
};
void* ThreadMain(void* raw) {
  StartInfo info = *static_cast<StartInfo*>(raw);
  Allocator::Default()->Free(raw);
  info.entry(info.arg);
  return nullptr;
}
}  // namespace

Thread::~Thread() { Join(); }

Status Thread::Start(const ThreadOptions& options, EntryFn entry, void* arg) {
  if (started_) return FailedPreconditionError("thread already started");
  OSPREY_ASSIGN_OR_RETURN(StartInfo * info, Allocator::Default()->New<StartInfo>());
  info->entry = entry;
  info->arg = arg;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (options.stack_size) pthread_attr_setstacksize(&attr, options.stack_size);
  int rc = pthread_create(&thread_, &attr, &ThreadMain, info);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    Allocator::Default()->Free(info);
    return UnavailableError("pthread_create failed: %s", strerror(rc));
  }
  started_ = true;
#if defined(__linux__)
  if (options.name) {
    char name[16];
    strncpy(name, options.name, sizeof(name) - 1);
    name[sizeof(name) - 1] = 0;
    pthread_setname_np(thread_, name);
  }
  if (options.processor_affinity >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(options.processor_affinity % CPU_SETSIZE, &set);
    pthread_setaffinity_np(thread_, sizeof(set), &set);
  }
#endif
  return OkStatus();
}

void Thread::Join() {
  if (!started_) return;
  pthread_join(thread_, nullptr);
  started_ = false;
}

}  // namespace osprey::platform
