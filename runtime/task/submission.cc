// Building submissions: task creation in the arena and dependency edges.
#include "runtime/task/submission.h"

#include <new>

#include "runtime/task/executor.h"

namespace osprey::task {

namespace {
// Each worker gets this many batches of a large dispatch, so a worker that
// is slowed down (preempted, sharing its core) leaves work for the others.
constexpr uint32_t kBatchesPerWorker = 8;
// Keeps next_tile_ + the overshoot of every shard within 32 bits.
constexpr uint32_t kMaxTiles = 1u << 31;
}  // namespace

Submission::Submission(Executor* executor, osprey::Allocator* host_allocator)
    : executor_(executor), arena_(host_allocator, 4096) {}

void Submission::Reset() {
  arena_.Reset();
  first_task_ = nullptr;
  last_task_ = nullptr;
  waits_ = nullptr;
  task_count_ = 0;
  pending_.store(0, std::memory_order_relaxed);
  failed_.store(0, std::memory_order_relaxed);
  failure_.IgnoreError();
  completion_ = Completion{};
  id_ = 0;
  cancel_requested_ = false;
  prev_ = nullptr;
  next_ = nullptr;
}

void Submission::Fail(Status status) {
  uint32_t expected = 0;
  if (failed_.compare_exchange_strong(expected, 1, std::memory_order_seq_cst)) {
    failure_ = std::move(status);
  } else {
    status.IgnoreError();
  }
}

template <typename T>
StatusOr<T*> Submission::NewTask() {
  void* memory = nullptr;
  OSPREY_RETURN_IF_ERROR(arena_.Allocate(sizeof(T), alignof(T), &memory),
                         "allocating task %u", unsigned(task_count_));
  T* task = new (memory) T(this, task_count_++);
  if (last_task_) {
    last_task_->next_in_submission_ = task;
  } else {
    first_task_ = task;
  }
  last_task_ = task;
  return task;
}

StatusOr<Task*> Submission::AddCall(CallFn fn, void* user_data, const char* name) {
  if (!fn) return InvalidArgumentError("call task '%s' has no function", name ? name : "");
  OSPREY_ASSIGN_OR_RETURN(CallTask * task, NewTask<CallTask>());
  task->fn_ = fn;
  task->user_data_ = user_data;
  task->name_ = name ? name : "call";
  return static_cast<Task*>(task);
}

StatusOr<Task*> Submission::AddDispatch(const DispatchParams& params) {
  const char* name = params.name ? params.name : "dispatch";
  if (!params.fn) return InvalidArgumentError("dispatch '%s' has no tile function", name);
  if (params.tile_count > kMaxTiles) {
    return InvalidArgumentError("dispatch '%s' has %u tiles; at most %u are supported", name,
                                unsigned(params.tile_count), unsigned(kMaxTiles));
  }
  if (params.local_memory_size > executor_->worker_local_memory_size()) {
    return ResourceExhaustedError(
        "dispatch '%s' needs %u bytes of local memory; workers have %u", name,
        unsigned(params.local_memory_size), unsigned(executor_->worker_local_memory_size()));
  }
  uint32_t workers = executor_->worker_count();
  uint32_t batch = params.tiles_per_batch;
  if (batch == 0) {
    batch = params.tile_count / (workers * kBatchesPerWorker);
    if (batch == 0) batch = 1;
  }
  if (batch > params.tile_count && params.tile_count > 0) batch = params.tile_count;
  uint32_t batches = params.tile_count == 0 ? 0 : (params.tile_count - 1) / batch + 1;
  uint32_t shard_count = batches < workers ? batches : workers;

  OSPREY_ASSIGN_OR_RETURN(DispatchTask * task, NewTask<DispatchTask>());
  task->params_ = params;
  task->params_.name = name;
  task->batch_ = batch;
  task->shard_count_ = shard_count;
  if (shard_count > 0) {
    void* memory = nullptr;
    OSPREY_RETURN_IF_ERROR(
        arena_.Allocate(sizeof(ShardTask) * shard_count, alignof(ShardTask), &memory),
        "allocating %u shards of dispatch '%s'", unsigned(shard_count), name);
    task->shards_ = static_cast<ShardTask*>(memory);
    for (uint32_t i = 0; i < shard_count; ++i) new (&task->shards_[i]) ShardTask(this, task);
  }
  return static_cast<Task*>(task);
}

StatusOr<Task*> Submission::AddBarrier() {
  OSPREY_ASSIGN_OR_RETURN(Task * task, NewTask<BarrierTask>());
  return task;
}

StatusOr<Task*> Submission::AddWait(const WaitSource& source) {
  const char* name = source.name ? source.name : "wait";
  if (!source.arm || !source.disarm) {
    return InvalidArgumentError("wait '%s' needs both arm and disarm functions", name);
  }
  OSPREY_ASSIGN_OR_RETURN(WaitTask * task, NewTask<WaitTask>());
  task->source_ = source;
  task->source_.name = name;
  task->next_wait_ = waits_;
  waits_ = task;
  return static_cast<Task*>(task);
}

Status Submission::AddDependency(Task* predecessor, Task* successor) {
  if (!predecessor || !successor) return InvalidArgumentError("dependency on a null task");
  if (predecessor->submission_ != this || successor->submission_ != this) {
    return InvalidArgumentError("dependency between tasks of different submissions");
  }
  if (predecessor->type_ == TaskType::kShard || successor->type_ == TaskType::kShard) {
    return InvalidArgumentError("dependency on an internal shard task");
  }
  if (predecessor->sequence_ >= successor->sequence_) {
    return InvalidArgumentError(
        "task %u cannot depend on task %u: predecessors must be added first "
        "(this keeps the graph acyclic)",
        unsigned(successor->sequence_), unsigned(predecessor->sequence_));
  }
  void* memory = nullptr;
  OSPREY_RETURN_IF_ERROR(arena_.Allocate(sizeof(Task::Edge), alignof(Task::Edge), &memory),
                         "allocating a dependency edge");
  auto* edge = static_cast<Task::Edge*>(memory);
  edge->successor = successor;
  edge->next = predecessor->successors_;
  predecessor->successors_ = edge;
  successor->pending_predecessors_.fetch_add(1, std::memory_order_relaxed);
  return OkStatus();
}

}  // namespace osprey::task
