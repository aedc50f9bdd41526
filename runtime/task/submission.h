// Submissions: a DAG of tasks (calls, tiled dispatches, barriers and waits
// on external conditions) built by one thread and run by an Executor.
//
// A submission is taken from Executor::AcquireSubmission(), filled with
// tasks and dependency edges, and handed back with Executor::Submit(). Its
// tasks live in the submission's arena until it completes; after that the
// submission (and every Task* obtained from it) is recycled. A failing task
// fails the whole submission: work not yet started is skipped, and the
// first error (with its context) reaches the completion callback.
#ifndef OSPREY_RUNTIME_TASK_SUBMISSION_H_
#define OSPREY_RUNTIME_TASK_SUBMISSION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/base/arena.h"
#include "runtime/base/platform/platform.h"
#include "runtime/base/status.h"

namespace osprey::task {

class Executor;
class Submission;
struct Worker;

//===----------------------------------------------------------------------===//
// Task callbacks
//===----------------------------------------------------------------------===//

// Where a call or a tile batch runs. Borrowed for the duration of the call.
struct TaskContext {
  // Index of the worker running it, in [0, Executor::worker_count()).
  uint32_t worker_id = 0;
  // Scratch memory private to the worker (not zeroed, not preserved across
  // calls) of ExecutorOptions::worker_local_memory_size bytes.
  std::span<uint8_t> local_memory;
};

// A unit of work. A non-OK result fails the submission.
using CallFn = Status (*)(void* user_data, const TaskContext& context);

// Runs tiles [begin, end) of a dispatch. A non-OK result fails the
// submission; tiles not yet claimed are then skipped. Batches of one
// dispatch run concurrently on several workers.
using TileFn = Status (*)(void* user_data, uint32_t begin, uint32_t end,
                          const TaskContext& context);

struct DispatchParams {
  TileFn fn = nullptr;
  void* user_data = nullptr;
  // Number of tiles (e.g. workgroups); each runs exactly once unless the
  // submission fails first. 0 completes at once.
  uint32_t tile_count = 0;
  // Scratch each tile batch needs from the worker's local memory.
  // RESOURCE_EXHAUSTED at AddDispatch if workers have less.
  uint32_t local_memory_size = 0;
  // Tiles claimed per atomic operation; 0 picks a batch that gives every
  // worker several batches (1 for small dispatches).
  uint32_t tiles_per_batch = 0;
  // For error messages; borrowed, must outlive the submission.
  const char* name = "dispatch";
};

// Handle given to a wait source (see WaitSource and ResolveWait).
class WaitTask;

// An external condition (e.g. a semaphore timepoint) a wait task waits for
// without occupying a worker.
struct WaitSource {
  // Called once when the wait task becomes ready. On OK the source must call
  // ResolveWait(token, ...) exactly once later (from any thread, or before
  // arm returns) unless disarm() returns true. An error return resolves the
  // wait with that error and the source must not call ResolveWait.
  Status (*arm)(void* user_data, WaitTask* token) = nullptr;
  // Called if the submission is cancelled while armed, possibly more than
  // once and from any thread. Returns true if the source will never call
  // ResolveWait for |token| (the registration was removed), false if it has
  // called it or still will. Must not block on the resolution. Required.
  bool (*disarm)(void* user_data, WaitTask* token) = nullptr;
  void* user_data = nullptr;
  const char* name = "wait";  // Borrowed; must outlive the submission.
};

// Resolves an armed wait task (see WaitSource): OK when the condition holds,
// an error when it never will. Thread-safe and short: a worker retires the
// wait, so no successor or completion runs on the calling thread.
void ResolveWait(WaitTask* token, Status status);

//===----------------------------------------------------------------------===//
// Task
//===----------------------------------------------------------------------===//

enum class TaskType : uint8_t {
  kCall,      // Runs a CallFn on a worker.
  kDispatch,  // Splits tiles across workers (see DispatchParams).
  kBarrier,   // No work: joins predecessors and fans out to successors.
  kWait,      // Waits for an external condition (see WaitSource).
  kShard,     // Internal: one worker's share of a dispatch.
};

// A node of the DAG. Owned by its submission; the pointer is valid until
// the submission completes (or is discarded). Not for use by callers except
// as an argument to Submission::AddDependency.
class Task {
 public:
  TaskType type() const { return type_; }

 protected:
  friend class Executor;
  friend class Submission;
  friend void ResolveWait(WaitTask* token, Status status);

  struct Edge {
    Task* successor;
    Edge* next;
  };

  Task(TaskType type, Submission* submission, uint32_t sequence)
      : type_(type), sequence_(sequence), submission_(submission) {}

