// Unit tests of the task executor: ordering, dispatch tiling, failures,
// waits, cancellation and shutdown.
#include "runtime/task/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/task/task_test_util.h"

namespace osprey::task {
namespace {

using testing::CompletionLatch;
using testing::ManualWait;

std::string Str(const Status& s) {
  char buffer[1024];
  s.ToString(buffer, sizeof(buffer));
  return buffer;
}

ref_ptr<Executor> MakeExecutor(osprey::Allocator* allocator, uint32_t workers = 2,
                               uint32_t local_memory = 1024) {
  ExecutorOptions options;
  options.worker_count = workers;
  options.worker_local_memory_size = local_memory;
  auto executor = Executor::Create(options, allocator);
  EXPECT_TRUE(executor.ok()) << Str(executor.status());
  return std::move(executor).value();
}

// Records the order in which calls start and finish.
struct Recorder {
  std::atomic<int> clock{0};
  std::vector<int> start;
  std::vector<int> end;
  explicit Recorder(size_t n) : start(n, -1), end(n, -1) {}
};
struct RecordedCall {
  Recorder* recorder;
  int index;
  static Status Fn(void* user_data, const TaskContext&) {
    auto* self = static_cast<RecordedCall*>(user_data);
    self->recorder->start[self->index] = self->recorder->clock.fetch_add(1);
    std::this_thread::yield();
    self->recorder->end[self->index] = self->recorder->clock.fetch_add(1);
    return OkStatus();
  }
};

Status CountCall(void* user_data, const TaskContext&) {
  static_cast<std::atomic<int>*>(user_data)->fetch_add(1);
  return OkStatus();
}

TEST(ExecutorTest, CreatesRequestedWorkers) {
  CountingAllocator allocator(Allocator::Default());
  {
    ExecutorOptions options;
    options.worker_count = 3;
    options.pin_workers = true;
    auto executor = Executor::Create(options, &allocator);
    ASSERT_TRUE(executor.ok()) << Str(executor.status());
    EXPECT_EQ((*executor)->worker_count(), 3u);
  }
  EXPECT_EQ(allocator.live(), 0u);
}

TEST(ExecutorTest, RejectsTooManyWorkers) {
  ExecutorOptions options;
  options.worker_count = Executor::kMaxWorkers + 1;
  auto executor = Executor::Create(options, Allocator::Default());
  EXPECT_EQ(executor.status().code(), StatusCode::kInvalidArgument);
}

TEST(ExecutorTest, EmptySubmissionCompletesDuringSubmit) {
  auto executor = MakeExecutor(Allocator::Default());
  auto submission = executor->AcquireSubmission();
  ASSERT_TRUE(submission.ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(*submission, latch.completion()).ok());
  EXPECT_TRUE(latch.done());
  EXPECT_TRUE(latch.Wait().ok());
}

TEST(ExecutorTest, RejectsForeignAndDoubleSubmissions) {
  auto a = MakeExecutor(Allocator::Default());
  auto b = MakeExecutor(Allocator::Default());
  ManualWait wait;
  Submission* submission = *a->AcquireSubmission();
  ASSERT_TRUE(submission->AddWait(wait.source()).ok());
  CompletionLatch latch;
  EXPECT_EQ(b->Submit(submission, latch.completion()).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(a->Submit(submission, latch.completion()).ok());
  EXPECT_EQ(a->Submit(submission, latch.completion()).code(), StatusCode::kFailedPrecondition);
  while (!wait.armed()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  wait.Signal();
  EXPECT_TRUE(latch.Wait().ok());
  EXPECT_EQ(latch.calls(), 1);
}

TEST(ExecutorTest, ChainRunsInOrder) {
  auto executor = MakeExecutor(Allocator::Default());
  constexpr int kCount = 64;
  Recorder recorder(kCount);
  std::vector<RecordedCall> calls(kCount);
  Submission* submission = *executor->AcquireSubmission();
  Task* previous = nullptr;
  for (int i = 0; i < kCount; ++i) {
    calls[i] = {&recorder, i};
    Task* task = *submission->AddCall(&RecordedCall::Fn, &calls[i]);
    if (previous) ASSERT_TRUE(submission->AddDependency(previous, task).ok());
    previous = task;
  }
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  ASSERT_TRUE(latch.Wait().ok());
  for (int i = 1; i < kCount; ++i) EXPECT_LT(recorder.end[i - 1], recorder.start[i]) << i;
}

TEST(ExecutorTest, FanOutFanIn) {
  auto executor = MakeExecutor(Allocator::Default());
  constexpr int kWidth = 40;
  Recorder recorder(kWidth + 2);
  std::vector<RecordedCall> calls(kWidth + 2);
  for (int i = 0; i < kWidth + 2; ++i) calls[i] = {&recorder, i};
  Submission* submission = *executor->AcquireSubmission();
  Task* root = *submission->AddCall(&RecordedCall::Fn, &calls[0]);
  std::vector<Task*> middle;
  for (int i = 1; i <= kWidth; ++i) {
    middle.push_back(*submission->AddCall(&RecordedCall::Fn, &calls[i]));
    ASSERT_TRUE(submission->AddDependency(root, middle.back()).ok());
  }
  Task* join = *submission->AddCall(&RecordedCall::Fn, &calls[kWidth + 1]);
  for (Task* task : middle) ASSERT_TRUE(submission->AddDependency(task, join).ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  ASSERT_TRUE(latch.Wait().ok());
  for (int i = 1; i <= kWidth; ++i) {
    EXPECT_LT(recorder.end[0], recorder.start[i]);
    EXPECT_LT(recorder.end[i], recorder.start[kWidth + 1]);
  }
}

TEST(ExecutorTest, BarrierOrdersGroups) {
  auto executor = MakeExecutor(Allocator::Default());
  Recorder recorder(8);
  std::vector<RecordedCall> calls(8);
  for (int i = 0; i < 8; ++i) calls[i] = {&recorder, i};
  Submission* submission = *executor->AcquireSubmission();
  std::vector<Task*> before, after;
  for (int i = 0; i < 4; ++i) before.push_back(*submission->AddCall(&RecordedCall::Fn, &calls[i]));
  Task* barrier = *submission->AddBarrier();
  for (int i = 4; i < 8; ++i) after.push_back(*submission->AddCall(&RecordedCall::Fn, &calls[i]));
  for (Task* t : before) ASSERT_TRUE(submission->AddDependency(t, barrier).ok());
  for (Task* t : after) ASSERT_TRUE(submission->AddDependency(barrier, t).ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  ASSERT_TRUE(latch.Wait().ok());
  for (int i = 0; i < 4; ++i) {
    for (int j = 4; j < 8; ++j) EXPECT_LT(recorder.end[i], recorder.start[j]);
  }
}

TEST(ExecutorTest, RejectsBackwardAndForeignEdges) {
  auto executor = MakeExecutor(Allocator::Default());
  std::atomic<int> count{0};
  Submission* a = *executor->AcquireSubmission();
  Submission* b = *executor->AcquireSubmission();
  Task* first = *a->AddCall(&CountCall, &count);
  Task* second = *a->AddCall(&CountCall, &count);
  Task* other = *b->AddCall(&CountCall, &count);
  EXPECT_EQ(a->AddDependency(second, first).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->AddDependency(first, first).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->AddDependency(first, other).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->AddDependency(first, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->AddCall(nullptr, nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->AddWait(WaitSource{}).status().code(), StatusCode::kInvalidArgument);
  executor->DiscardSubmission(a);
  executor->DiscardSubmission(b);
  EXPECT_EQ(count.load(), 0);
}

// Counts how often each tile runs and which workers ran tiles.
struct TileCounter {
  std::vector<std::atomic<int>> hits;
  std::atomic<uint64_t> worker_mask{0};
  std::atomic<int> batches{0};
  int sleep_us = 0;
  // Each batch holds its worker until a second worker has run a batch (or
  // 10 s passed), so the check does not depend on how busy the machine is.
  bool wait_for_second_worker = false;
  explicit TileCounter(size_t n) : hits(n) {}
  static Status Fn(void* user_data, uint32_t begin, uint32_t end, const TaskContext& context) {
    auto* self = static_cast<TileCounter*>(user_data);
    self->batches.fetch_add(1);
    self->worker_mask.fetch_or(uint64_t(1) << context.worker_id);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (self->wait_for_second_worker &&
           __builtin_popcountll(self->worker_mask.load()) < 2 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    for (uint32_t i = begin; i < end; ++i) {
      self->hits[i].fetch_add(1);
      if (self->sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(self->sleep_us));
    }
    return OkStatus();
  }
};

TEST(ExecutorTest, DispatchRunsEveryTileExactlyOnce) {
  auto executor = MakeExecutor(Allocator::Default(), 3);
  for (uint32_t tiles : {0u, 1u, 2u, 7u, 1000u, 100003u}) {
    for (uint32_t batch : {0u, 1u, 64u}) {
      TileCounter counter(tiles);
      Submission* submission = *executor->AcquireSubmission();
      DispatchParams params;
      params.fn = &TileCounter::Fn;
      params.user_data = &counter;
      params.tile_count = tiles;
      params.tiles_per_batch = batch;
      ASSERT_TRUE(submission->AddDispatch(params).ok());
      CompletionLatch latch;
      ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
      ASSERT_TRUE(latch.Wait().ok());
      for (uint32_t i = 0; i < tiles; ++i) {
        ASSERT_EQ(counter.hits[i].load(), 1) << "tile " << i << " of " << tiles;
      }
      if (tiles >= 1000) {
        // Large dispatches are claimed in several batches.
        EXPECT_GT(counter.batches.load(), 3) << tiles << " tiles, batch " << batch;
      }
    }
  }
}

TEST(ExecutorTest, DispatchKeepsTwoWorkersBusy) {
  auto executor = MakeExecutor(Allocator::Default(), 2);
  TileCounter counter(400);
  counter.wait_for_second_worker = true;
  Submission* submission = *executor->AcquireSubmission();
  DispatchParams params;
  params.fn = &TileCounter::Fn;
  params.user_data = &counter;
  params.tile_count = 400;
  ASSERT_TRUE(submission->AddDispatch(params).ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  ASSERT_TRUE(latch.Wait().ok());
  EXPECT_EQ(counter.worker_mask.load(), 0x3u);
}

Status UseLocalMemory(void* user_data, uint32_t begin, uint32_t end, const TaskContext& context) {
  auto* ok = static_cast<std::atomic<int>*>(user_data);
  if (context.local_memory.size() < 512) return InternalError("local memory too small");
  for (uint32_t i = begin; i < end; ++i) {
    memset(context.local_memory.data(), int(i & 0xFF), 512);
    if (context.local_memory[511] != uint8_t(i & 0xFF)) return InternalError("corrupted");
    ok->fetch_add(1);
  }
  return OkStatus();
}

TEST(ExecutorTest, DispatchGetsWorkerLocalMemory) {
  auto executor = MakeExecutor(Allocator::Default(), 2, 512);
  std::atomic<int> ok{0};
  Submission* submission = *executor->AcquireSubmission();
  DispatchParams params;
  params.fn = &UseLocalMemory;
  params.user_data = &ok;
  params.tile_count = 100;
  params.local_memory_size = 512;
  ASSERT_TRUE(submission->AddDispatch(params).ok());
  params.local_memory_size = 513;
  EXPECT_EQ(submission->AddDispatch(params).status().code(), StatusCode::kResourceExhausted);
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  ASSERT_TRUE(latch.Wait().ok());
  EXPECT_EQ(ok.load(), 100);
}

struct FailingTiles {
  uint32_t fail_at;
  std::atomic<int> ran{0};
  static Status Fn(void* user_data, uint32_t begin, uint32_t end, const TaskContext&) {
    auto* self = static_cast<FailingTiles*>(user_data);
    for (uint32_t i = begin; i < end; ++i) {
      if (i == self->fail_at) return DataLossError("tile %u exploded", i);
      // Tiles after the failing one take a little time, so a worker that is
      // descheduled right after the failure (a loaded machine) cannot see
      // the other worker run all of them before the failure is recorded;
      // if later tiles were never skipped, they would all still run.
      if (i > self->fail_at) std::this_thread::sleep_for(std::chrono::microseconds(20));
      self->ran.fetch_add(1);
    }
    return OkStatus();
  }
};

TEST(ExecutorTest, FailingTileFailsSubmissionAndSkipsLaterWork) {
  CountingAllocator allocator(Allocator::Default());
  {
    auto executor = MakeExecutor(&allocator, 2);
    FailingTiles tiles{37};
    std::atomic<int> later{0};
    std::atomic<int> independent{0};
    Submission* submission = *executor->AcquireSubmission();
    DispatchParams params;
    params.fn = &FailingTiles::Fn;
    params.user_data = &tiles;
    params.tile_count = 100000;
    params.tiles_per_batch = 1;
    params.name = "exploding";
    Task* dispatch = *submission->AddDispatch(params);
    Task* after = *submission->AddCall(&CountCall, &later, "after");
    ASSERT_TRUE(submission->AddDependency(dispatch, after).ok());
    CompletionLatch latch;
    ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
    Status status = latch.Wait();
    EXPECT_EQ(status.code(), StatusCode::kDataLoss);
    std::string text = Str(status);
    EXPECT_NE(text.find("tile 37 exploded"), std::string::npos) << text;
    EXPECT_NE(text.find("in dispatch 'exploding'"), std::string::npos) << text;
    EXPECT_EQ(later.load(), 0);
    // Tiles after the failure are mostly skipped.
    EXPECT_LT(tiles.ran.load(), 99999);
    EXPECT_EQ(latch.calls(), 1);
    (void)independent;
  }
  EXPECT_EQ(allocator.live(), 0u);
}

Status FailCall(void*, const TaskContext&) { return InvalidArgumentError("bad input 7"); }

TEST(ExecutorTest, FailingCallReportsContext) {
  auto executor = MakeExecutor(Allocator::Default());
  std::atomic<int> later{0};
  Submission* submission = *executor->AcquireSubmission();
  Task* failing = *submission->AddCall(&FailCall, nullptr, "parse");
  Task* barrier = *submission->AddBarrier();
  Task* after = *submission->AddCall(&CountCall, &later);
  ASSERT_TRUE(submission->AddDependency(failing, barrier).ok());
  ASSERT_TRUE(submission->AddDependency(barrier, after).ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  Status status = latch.Wait();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(Str(status).find("bad input 7;\n  in task 'parse'"), std::string::npos)
      << Str(status);
  EXPECT_EQ(later.load(), 0);
}

TEST(ExecutorTest, WaitDoesNotBlockWorker) {
  // One worker: if the wait blocked it, the independent call could not run.
  auto executor = MakeExecutor(Allocator::Default(), 1);
  ManualWait wait;
  std::atomic<int> independent{0};
  std::atomic<int> after{0};
  Submission* submission = *executor->AcquireSubmission();
  Task* wait_task = *submission->AddWait(wait.source());
  Task* after_task = *submission->AddCall(&CountCall, &after);
  ASSERT_TRUE(submission->AddDependency(wait_task, after_task).ok());
  ASSERT_TRUE(submission->AddCall(&CountCall, &independent).ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((independent.load() == 0 || !wait.armed()) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(independent.load(), 1);
  EXPECT_TRUE(wait.armed());
  EXPECT_EQ(after.load(), 0);
  EXPECT_FALSE(latch.done());
  EXPECT_TRUE(wait.Signal());
  ASSERT_TRUE(latch.Wait().ok());
  EXPECT_EQ(after.load(), 1);
  EXPECT_EQ(wait.disarms(), 0);
}

TEST(ExecutorTest, WaitResolvedDuringArm) {
  auto executor = MakeExecutor(Allocator::Default());
  ManualWait wait;
  wait.Signal();  // Before the wait is armed.
  std::atomic<int> after{0};
  Submission* submission = *executor->AcquireSubmission();
  Task* wait_task = *submission->AddWait(wait.source());
  Task* after_task = *submission->AddCall(&CountCall, &after);
  ASSERT_TRUE(submission->AddDependency(wait_task, after_task).ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  ASSERT_TRUE(latch.Wait().ok());
  EXPECT_EQ(after.load(), 1);
  EXPECT_EQ(wait.arms(), 1);
}

TEST(ExecutorTest, WaitFailureFailsSubmission) {
  auto executor = MakeExecutor(Allocator::Default());
  ManualWait wait;
  std::atomic<int> after{0};
  Submission* submission = *executor->AcquireSubmission();
  Task* wait_task = *submission->AddWait(wait.source("semaphore 3"));
  Task* after_task = *submission->AddCall(&CountCall, &after);
  ASSERT_TRUE(submission->AddDependency(wait_task, after_task).ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  while (!wait.armed()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  wait.Signal(AbortedError("upstream failed"));
  Status status = latch.Wait();
  EXPECT_EQ(status.code(), StatusCode::kAborted);
  EXPECT_NE(Str(status).find("waiting for 'semaphore 3'"), std::string::npos) << Str(status);
  EXPECT_EQ(after.load(), 0);
}

TEST(ExecutorTest, CancelDisarmsPendingWait) {
  CountingAllocator allocator(Allocator::Default());
  {
    auto executor = MakeExecutor(&allocator);
    ManualWait wait;
    std::atomic<int> after{0};
    Submission* submission = *executor->AcquireSubmission();
    Task* wait_task = *submission->AddWait(wait.source());
    Task* after_task = *submission->AddCall(&CountCall, &after);
    ASSERT_TRUE(submission->AddDependency(wait_task, after_task).ok());
    CompletionLatch latch;
    uint64_t id = 0;
    ASSERT_TRUE(executor->Submit(submission, latch.completion(), &id).ok());
    while (!wait.armed()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(executor->in_flight(), 1u);
    ASSERT_TRUE(executor->Cancel(id).ok());
    Status status = latch.Wait();
    EXPECT_EQ(status.code(), StatusCode::kCancelled);
    EXPECT_EQ(after.load(), 0);
    EXPECT_GE(wait.disarms(), 1);
    EXPECT_FALSE(wait.Signal());  // Nothing armed any more.
    ASSERT_TRUE(executor->WaitIdle(platform::kInfiniteFuture).ok());
    EXPECT_EQ(executor->Cancel(id).code(), StatusCode::kNotFound);
  }
  EXPECT_EQ(allocator.live(), 0u);
}

TEST(ExecutorTest, WaitIdleTimesOut) {
  auto executor = MakeExecutor(Allocator::Default());
  ManualWait wait;
  Submission* submission = *executor->AcquireSubmission();
  ASSERT_TRUE(submission->AddWait(wait.source()).ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  EXPECT_EQ(executor->WaitIdle(platform::DeadlineFromTimeout(5000000)).code(),
            StatusCode::kDeadlineExceeded);
  while (!wait.armed()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  wait.Signal();
  EXPECT_TRUE(latch.Wait().ok());
  EXPECT_TRUE(executor->WaitIdle(platform::kInfiniteFuture).ok());
}

TEST(ExecutorTest, ShutdownWithWorkInFlightCompletesEverything) {
  CountingAllocator allocator(Allocator::Default());
  constexpr int kSubmissions = 8;
  std::vector<std::unique_ptr<CompletionLatch>> latches;
  ManualWait wait;  // Never signalled.
  std::vector<std::unique_ptr<TileCounter>> counters;
  {
    auto executor = MakeExecutor(&allocator, 2);
    for (int i = 0; i < kSubmissions; ++i) {
      latches.push_back(std::make_unique<CompletionLatch>());
      counters.push_back(std::make_unique<TileCounter>(2000));
      counters.back()->sleep_us = 20;
      Submission* submission = *executor->AcquireSubmission();
      DispatchParams params;
      params.fn = &TileCounter::Fn;
      params.user_data = counters.back().get();
      params.tile_count = 2000;
      Task* dispatch = *submission->AddDispatch(params);
      if (i == 0) {
        Task* wait_task = *submission->AddWait(wait.source());
        ASSERT_TRUE(submission->AddDependency(dispatch, wait_task).ok());
      }
      ASSERT_TRUE(executor->Submit(submission, latches.back()->completion()).ok());
    }
    // Releasing the last reference cancels and drains.
  }
  for (auto& latch : latches) {
    EXPECT_TRUE(latch->done());
    Status status = latch->Wait(std::chrono::milliseconds(0));
    EXPECT_TRUE(status.ok() || status.code() == StatusCode::kCancelled) << Str(status);
  }
  for (auto& counter : counters) {
    for (auto& hit : counter->hits) ASSERT_LE(hit.load(), 1);
  }
  EXPECT_EQ(allocator.live(), 0u);
}

TEST(ExecutorTest, SteadyStateDoesNotAllocate) {
  CountingAllocator allocator(Allocator::Default());
  auto executor = MakeExecutor(&allocator, 2);
  auto run_once = [&] {
    std::atomic<int> count{0};
    TileCounter counter(64);
    Submission* submission = *executor->AcquireSubmission();
    Task* a = *submission->AddCall(&CountCall, &count);
    DispatchParams params;
    params.fn = &TileCounter::Fn;
    params.user_data = &counter;
    params.tile_count = 64;
    Task* d = *submission->AddDispatch(params);
    Task* b = *submission->AddCall(&CountCall, &count);
    EXPECT_TRUE(submission->AddDependency(a, d).ok());
    EXPECT_TRUE(submission->AddDependency(d, b).ok());
    CompletionLatch latch;
    EXPECT_TRUE(executor->Submit(submission, latch.completion()).ok());
    EXPECT_TRUE(latch.Wait().ok());
    EXPECT_EQ(count.load(), 2);
  };
  // A submission returns to the pool after its completion callback, so a
  // caller woken by the callback may briefly need a second one: fill the
  // pool (and the arenas' first blocks) first.
  Submission* warm[3];
  std::atomic<int> unused{0};
  for (auto& s : warm) {
    s = *executor->AcquireSubmission();
    ASSERT_TRUE(s->AddCall(&CountCall, &unused).ok());
  }
  for (auto& s : warm) executor->DiscardSubmission(s);
  run_once();
  size_t allocations = allocator.allocations();
  for (int i = 0; i < 100; ++i) run_once();
  EXPECT_EQ(allocator.allocations(), allocations);
}

TEST(ExecutorTest, TrimPoolFreesPooledSubmissionsOnly) {
  CountingAllocator allocator(Allocator::Default());
  auto executor = MakeExecutor(&allocator, 1);
  const size_t base = allocator.live();
  std::atomic<int> count{0};
  Submission* pooled[2];
  for (auto& s : pooled) {
    s = *executor->AcquireSubmission();
    ASSERT_TRUE(s->AddCall(&CountCall, &count).ok());
  }
  for (auto& s : pooled) executor->DiscardSubmission(s);
  EXPECT_GT(allocator.live(), base);
  // A submission held by its user is not in the pool: it survives.
  Submission* held = *executor->AcquireSubmission();
  EXPECT_EQ(executor->TrimPool(), 1u);
  EXPECT_GT(allocator.live(), base);
  ASSERT_TRUE(held->AddCall(&CountCall, &count).ok());
  CompletionLatch latch;
  ASSERT_TRUE(executor->Submit(held, latch.completion()).ok());
  ASSERT_TRUE(latch.Wait().ok());
  EXPECT_EQ(count.load(), 1);
  ASSERT_TRUE(executor->WaitIdle(platform::kInfiniteFuture).ok());
  EXPECT_EQ(executor->TrimPool(), 1u);
  EXPECT_EQ(allocator.live(), base);
  EXPECT_EQ(executor->TrimPool(), 0u);
  // The executor still works and refills its pool.
  Submission* again = *executor->AcquireSubmission();
  ASSERT_TRUE(again->AddCall(&CountCall, &count).ok());
  CompletionLatch latch2;
  ASSERT_TRUE(executor->Submit(again, latch2.completion()).ok());
  ASSERT_TRUE(latch2.Wait().ok());
  EXPECT_EQ(count.load(), 2);
}

TEST(ExecutorTest, ReleasingRightAfterSubmitRunsCompletionOnce) {
  auto executor = MakeExecutor(Allocator::Default(), 1);
  std::atomic<int> count{0};
  CompletionLatch latch;
  Submission* submission = *executor->AcquireSubmission();
  ASSERT_TRUE(submission->AddCall(&CountCall, &count).ok());
  ASSERT_TRUE(executor->Submit(submission, latch.completion()).ok());
  executor.reset();
  EXPECT_EQ(latch.calls(), 1);
  Status status = latch.Wait(std::chrono::milliseconds(0));
  EXPECT_TRUE(status.ok() || status.code() == StatusCode::kCancelled);
}

}  // namespace
}  // namespace osprey::task
