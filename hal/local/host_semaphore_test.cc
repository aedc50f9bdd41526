// HostSemaphore: timepoint callbacks and cancellation (the blocking API is
// covered by the CTS).
#include "hal/local/host_semaphore.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"

namespace osprey::hal::local {
namespace {

struct Record {
  int calls = 0;
  StatusCode code = StatusCode::kUnknown;
  std::string message;
};

void OnTimepoint(void* user_data, HostSemaphore*, Status status) {
  auto* record = static_cast<Record*>(user_data);
  ++record->calls;
  record->code = status.code();
  record->message = status.message();
}

TEST(HostSemaphoreTest, TimepointFiresWhenValueReached) {
  auto semaphore = HostSemaphore::Create(0, Allocator::Default());
  ASSERT_TRUE(semaphore.ok());
  Record record;
  SemaphoreTimepoint timepoint;
  (*semaphore)->EnqueueTimepoint(&timepoint, 5, &OnTimepoint, &record);
  EXPECT_EQ(record.calls, 0);
  ASSERT_TRUE((*semaphore)->Signal(4).ok());
  EXPECT_EQ(record.calls, 0);
  ASSERT_TRUE((*semaphore)->Signal(6).ok());
  EXPECT_EQ(record.calls, 1);
  EXPECT_EQ(record.code, StatusCode::kOk);
  ASSERT_TRUE((*semaphore)->Signal(7).ok());
  EXPECT_EQ(record.calls, 1);  // Once only.
  EXPECT_FALSE((*semaphore)->CancelTimepoint(&timepoint));
}

TEST(HostSemaphoreTest, TimepointForReachedValueFiresImmediately) {
  auto semaphore = HostSemaphore::Create(10, Allocator::Default());
  ASSERT_TRUE(semaphore.ok());
  Record record;
  SemaphoreTimepoint timepoint;
  (*semaphore)->EnqueueTimepoint(&timepoint, 10, &OnTimepoint, &record);
  EXPECT_EQ(record.calls, 1);
  EXPECT_EQ(record.code, StatusCode::kOk);
}

TEST(HostSemaphoreTest, FailureFiresAllTimepointsWithTheError) {
  auto semaphore = HostSemaphore::Create(0, Allocator::Default());
  ASSERT_TRUE(semaphore.ok());
  Record a, b, late;
  SemaphoreTimepoint ta, tb, tlate;
  (*semaphore)->EnqueueTimepoint(&ta, 1, &OnTimepoint, &a);
  (*semaphore)->EnqueueTimepoint(&tb, 100, &OnTimepoint, &b);
  (*semaphore)->Fail(DataLossError("disk on fire"));
  EXPECT_EQ(a.calls, 1);
  EXPECT_EQ(b.calls, 1);
  EXPECT_EQ(a.code, StatusCode::kAborted);
  EXPECT_NE(b.message.find("disk on fire"), std::string::npos);
  (*semaphore)->EnqueueTimepoint(&tlate, 1, &OnTimepoint, &late);
  EXPECT_EQ(late.calls, 1);
  EXPECT_EQ(late.code, StatusCode::kAborted);
}

TEST(HostSemaphoreTest, CancelledTimepointNeverFires) {
  auto semaphore = HostSemaphore::Create(0, Allocator::Default());
  ASSERT_TRUE(semaphore.ok());
  Record record, other;
  SemaphoreTimepoint timepoint, other_timepoint;
  (*semaphore)->EnqueueTimepoint(&timepoint, 2, &OnTimepoint, &record);
  (*semaphore)->EnqueueTimepoint(&other_timepoint, 2, &OnTimepoint, &other);
  EXPECT_TRUE((*semaphore)->CancelTimepoint(&timepoint));
  EXPECT_FALSE((*semaphore)->CancelTimepoint(&timepoint));
  ASSERT_TRUE((*semaphore)->Signal(3).ok());
  EXPECT_EQ(record.calls, 0);
  EXPECT_EQ(other.calls, 1);
}

TEST(HostSemaphoreTest, DestructionAbortsPendingTimepoints) {
  Record record;
  SemaphoreTimepoint timepoint;
  {
    auto semaphore = HostSemaphore::Create(0, Allocator::Default());
    ASSERT_TRUE(semaphore.ok());
    (*semaphore)->EnqueueTimepoint(&timepoint, 1, &OnTimepoint, &record);
  }
  EXPECT_EQ(record.calls, 1);
  EXPECT_EQ(record.code, StatusCode::kAborted);
}

// A callback that re-enters the semaphore (as a scheduler chaining work
// would) must not deadlock.
void Reenter(void* user_data, HostSemaphore* semaphore, Status status) {
  auto* count = static_cast<int*>(user_data);
  ++*count;
  auto value = semaphore->Query();
  EXPECT_TRUE(value.ok());
  if (*count == 1) EXPECT_TRUE(semaphore->Signal(*value + 1).ok());
}

TEST(HostSemaphoreTest, CallbacksMayReenter) {
  auto semaphore = HostSemaphore::Create(0, Allocator::Default());
  ASSERT_TRUE(semaphore.ok());
  int count = 0;
  SemaphoreTimepoint timepoint;
  (*semaphore)->EnqueueTimepoint(&timepoint, 1, &Reenter, &count);
  ASSERT_TRUE((*semaphore)->Signal(1).ok());
  EXPECT_EQ(count, 1);
  EXPECT_EQ(*(*semaphore)->Query(), 2u);
}

TEST(HostSemaphoreTest, ConcurrentSignalsAndTimepoints) {
  auto semaphore = HostSemaphore::Create(0, Allocator::Default());
  ASSERT_TRUE(semaphore.ok());
  constexpr int kCount = 200;
  std::atomic<int> fired{0};
  std::vector<SemaphoreTimepoint> timepoints(kCount);
  std::thread signaller([&] {
    for (int i = 1; i <= kCount; ++i) ASSERT_TRUE((*semaphore)->Signal(uint64_t(i)).ok());
  });
  for (int i = 0; i < kCount; ++i) {
    (*semaphore)->EnqueueTimepoint(
        &timepoints[i], uint64_t(i + 1),
        [](void* user_data, HostSemaphore*, Status status) {
          EXPECT_TRUE(status.ok());
          static_cast<std::atomic<int>*>(user_data)->fetch_add(1);
        },
        &fired);
  }
  signaller.join();
  EXPECT_EQ(fired.load(), kCount);
}

TEST(WaitAnyHostSemaphoresTest, WakesOnFirstReached) {
  auto a = HostSemaphore::Create(0, Allocator::Default());
  auto b = HostSemaphore::Create(0, Allocator::Default());
  ASSERT_TRUE(a.ok() && b.ok());
  Semaphore* list[] = {a->get(), b->get()};
  uint64_t values[] = {1, 1};
  const int64_t start = platform::MonotonicNanos();
  EXPECT_EQ(WaitAnyHostSemaphores({list, values}, platform::DeadlineFromTimeout(10'000'000)).code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_GE(platform::MonotonicNanos() - start, 9'000'000);
  std::thread signaller([&] {
    platform::SleepNanos(2'000'000);
    EXPECT_TRUE((*b)->Signal(1).ok());
  });
  EXPECT_TRUE(WaitAnyHostSemaphores({list, values}, platform::kInfiniteFuture).ok());
  signaller.join();
  // Already reached: returns at once; the other timepoint is withdrawn.
  EXPECT_TRUE(WaitAnyHostSemaphores({list, values}, platform::kImmediatePast).ok());
  EXPECT_TRUE((*a)->Signal(1).ok());
}

TEST(WaitAnyHostSemaphoresTest, FailureEndsTheWait) {
  auto a = HostSemaphore::Create(0, Allocator::Default());
  auto b = HostSemaphore::Create(0, Allocator::Default());
  ASSERT_TRUE(a.ok() && b.ok());
  Semaphore* list[] = {a->get(), b->get()};
  uint64_t values[] = {1, 1};
  std::thread failer([&] {
    platform::SleepNanos(2'000'000);
    (*a)->Fail(DataLossError("gone"));
  });
  Status status = WaitAnyHostSemaphores({list, values}, platform::kInfiniteFuture);
  failer.join();
  EXPECT_EQ(status.code(), StatusCode::kAborted);
  EXPECT_NE(std::string(status.message()).find("gone"), std::string::npos);
}

TEST(WaitAnyHostSemaphoresTest, RejectsOtherSemaphores) {
  struct Other : public Semaphore {
    StatusOr<uint64_t> Query() override { return uint64_t(0); }
    Status Signal(uint64_t) override { return OkStatus(); }
    void Fail(Status) override {}
    Status Wait(uint64_t, int64_t) override { return OkStatus(); }
  };
  Other other;
  Semaphore* list[] = {&other};
  uint64_t values[] = {1};
  EXPECT_EQ(WaitAnyHostSemaphores({list, values}, 0).code(), StatusCode::kInvalidArgument);
}

TEST(WaitAnyHostSemaphoresTest, StressRacingSignals) {
  for (int round = 0; round < 200; ++round) {
    auto a = HostSemaphore::Create(0, Allocator::Default());
    auto b = HostSemaphore::Create(0, Allocator::Default());
    ASSERT_TRUE(a.ok() && b.ok());
    Semaphore* list[] = {a->get(), b->get()};
    uint64_t values[] = {1, 1};
    std::thread t1([&] { EXPECT_TRUE((*a)->Signal(1).ok()); });
    std::thread t2([&] { EXPECT_TRUE((*b)->Signal(1).ok()); });
    EXPECT_TRUE(WaitAnyHostSemaphores({list, values}, platform::kInfiniteFuture).ok());
    t1.join();
    t2.join();
  }
}

}  // namespace
}  // namespace osprey::hal::local
