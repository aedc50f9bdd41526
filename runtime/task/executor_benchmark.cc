// Benchmarks of the task executor alone: empty-submission latency,
// dispatch-to-dispatch latency and the scaling of a compute-bound dispatch.
#include <benchmark/benchmark.h>

#include <condition_variable>
#include <mutex>

#include "runtime/task/executor.h"

namespace osprey::task {
namespace {

ref_ptr<Executor> MakeExecutor(uint32_t workers) {
  ExecutorOptions options;
  options.worker_count = workers;
  return std::move(Executor::Create(options, Allocator::Default())).value();
}

// A completion latch with no allocation per use.
struct Latch {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  static void Fn(void* user_data, Status status) {
    auto* self = static_cast<Latch*>(user_data);
    status.IgnoreError();
    std::lock_guard<std::mutex> lock(self->mutex);
    self->done = true;
    self->cv.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return done; });
    done = false;
  }
};

Status NoopCall(void*, const TaskContext&) { return OkStatus(); }
Status NoopTiles(void*, uint32_t, uint32_t, const TaskContext&) { return OkStatus(); }

// Submit + completion of a submission holding one no-op call.
void BM_SingleCallSubmission(benchmark::State& state) {
  auto executor = MakeExecutor(uint32_t(state.range(0)));
  Latch latch;
  for (auto _ : state) {
    Submission* submission = *executor->AcquireSubmission();
    (void)submission->AddCall(&NoopCall, nullptr);
    (void)executor->Submit(submission, {&Latch::Fn, &latch});
    latch.Wait();
  }
}
BENCHMARK(BM_SingleCallSubmission)->Arg(1)->Arg(2)->UseRealTime();

// A chain of small dispatches (4 tiles each); time per dispatch.
void BM_DispatchChain(benchmark::State& state) {
  auto executor = MakeExecutor(uint32_t(state.range(0)));
  constexpr int kChain = 64;
  Latch latch;
  for (auto _ : state) {
    Submission* submission = *executor->AcquireSubmission();
    Task* previous = nullptr;
    for (int i = 0; i < kChain; ++i) {
      DispatchParams params;
      params.fn = &NoopTiles;
      params.tile_count = 4;
      Task* task = *submission->AddDispatch(params);
      if (previous) (void)submission->AddDependency(previous, task);
      previous = task;
    }
    (void)executor->Submit(submission, {&Latch::Fn, &latch});
    latch.Wait();
  }
  state.SetItemsProcessed(state.iterations() * kChain);
}
BENCHMARK(BM_DispatchChain)->Arg(1)->Arg(2)->UseRealTime();

Status SpinTiles(void* user_data, uint32_t begin, uint32_t end, const TaskContext&) {
  volatile uint64_t acc = 0;
  for (uint32_t tile = begin; tile < end; ++tile) {
    uint64_t x = tile;
    for (int i = 0; i < 20000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    acc = acc + x;
  }
  return OkStatus();
}

// A compute-bound dispatch of 256 tiles (~20k multiply-adds each).
void BM_ComputeDispatch(benchmark::State& state) {
  auto executor = MakeExecutor(uint32_t(state.range(0)));
  Latch latch;
  for (auto _ : state) {
    Submission* submission = *executor->AcquireSubmission();
    DispatchParams params;
    params.fn = &SpinTiles;
    params.tile_count = 256;
    (void)submission->AddDispatch(params);
    (void)executor->Submit(submission, {&Latch::Fn, &latch});
    latch.Wait();
  }
}
BENCHMARK(BM_ComputeDispatch)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace osprey::task
