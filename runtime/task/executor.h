// Executor: a pool of worker threads running submissions (task DAGs).
//
// Ready tasks go to per-worker queues; an idle worker takes from its own
// queue first and then steals from the others. Dispatch tasks are split into
// one shard per worker; shards claim batches of tiles with an atomic counter,
// so every tile runs exactly once and all workers stay busy until the tiles
// run out. See runtime/task/README.md for the design.
#ifndef OSPREY_RUNTIME_TASK_EXECUTOR_H_
#define OSPREY_RUNTIME_TASK_EXECUTOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/base/allocator.h"
#include "runtime/base/platform/platform.h"
#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"
#include "runtime/task/submission.h"

namespace osprey::task {

struct ExecutorOptions {
  // Number of workers; 0 means one per processor.
  uint32_t worker_count = 0;
  // Pins worker i to processor (first_processor + i) % ProcessorCount().
  bool pin_workers = false;
  uint32_t first_processor = 0;
  // Scratch memory per worker (TaskContext::local_memory).
  uint32_t worker_local_memory_size = 64 * 1024;
  // Stack of each worker thread in bytes; 0: the platform's default.
  // Compiled dispatches keep their scratch on it.
  uint32_t worker_stack_size = 0;
  // Worker thread priority where the platform has priorities (RTOS tasks,
  // platform::ThreadOptions::priority); -1: that of the thread calling
  // Create.
  int32_t worker_priority = -1;
  // Thread name prefix (borrowed for Create only).
  const char* name = "osprey-task";
};

// Thread-safe. Destroying the executor (releasing the last reference)
// cancels every in-flight submission, waits for running tasks to finish
// and for every completion callback to return, then joins the workers. The
// last reference must not be released on a worker (e.g. from a completion).
class Executor final : public RefObject {
 public:
  static constexpr uint32_t kMaxWorkers = 64;

  // Starts the workers. INVALID_ARGUMENT for more than kMaxWorkers workers,
  // UNAVAILABLE if threads cannot be created (e.g. bare-metal builds).
  // |host_allocator| is borrowed and must outlive the executor.
  static StatusOr<ref_ptr<Executor>> Create(const ExecutorOptions& options,
                                            osprey::Allocator* host_allocator);

  uint32_t worker_count() const { return worker_count_; }
  uint32_t worker_local_memory_size() const { return local_memory_size_; }

  // Takes an empty submission from the pool (allocating one if the pool is
  // empty). The caller owns it until Submit() or DiscardSubmission().
  StatusOr<Submission*> AcquireSubmission();
  // Returns an unsubmitted submission to the pool.
  void DiscardSubmission(Submission* submission);

  // Starts |submission| and returns at once; |completion| runs when it is
  // done (for an empty submission: before Submit returns). Ownership of
  // |submission| passes to the executor, except for INVALID_ARGUMENT (a
  // submission of another executor) and FAILED_PRECONDITION for one already
  // in flight. |out_id| (optional) receives an id for Cancel().
  // FAILED_PRECONDITION while shutting down (the completion then runs with
  // CANCELLED and the submission is recycled).
  Status Submit(Submission* submission, Completion completion, uint64_t* out_id = nullptr);

  // Cancels an in-flight submission: tasks not yet started are skipped,
  // armed waits are disarmed, running tasks finish, and the completion gets
  // CANCELLED (unless it failed earlier). NOT_FOUND if |id| is not in
  // flight (e.g. already completed).
  Status Cancel(uint64_t id);
  // Cancels every in-flight submission.
  void CancelAll();

  // Blocks until no submission is in flight or |deadline_ns| passes
  // (DEADLINE_EXCEEDED). Do not call from a worker.
  Status WaitIdle(int64_t deadline_ns);

  // Number of submissions submitted and not yet completed.
  uint32_t in_flight() const;

  // Frees the pooled (completed) submissions and their arena blocks;
  // submissions in flight are not touched and return to the pool when
  // they complete. Returns the number freed.
  uint32_t TrimPool();

 private:
  friend class osprey::Allocator;  // Constructs it for MakeRef().
  friend class Submission;
  friend void ResolveWait(WaitTask* token, Status status);

  Executor(const ExecutorOptions& options, osprey::Allocator* host_allocator);
  ~Executor() override;
  Status Start(const ExecutorOptions& options);
  void Shutdown();

  static void WorkerMain(void* arg);
  void WorkerLoop(Worker* worker);
  Task* TryTakeWork(Worker* worker);
  void RunTask(Task* task, Worker* worker);
  void RunShard(ShardTask* shard, Worker* worker);

  void PushToQueue(Worker* target, Task* task);
  void WakeWorkers(uint32_t count);
  // Retires |task|: releases its successors and the submission's count.
  void Retire(Task* task, Worker* worker);
  void ArmWait(WaitTask* wait, Worker* worker);
  // Disarms an armed wait; resolves it as skipped if the source let go.
  void DisarmWait(WaitTask* wait, Worker* worker);
  void ReleasePending(Submission* submission);
  void Complete(Submission* submission);
  // Pins |submission| unless it is already completing.
  static bool TryPin(Submission* submission);
  // Marks a pinned submission cancelled, disarms its waits and unpins it.
  void CancelPinned(Submission* submission, Worker* worker);

  osprey::Allocator* host_allocator_;
  uint32_t worker_count_ = 0;
  uint32_t local_memory_size_;
  Worker* workers_ = nullptr;
  void* worker_memory_ = nullptr;
  std::atomic<uint32_t> started_workers_{0};

  // Sleep/wake: workers sleep on sleep_cv_ when all queues are empty. The
  // two counters form a Dekker pair so no wake-up is lost.
  platform::Mutex sleep_mutex_;
  platform::ConditionVariable sleep_cv_;
  std::atomic<uint32_t> queued_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<bool> exit_{false};
  std::atomic<uint32_t> round_robin_{0};

  // Submission bookkeeping.
  mutable platform::Mutex mutex_;
  platform::ConditionVariable idle_cv_;
  Submission* pool_ = nullptr;
  Submission* in_flight_head_ = nullptr;
  uint32_t in_flight_count_ = 0;
  uint64_t next_id_ = 1;
  bool shutting_down_ = false;
};

}  // namespace osprey::task

#endif  // OSPREY_RUNTIME_TASK_EXECUTOR_H_
