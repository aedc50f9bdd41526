// Submission checks and signal/fail reporting shared by local devices.
#include "hal/local/queue_submission.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hal/local/host_semaphore.h"
#include "hal/local/recording_command_buffer.h"

namespace osprey::hal::local {
namespace {

bool Contains(const Status& status, const char* text) {
  return std::string(status.message()).find(text) != std::string::npos;
}

// A command buffer of some other device: not a RecordingCommandBuffer.
class ForeignCommandBuffer final : public CommandBuffer {
 public:
  explicit ForeignCommandBuffer(osprey::Allocator* host_allocator)
      : CommandBuffer(CommandBufferMode::kDefault, host_allocator) {}

 protected:
  Status ExecutionBarrierImpl() override { return OkStatus(); }
  Status FillBufferImpl(BufferRef, uint32_t, size_t) override { return OkStatus(); }
  Status UpdateBufferImpl(const void*, BufferRef) override { return OkStatus(); }
  Status CopyBufferImpl(BufferRef, BufferRef) override { return OkStatus(); }
  Status DispatchImpl(Executable*, uint32_t, WorkgroupCount, std::span<const uint32_t>,
                      std::span<const BufferRef>) override {
    return OkStatus();
  }

 private:
  friend class osprey::Allocator;
};

class QueueSubmissionTest : public ::testing::Test {
 protected:
  // Three semaphores at 0 and a list signalling them to 1, 2 and 3.
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      auto semaphore = HostSemaphore::Create(0, allocator_);
      ASSERT_TRUE(semaphore.ok());
      owned_.push_back(std::move(*semaphore));
      semaphores_[i] = owned_.back().get();
    }
  }
  SemaphoreList signal() const { return {semaphores_, values_}; }
  ref_ptr<RecordingCommandBuffer> Ended(CommandBufferMode mode = CommandBufferMode::kDefault) {
    auto cb = RecordingCommandBuffer::Create(mode, allocator_);
    EXPECT_TRUE(cb.ok());
    EXPECT_TRUE((*cb)->Begin().ok());
    EXPECT_TRUE((*cb)->End().ok());
    return std::move(*cb);
  }

  osprey::Allocator* allocator_ = osprey::Allocator::Default();
  std::vector<ref_ptr<HostSemaphore>> owned_;
  Semaphore* semaphores_[3] = {};
  uint64_t values_[3] = {1, 2, 3};
};

TEST_F(QueueSubmissionTest, SuccessSignalsEverySemaphore) {
  EXPECT_TRUE(SignalOrFail(signal(), OkStatus()).ok());
  for (int i = 0; i < 3; ++i) {
    auto value = semaphores_[i]->Query();
    ASSERT_TRUE(value.ok());
    EXPECT_EQ(*value, values_[i]);
  }
}

TEST_F(QueueSubmissionTest, FailureFailsEverySemaphoreWithTheStatus) {
  Status status = SignalOrFail(signal(), DataLossError("kernel 7 refused its bindings"));
  EXPECT_TRUE(status.ok()) << "the semaphores carry the failure";
  for (int i = 0; i < 3; ++i) {
    auto value = semaphores_[i]->Query();
    ASSERT_FALSE(value.ok()) << "semaphore " << i;
    EXPECT_EQ(value.status().code(), StatusCode::kDataLoss);
    EXPECT_TRUE(Contains(value.status(), "kernel 7 refused its bindings"));
    Status waited = semaphores_[i]->Wait(values_[i], platform::kInfiniteFuture);
    EXPECT_FALSE(waited.ok());
    EXPECT_TRUE(Contains(waited, "kernel 7 refused its bindings")) << waited.message();
  }
}

TEST_F(QueueSubmissionTest, FailureWithoutSemaphoresIsReturned) {
  Status status = SignalOrFail({}, DataLossError("kernel 7 refused its bindings"));
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Contains(status, "kernel 7"));
  EXPECT_TRUE(SignalOrFail({}, OkStatus()).ok());
}

TEST_F(QueueSubmissionTest, RefusedSignalIsReturnedAndTheOthersAreSignalled) {
  ASSERT_TRUE(semaphores_[1]->Signal(5).ok());  // Already past its value 2.
  Status status = SignalOrFail(signal(), OkStatus());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(status, "semaphore 1")) << status.message();
  EXPECT_EQ(*semaphores_[0]->Query(), 1u);
  EXPECT_EQ(*semaphores_[1]->Query(), 5u);
  EXPECT_EQ(*semaphores_[2]->Query(), 3u);
}

