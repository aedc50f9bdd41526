#include "runtime/base/platform/platform.h"

#include <gtest/gtest.h>

#include "runtime/base/platform/platform_checks.h"

#include <atomic>

namespace osprey::platform {
namespace {

TEST(PlatformTest, MonotonicTimeAdvances) {
  int64_t a = MonotonicNanos();
  SleepNanos(1000000);
  EXPECT_GE(MonotonicNanos() - a, 1000000);
}

TEST(PlatformTest, ConditionVariableTimesOut) {
  Mutex mutex;
  ConditionVariable cv;
  MutexLock lock(mutex);
  int64_t start = MonotonicNanos();
  EXPECT_FALSE(cv.WaitUntil(mutex, start + 2000000));
  EXPECT_GE(MonotonicNanos() - start, 2000000);
  EXPECT_FALSE(cv.WaitUntil(mutex, kImmediatePast));
}

struct Shared {
  Mutex mutex;
  ConditionVariable cv;
  bool ready = false;
};

TEST(PlatformTest, ThreadSignalsWaiter) {
  Shared shared;
  Thread thread;
  ASSERT_TRUE(thread
                  .Start({.name = "signaller"},
                         [](void* arg) {
                           auto* s = static_cast<Shared*>(arg);
                           MutexLock lock(s->mutex);
                           s->ready = true;
                           s->cv.NotifyAll();
                         },
                         &shared)
                  .ok());
  {
    MutexLock lock(shared.mutex);
    int64_t deadline = DeadlineFromTimeout(5000000000ll);
    while (!shared.ready) {
      if (!shared.cv.WaitUntil(shared.mutex, deadline)) break;
    }
    EXPECT_TRUE(shared.ready);
  }
  thread.Join();
}

// The checks every threaded port must pass (they also run on FreeRTOS under
// QEMU, samples/rtos_loader). POSIX threads have no priorities to test.
TEST(PlatformTest, ConformanceChecks) {
  PlatformCheckOptions options;
  options.verbose = true;
  EXPECT_EQ(RunPlatformChecks(options), 0);
}

TEST(PlatformTest, DeadlineSaturates) {
  EXPECT_EQ(DeadlineFromTimeout(kInfiniteFuture), kInfiniteFuture);
  EXPECT_EQ(DeadlineFromTimeout(0), kImmediatePast);
}

}  // namespace
}  // namespace osprey::platform
