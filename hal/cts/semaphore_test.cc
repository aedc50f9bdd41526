// CTS: semaphores (signal, wait, timeouts, failure) and queue waits and
// signals, including failure propagation through submissions.
#include <atomic>
#include <thread>

#include "hal/cts/cts_test_base.h"

namespace osprey::hal::cts {
namespace {

class SemaphoreTest : public CtsTest {
 protected:
  ref_ptr<Semaphore> Make(uint64_t value) {
    auto semaphore = device()->CreateSemaphore(value);
    EXPECT_TRUE(semaphore.ok()) << StatusText(semaphore);
    return semaphore.ok() ? std::move(*semaphore) : nullptr;
  }
};

TEST_P(SemaphoreTest, QueryReturnsInitialValue) {
  auto semaphore = Make(123);
  ASSERT_TRUE(semaphore);
  auto value = semaphore->Query();
  OSPREY_CTS_ASSERT_OK(value);
  EXPECT_EQ(*value, 123u);
}

TEST_P(SemaphoreTest, SignalRaisesValue) {
  auto semaphore = Make(0);
  ASSERT_TRUE(semaphore);
  OSPREY_CTS_ASSERT_OK(semaphore->Signal(5));
  EXPECT_EQ(*semaphore->Query(), 5u);
  OSPREY_CTS_ASSERT_OK(semaphore->Signal(1ull << 40));
  EXPECT_EQ(*semaphore->Query(), 1ull << 40);
}

TEST_P(SemaphoreTest, NonMonotonicSignalIsRejected) {
  auto semaphore = Make(10);
  ASSERT_TRUE(semaphore);
  EXPECT_EQ(semaphore->Signal(10).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(semaphore->Signal(3).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*semaphore->Query(), 10u);
}

TEST_P(SemaphoreTest, WaitForReachedValueReturnsAtOnce) {
  auto semaphore = Make(7);
  ASSERT_TRUE(semaphore);
  OSPREY_CTS_EXPECT_OK(semaphore->Wait(7, platform::kImmediatePast));
  OSPREY_CTS_EXPECT_OK(semaphore->Wait(1, DeadlineInMs(0)));
}

TEST_P(SemaphoreTest, WaitTimesOut) {
  auto semaphore = Make(0);
  ASSERT_TRUE(semaphore);
  const int64_t start = platform::MonotonicNanos();
  Status status = semaphore->Wait(1, DeadlineInMs(20));
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << StatusText(status);
  EXPECT_GE(platform::MonotonicNanos() - start, 15'000'000);
  EXPECT_EQ(semaphore->Wait(1, platform::kImmediatePast).code(), StatusCode::kDeadlineExceeded);
}

TEST_P(SemaphoreTest, FailureIsStickyAndReachesWaiters) {
  auto semaphore = Make(0);
  ASSERT_TRUE(semaphore);
  semaphore->Fail(DataLossError("the sky fell"));
  auto value = semaphore->Query();
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(CodeOf(value), StatusCode::kDataLoss);
  Status wait = semaphore->Wait(1, DeadlineInMs(1000));
  EXPECT_EQ(wait.code(), StatusCode::kAborted);
  EXPECT_NE(std::string(wait.message()).find("the sky fell"), std::string::npos);
  // Even values that were reached before report the failure.
  EXPECT_EQ(semaphore->Wait(0, DeadlineInMs(1000)).code(), StatusCode::kAborted);
  EXPECT_FALSE(semaphore->Signal(1).ok());
  // A second failure does not replace the first.
  semaphore->Fail(CancelledError("later"));
  EXPECT_EQ(CodeOf(semaphore->Query()), StatusCode::kDataLoss);
}

TEST_P(SemaphoreTest, SignalFromAnotherThreadWakesWaiter) {
  if (!HasCapability(kCapabilityThreads)) GTEST_SKIP() << "backend has no host threads";
  auto semaphore = Make(0);
  ASSERT_TRUE(semaphore);
  std::thread signaller([&] {
    platform::SleepNanos(5'000'000);
    EXPECT_TRUE(semaphore->Signal(1).ok());
    platform::SleepNanos(5'000'000);
    EXPECT_TRUE(semaphore->Signal(3).ok());
  });
  OSPREY_CTS_EXPECT_OK(semaphore->Wait(2, DeadlineInMs(10000)));
  EXPECT_EQ(*semaphore->Query(), 3u);
  signaller.join();
}

TEST_P(SemaphoreTest, FailFromAnotherThreadWakesWaiter) {
  if (!HasCapability(kCapabilityThreads)) GTEST_SKIP() << "backend has no host threads";
  auto semaphore = Make(0);
  ASSERT_TRUE(semaphore);
  std::thread failer([&] {
    platform::SleepNanos(5'000'000);
    semaphore->Fail(InternalError("worker died"));
  });
  EXPECT_EQ(semaphore->Wait(1, DeadlineInMs(10000)).code(), StatusCode::kAborted);
  failer.join();
}

TEST_P(SemaphoreTest, DeviceWaitAllAndAny) {
  auto a = Make(0);
  auto b = Make(0);
  ASSERT_TRUE(a && b);
  Semaphore* semaphores[] = {a.get(), b.get()};
  uint64_t values[] = {1, 1};
  EXPECT_EQ(device()->WaitSemaphores(WaitMode::kAny, {semaphores, values}, DeadlineInMs(5)).code(),
            StatusCode::kDeadlineExceeded);
  OSPREY_CTS_ASSERT_OK(b->Signal(1));
  OSPREY_CTS_EXPECT_OK(device()->WaitSemaphores(WaitMode::kAny, {semaphores, values},
                                                DeadlineInMs(1000)));
  EXPECT_EQ(device()->WaitSemaphores(WaitMode::kAll, {semaphores, values}, DeadlineInMs(5)).code(),
            StatusCode::kDeadlineExceeded);
  OSPREY_CTS_ASSERT_OK(a->Signal(2));
  OSPREY_CTS_EXPECT_OK(device()->WaitSemaphores(WaitMode::kAll, {semaphores, values},
                                                DeadlineInMs(1000)));
  OSPREY_CTS_EXPECT_OK(device()->WaitSemaphores(WaitMode::kAll, {}, DeadlineInMs(0)));
}

TEST_P(SemaphoreTest, DeviceWaitAnyReportsFailure) {
  auto a = Make(0);
  auto b = Make(0);
  ASSERT_TRUE(a && b);
  a->Fail(UnknownError("broken"));
  Semaphore* semaphores[] = {a.get(), b.get()};
  uint64_t values[] = {1, 1};
  EXPECT_EQ(device()->WaitSemaphores(WaitMode::kAny, {semaphores, values}, DeadlineInMs(100))
                .code(),
            StatusCode::kAborted);
  EXPECT_EQ(device()->WaitSemaphores(WaitMode::kAll, {semaphores, values}, DeadlineInMs(100))
                .code(),
            StatusCode::kAborted);
}

TEST_P(SemaphoreTest, MismatchedListsAreRejected) {
  auto a = Make(0);
  ASSERT_TRUE(a);
  Semaphore* semaphores[] = {a.get()};
  uint64_t values[] = {1, 2};
  EXPECT_EQ(device()->WaitSemaphores(WaitMode::kAll, {semaphores, values}, DeadlineInMs(0)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(device()->QueueExecute({semaphores, values}, {}, {}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(device()->QueueExecute({}, {}, {semaphores, values}).code(),
            StatusCode::kInvalidArgument);
}

//===----------------------------------------------------------------------===//
// Queue
//===----------------------------------------------------------------------===//

TEST_P(SemaphoreTest, EmptySubmissionSignals) {
  auto a = Make(0);
  auto b = Make(4);
  ASSERT_TRUE(a && b);
  Semaphore* signal[] = {a.get(), b.get()};
  uint64_t values[] = {1, 9};
  OSPREY_CTS_ASSERT_OK(device()->QueueExecute({}, {}, {signal, values}));
  OSPREY_CTS_ASSERT_OK(a->Wait(1, DeadlineInMs(10000)));
  OSPREY_CTS_ASSERT_OK(b->Wait(9, DeadlineInMs(10000)));
  EXPECT_EQ(*b->Query(), 9u);
}

TEST_P(SemaphoreTest, SubmissionWaitsForReachedSemaphore) {
  auto wait = Make(3);
  auto signal = Make(0);
  ASSERT_TRUE(wait && signal);
  Semaphore* waits[] = {wait.get()};
  uint64_t wait_values[] = {3};
  Semaphore* signals[] = {signal.get()};
  uint64_t signal_values[] = {1};
  OSPREY_CTS_ASSERT_OK(device()->QueueExecute({waits, wait_values}, {}, {signals, signal_values}));
  OSPREY_CTS_EXPECT_OK(signal->Wait(1, DeadlineInMs(10000)));
}

TEST_P(SemaphoreTest, SubmissionWaitsForLaterHostSignal) {
  if (!HasCapability(kCapabilityAsyncQueue)) {
    GTEST_SKIP() << "synchronous queue: QueueExecute waits inline, so the host cannot signal "
                    "after submitting (see UnreachedWaitFailsSubmission)";
  }
  auto wait = Make(0);
  auto signal = Make(0);
  auto buffer = Allocate(4);
  ASSERT_TRUE(wait && signal);
  OSPREY_CTS_ASSERT_OK(buffer);
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t value = 77;
  OSPREY_CTS_ASSERT_OK((*cb)->UpdateBuffer(&value, {buffer->get(), 0, 4}));
  OSPREY_CTS_ASSERT_OK((*cb)->End());
  Semaphore* waits[] = {wait.get()};
  uint64_t wait_values[] = {1};
  Semaphore* signals[] = {signal.get()};
  uint64_t signal_values[] = {1};
  CommandBuffer* buffers[] = {cb->get()};
  OSPREY_CTS_ASSERT_OK(
      device()->QueueExecute({waits, wait_values}, buffers, {signals, signal_values}));
  platform::SleepNanos(2'000'000);
  EXPECT_EQ(*signal->Query(), 0u);  // Still waiting.
  OSPREY_CTS_ASSERT_OK(wait->Signal(1));
  OSPREY_CTS_ASSERT_OK(signal->Wait(1, DeadlineInMs(10000)));
  EXPECT_EQ(ReadAs<uint32_t>(buffer->get())[0], 77u);
}

TEST_P(SemaphoreTest, UnreachedWaitFailsSubmission) {
  if (!HasCapability(kCapabilityWaitTimeout)) {
    GTEST_SKIP() << "asynchronous queue: an unreached wait keeps the submission pending";
  }
  auto wait = Make(0);
  auto signal = Make(0);
  ASSERT_TRUE(wait && signal);
  auto buffer = Allocate(4);
  OSPREY_CTS_ASSERT_OK(buffer);
  uint32_t zero = 0;
  OSPREY_CTS_ASSERT_OK((*buffer)->WriteData(0, &zero, 4));
  auto cb = BeginCommandBuffer();
  OSPREY_CTS_ASSERT_OK(cb);
  uint32_t value = 5;
  OSPREY_CTS_ASSERT_OK((*cb)->UpdateBuffer(&value, {buffer->get(), 0, 4}));
  OSPREY_CTS_ASSERT_OK((*cb)->End());
  Semaphore* waits[] = {wait.get()};
  uint64_t wait_values[] = {1};
  Semaphore* signals[] = {signal.get()};
  uint64_t signal_values[] = {1};
  CommandBuffer* buffers[] = {cb->get()};
  OSPREY_CTS_ASSERT_OK(
      device()->QueueExecute({waits, wait_values}, buffers, {signals, signal_values}));
  Status status = signal->Wait(1, DeadlineInMs(10000));
  EXPECT_EQ(status.code(), StatusCode::kAborted) << StatusText(status);
  EXPECT_EQ(CodeOf(signal->Query()), StatusCode::kDeadlineExceeded);
  // The command buffer did not run.
  EXPECT_EQ(ReadAs<uint32_t>(buffer->get())[0], 0u);
}

TEST_P(SemaphoreTest, FailedWaitSemaphoreFailsSignalSemaphores) {
  auto wait = Make(0);
  auto signal_a = Make(0);
  auto signal_b = Make(10);
  ASSERT_TRUE(wait && signal_a && signal_b);
  wait->Fail(ResourceExhaustedError("upstream ran out of memory"));
  Semaphore* waits[] = {wait.get()};
  uint64_t wait_values[] = {1};
  Semaphore* signals[] = {signal_a.get(), signal_b.get()};
  uint64_t signal_values[] = {1, 11};
  OSPREY_CTS_ASSERT_OK(device()->QueueExecute({waits, wait_values}, {}, {signals, signal_values}));
  // Wait for the values the submission would have signalled: on an
  // asynchronous queue the failure arrives after QueueExecute returns, and
  // signal_b already holds a value above 1.
  for (size_t i = 0; i < 2; ++i) {
    Status status = signals[i]->Wait(signal_values[i], DeadlineInMs(10000));
    EXPECT_EQ(status.code(), StatusCode::kAborted) << StatusText(status);
    EXPECT_NE(std::string(status.message()).find("upstream ran out of memory"), std::string::npos)
        << StatusText(status);
  }
}

TEST_P(SemaphoreTest, ChainedSubmissionsPropagateFailure) {
  auto first = Make(0);
  auto second = Make(0);
  ASSERT_TRUE(first && second);
  first->Fail(InternalError("first stage failed"));
  Semaphore* waits[] = {first.get()};
  Semaphore* signals[] = {second.get()};
  uint64_t one[] = {1};
  OSPREY_CTS_ASSERT_OK(device()->QueueExecute({waits, one}, {}, {signals, one}));
  auto third = Make(0);
  ASSERT_TRUE(third);
  Semaphore* waits2[] = {second.get()};
  Semaphore* signals2[] = {third.get()};
  OSPREY_CTS_ASSERT_OK(device()->QueueExecute({waits2, one}, {}, {signals2, one}));
  Status status = third->Wait(1, DeadlineInMs(10000));
  EXPECT_EQ(status.code(), StatusCode::kAborted);
  EXPECT_NE(std::string(status.message()).find("first stage failed"), std::string::npos)
      << StatusText(status);
}

OSPREY_CTS_INSTANTIATE(SemaphoreTest);

}  // namespace
}  // namespace osprey::hal::cts