TEST_F(QueueSubmissionTest, ExecuteAndSignalRunsUnderTheLock) {
  platform::Mutex mutex;
  std::atomic<bool> other_locked{false};
  std::thread other;
  int runs = 0;
  Status status = ExecuteAndSignal(mutex, signal(), [&] {
    ++runs;
    // Another submission waits for the lock until this one is done.
    other = std::thread([&] {
      platform::MutexLock lock(mutex);
      other_locked = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(other_locked.load());
    return OkStatus();
  });
  other.join();
  EXPECT_TRUE(other_locked.load());
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(runs, 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*semaphores_[i]->Query(), values_[i]);
}

TEST_F(QueueSubmissionTest, ExecuteAndSignalFailsEverySemaphoreOnError) {
  platform::Mutex mutex;
  Status status =
      ExecuteAndSignal(mutex, signal(), [] { return AbortedError("device fault at 0x40"); });
  EXPECT_TRUE(status.ok());
  for (Semaphore* semaphore : semaphores_) {
    auto value = semaphore->Query();
    ASSERT_FALSE(value.ok());
    EXPECT_EQ(value.status().code(), StatusCode::kAborted);
    EXPECT_TRUE(Contains(value.status(), "device fault at 0x40"));
  }
  Status unsignalled = ExecuteAndSignal(mutex, {}, [] { return AbortedError("no carrier"); });
  EXPECT_EQ(unsignalled.code(), StatusCode::kAborted);
}

TEST_F(QueueSubmissionTest, BeginAcceptsEndedCommandBuffersAndMarksThemSubmitted) {
  ref_ptr<RecordingCommandBuffer> cb = Ended(CommandBufferMode::kOneShot);
  CommandBuffer* cbs[] = {cb.get()};
  EXPECT_TRUE(BeginQueueSubmission("test", {}, cbs, signal()).ok());
  // One-shot: a second submission is refused.
  Status again = BeginQueueSubmission("test", {}, cbs, signal());
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(again, "test device")) << again.message();
}

TEST_F(QueueSubmissionTest, BeginRefusesBadSubmissions) {
  ref_ptr<RecordingCommandBuffer> ended = Ended();
  CommandBuffer* good[] = {ended.get()};

  CommandBuffer* null_cb[] = {ended.get(), nullptr};
  Status null_status = BeginQueueSubmission("test", {}, null_cb, {});
  EXPECT_EQ(null_status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(null_status, "command buffer 1 is null")) << null_status.message();

  auto foreign = MakeRef<ForeignCommandBuffer>(allocator_, allocator_);
  ASSERT_TRUE(foreign.ok());
  CommandBuffer* foreign_cb[] = {foreign->get()};
  Status foreign_status = BeginQueueSubmission("test", {}, foreign_cb, {});
  EXPECT_EQ(foreign_status.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(foreign_status, "command buffer 0 is foreign")) << foreign_status.message();

  // Two semaphores, one value.
  Status mismatched = BeginQueueSubmission("test", {}, good, {{semaphores_, 2}, {values_, 1}});
  EXPECT_EQ(mismatched.code(), StatusCode::kInvalidArgument);
  Status mismatched_wait = BeginQueueSubmission("test", {{semaphores_, 1}, {values_, 2}}, good, {});
  EXPECT_EQ(mismatched_wait.code(), StatusCode::kInvalidArgument);

  ASSERT_TRUE(semaphores_[2]->Signal(3).ok());  // Signalling it to 3 would not advance it.
  Status stale = BeginQueueSubmission("test", {}, good, signal());
  EXPECT_EQ(stale.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(stale, "signal semaphore 2 is at 3")) << stale.message();

  auto recording = RecordingCommandBuffer::Create(CommandBufferMode::kDefault, allocator_);
  ASSERT_TRUE(recording.ok());
  ASSERT_TRUE((*recording)->Begin().ok());
  CommandBuffer* not_ended[] = {recording->get()};
  EXPECT_EQ(BeginQueueSubmission("test", {}, not_ended, {}).code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(QueueSubmissionTest, BeginLetsAFailedSignalSemaphoreThrough) {
  semaphores_[0]->Fail(CancelledError("earlier submission"));
  ref_ptr<RecordingCommandBuffer> ended = Ended();
  CommandBuffer* cbs[] = {ended.get()};
  EXPECT_TRUE(BeginQueueSubmission("test", {}, cbs, signal()).ok());
}

}  // namespace
}  // namespace osprey::hal::local