  TaskType type_;
  uint32_t sequence_;              // Creation order; edges go forward only.
  Submission* submission_;
  std::atomic<uint32_t> pending_predecessors_{0};
  Edge* successors_ = nullptr;
  Task* next_in_submission_ = nullptr;
  Task* next_in_queue_ = nullptr;  // Ready-queue link.
};

class CallTask final : public Task {
 private:
  friend class Executor;
  friend class Submission;
  CallTask(Submission* s, uint32_t seq) : Task(TaskType::kCall, s, seq) {}
  CallFn fn_ = nullptr;
  void* user_data_ = nullptr;
  const char* name_ = "";
};

class BarrierTask final : public Task {
 private:
  friend class Submission;
  BarrierTask(Submission* s, uint32_t seq) : Task(TaskType::kBarrier, s, seq) {}
};

class DispatchTask;

class ShardTask final : public Task {
 private:
  friend class Executor;
  friend class Submission;
  ShardTask(Submission* s, DispatchTask* dispatch)
      : Task(TaskType::kShard, s, 0), dispatch_(dispatch) {}
  DispatchTask* dispatch_;
};

class DispatchTask final : public Task {
 private:
  friend class Executor;
  friend class Submission;
  DispatchTask(Submission* s, uint32_t seq) : Task(TaskType::kDispatch, s, seq) {}
  DispatchParams params_;
  uint32_t batch_ = 1;
  uint32_t shard_count_ = 0;
  ShardTask* shards_ = nullptr;  // shard_count_ entries.
  std::atomic<uint32_t> next_tile_{0};
  // Tiles run or given up (after a failure); the dispatch retires at
  // tile_count.
  std::atomic<uint32_t> tiles_retired_{0};
};

class WaitTask final : public Task {
 private:
  friend class Executor;
  friend class Submission;
  friend void ResolveWait(WaitTask* token, Status status);
  enum State : uint32_t { kPending, kArming, kArmed, kResolved };
  WaitTask(Submission* s, uint32_t seq) : Task(TaskType::kWait, s, seq) {}
  WaitSource source_;
  std::atomic<uint32_t> state_{kPending};
  WaitTask* next_wait_ = nullptr;  // All waits of the submission.
};

//===----------------------------------------------------------------------===//
// Submission
//===----------------------------------------------------------------------===//

// Called once when every task of a submission has retired or been skipped,
// with OK or the first failure. Runs on a worker, on a thread resolving a
// wait, or on the submitting thread (empty submissions). Memory from
// Submission::Allocate is still valid during the call. It must not block on
// work of the same executor and must not release the executor's last
// reference.
struct Completion {
  void (*fn)(void* user_data, Status status) = nullptr;
  void* user_data = nullptr;
};

// Builder and in-flight state of one DAG. Building is thread-compatible
// (one thread); after Submit() the submission belongs to the executor and
// must not be touched (tasks cannot be added to a running graph).
class Submission {
 public:
  Submission(const Submission&) = delete;
  Submission& operator=(const Submission&) = delete;

  // Add tasks. Memory comes from the submission's arena (reused across
  // submissions); RESOURCE_EXHAUSTED if the host allocator is out of memory.
  StatusOr<Task*> AddCall(CallFn fn, void* user_data, const char* name = "call");
  // INVALID_ARGUMENT without fn; RESOURCE_EXHAUSTED if the dispatch needs
  // more local memory than each worker has.
  StatusOr<Task*> AddDispatch(const DispatchParams& params);
  StatusOr<Task*> AddBarrier();
  // INVALID_ARGUMENT unless |source| has arm and disarm.
  StatusOr<Task*> AddWait(const WaitSource& source);

  // |successor| starts only after |predecessor| retired. Both must belong to
  // this submission and |predecessor| must have been added first (which
  // keeps the graph acyclic); INVALID_ARGUMENT otherwise.
  Status AddDependency(Task* predecessor, Task* successor);

  // Scratch memory for the caller's per-submission state (e.g. what its
  // tasks' user_data points at). Valid until the completion callback
  // returns (or the submission is discarded); destructors are not run.
  Status Allocate(size_t size, size_t alignment, void** out_ptr) {
    return arena_.Allocate(size, alignment, out_ptr);
  }
  template <typename T, typename... Args>
  StatusOr<T*> New(Args&&... args) {
    return arena_.New<T>(std::forward<Args>(args)...);
  }
  // The arena behind Allocate(), for helpers that take an Arena. Same
  // lifetime; borrowed.
  Arena* arena() { return &arena_; }

  size_t task_count() const { return task_count_; }
  // Bytes of task memory taken from the arena so far.
  size_t arena_bytes() const { return arena_.bytes_allocated(); }

 private:
  friend class Executor;
  friend class osprey::Allocator;  // Constructs and destroys pooled ones.
  friend void ResolveWait(WaitTask* token, Status status);

  Submission(Executor* executor, osprey::Allocator* host_allocator);
  ~Submission() = default;

  template <typename T>
  StatusOr<T*> NewTask();
  void Reset();
  // Records |status| as the submission's failure unless one is recorded.
  void Fail(Status status);
  bool failed() const { return failed_.load(std::memory_order_acquire) != 0; }

  Executor* executor_;
  Arena arena_;
  Task* first_task_ = nullptr;
  Task* last_task_ = nullptr;
  WaitTask* waits_ = nullptr;
  uint32_t task_count_ = 0;
  // Tasks not yet retired, plus temporary pins (submitting, cancelling).
  std::atomic<uint32_t> pending_{0};
  std::atomic<uint32_t> failed_{0};
  Status failure_;  // Written once by whoever sets failed_ first.
  Completion completion_;
  uint64_t id_ = 0;
  bool cancel_requested_ = false;  // Guarded by the executor's mutex.
  // Links in the executor's in-flight list or free pool.
  Submission* prev_ = nullptr;
  Submission* next_ = nullptr;
};

}  // namespace osprey::task

#endif  // OSPREY_RUNTIME_TASK_SUBMISSION_H_
