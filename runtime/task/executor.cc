// Executor: worker threads, ready queues, work stealing, retirement and
// completion of submissions.
#include "runtime/task/executor.h"

#include <stdio.h>

#include <new>

namespace osprey::task {

// One worker thread and its ready queue (a FIFO of intrusive Task links).
struct Worker {
  Executor* executor = nullptr;
  uint32_t id = 0;
  platform::Thread thread;
  platform::Mutex queue_mutex;
  Task* head = nullptr;  // Guarded by queue_mutex.
  Task* tail = nullptr;  // Guarded by queue_mutex.
  // A ready task this worker runs next without queueing it (the first
  // successor readied by the task it just retired). Worker-private.
  Task* next = nullptr;
  std::span<uint8_t> local_memory;
};

namespace {
#if OSPREY_HAVE_THREADS
// The worker running on this thread (null elsewhere). Only hosted builds
// have threads, and with them thread-local storage.
thread_local Worker* g_current_worker = nullptr;
Worker* CurrentWorker() { return g_current_worker; }
#else
Worker* CurrentWorker() { return nullptr; }
#endif

constexpr size_t kLocalMemoryAlignment = 64;
// Checks of the queues before a worker goes to sleep; short, because the
// machine may be shared with other processes.
constexpr int kSpinRounds = 16;

size_t AlignUp(size_t value, size_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}
}  // namespace

//===----------------------------------------------------------------------===//
// Creation and shutdown
//===----------------------------------------------------------------------===//

Executor::Executor(const ExecutorOptions& options, osprey::Allocator* host_allocator)
    : host_allocator_(host_allocator), local_memory_size_(options.worker_local_memory_size) {}

StatusOr<ref_ptr<Executor>> Executor::Create(const ExecutorOptions& options,
                                             osprey::Allocator* host_allocator) {
  if (!host_allocator) return InvalidArgumentError("executor needs a host allocator");
  uint32_t count = options.worker_count ? options.worker_count : platform::ProcessorCount();
  if (count > kMaxWorkers) {
    return InvalidArgumentError("%u workers requested; at most %u are supported",
                                unsigned(count), unsigned(kMaxWorkers));
  }
  OSPREY_ASSIGN_OR_RETURN(auto executor, MakeRef<Executor>(host_allocator, options, host_allocator));
  OSPREY_RETURN_IF_ERROR(executor->Start(options), "starting %u task workers",
                         unsigned(count));
  return executor;
}

Status Executor::Start(const ExecutorOptions& options) {
  uint32_t count = options.worker_count ? options.worker_count : platform::ProcessorCount();
  size_t workers_size = AlignUp(sizeof(Worker) * count, kLocalMemoryAlignment);
  size_t local_size = AlignUp(local_memory_size_, kLocalMemoryAlignment);
  OSPREY_RETURN_IF_ERROR(host_allocator_->Allocate(workers_size + local_size * count,
                                                   kLocalMemoryAlignment, &worker_memory_),
                         "allocating %u workers with %u bytes of local memory each",
                         unsigned(count), unsigned(local_memory_size_));
  auto* base = static_cast<uint8_t*>(worker_memory_);
  workers_ = reinterpret_cast<Worker*>(base);
  for (uint32_t i = 0; i < count; ++i) {
    Worker* worker = new (&workers_[i]) Worker();
    worker->executor = this;
    worker->id = i;
    worker->local_memory = {base + workers_size + local_size * i, local_memory_size_};
  }
  worker_count_ = count;

  uint32_t processors = platform::ProcessorCount();
  for (uint32_t i = 0; i < count; ++i) {
    char name[16];
    snprintf(name, sizeof(name), "%.12s-%u", options.name ? options.name : "osprey-task",
             unsigned(i & 63));
    platform::ThreadOptions thread_options;
    thread_options.name = name;
    thread_options.stack_size = options.worker_stack_size;
    thread_options.priority = options.worker_priority;
    if (options.pin_workers && processors > 0) {
      thread_options.processor_affinity = int32_t((options.first_processor + i) % processors);
    }
    OSPREY_RETURN_IF_ERROR(workers_[i].thread.Start(thread_options, &WorkerMain, &workers_[i]),
                           "starting worker %u", unsigned(i));
    started_workers_.fetch_add(1, std::memory_order_relaxed);
  }
  return OkStatus();
}

Executor::~Executor() {
  // A worker cannot join itself (see the class comment).
  OSPREY_DCHECK(!CurrentWorker() || CurrentWorker()->executor != this);
  Shutdown();
}

void Executor::Shutdown() {
  {
    platform::MutexLock lock(mutex_);
    shutting_down_ = true;
  }
  if (started_workers_.load() > 0) {
    CancelAll();
    WaitIdle(platform::kInfiniteFuture).IgnoreError();
  }
  {
    platform::MutexLock lock(sleep_mutex_);
    exit_.store(true, std::memory_order_seq_cst);
    sleep_cv_.NotifyAll();
  }
  for (uint32_t i = 0; i < worker_count_; ++i) workers_[i].thread.Join();
  for (uint32_t i = 0; i < worker_count_; ++i) workers_[i].~Worker();
  host_allocator_->Free(worker_memory_);
  workers_ = nullptr;
  worker_memory_ = nullptr;
  while (pool_) {
    Submission* next = pool_->next_;
    host_allocator_->Delete(pool_);
    pool_ = next;
  }
}

//===----------------------------------------------------------------------===//
// Submissions
//===----------------------------------------------------------------------===//

StatusOr<Submission*> Executor::AcquireSubmission() {
  {
    platform::MutexLock lock(mutex_);
    if (pool_) {
      Submission* submission = pool_;
      pool_ = submission->next_;
      submission->next_ = nullptr;
      return submission;
    }
  }
  OSPREY_ASSIGN_OR_RETURN(Submission * submission,
                          host_allocator_->New<Submission>(this, host_allocator_),
                          "allocating a task submission");
  return submission;
}

void Executor::DiscardSubmission(Submission* submission) {
  if (!submission) return;
  platform::MutexLock lock(mutex_);
  submission->Reset();
  submission->next_ = pool_;
  pool_ = submission;
}

Status Executor::Submit(Submission* submission, Completion completion, uint64_t* out_id) {
  if (out_id) *out_id = 0;
  if (!submission) return InvalidArgumentError("null submission");
  if (submission->executor_ != this) {
    return InvalidArgumentError("submission belongs to another executor");
  }
  if (submission->id_ != 0) {
    return FailedPreconditionError("submission %llu is already in flight",
                                   (unsigned long long)submission->id_);
  }
  submission->completion_ = completion;
  {
    platform::MutexLock lock(mutex_);
    if (!shutting_down_) {
      submission->id_ = next_id_++;
      // One extra count pins the submission while its roots are enqueued.
      submission->pending_.store(submission->task_count_ + 1, std::memory_order_relaxed);
      submission->prev_ = nullptr;
      submission->next_ = in_flight_head_;
      if (in_flight_head_) in_flight_head_->prev_ = submission;
      in_flight_head_ = submission;
      ++in_flight_count_;
    } else {
      submission->id_ = 0;
    }
  }
  if (submission->id_ == 0) {
    if (completion.fn) completion.fn(completion.user_data, CancelledError("executor is shutting down"));
    DiscardSubmission(submission);
    return FailedPreconditionError("executor is shutting down; submission not started");
  }
  if (out_id) *out_id = submission->id_;

  // Collect the roots before enqueueing any: once a root runs, its
  // successors' counts drop and they must not be mistaken for roots.
  Task* roots = nullptr;
  Task** roots_tail = &roots;
  for (Task* task = submission->first_task_; task; task = task->next_in_submission_) {
    if (task->pending_predecessors_.load(std::memory_order_relaxed) == 0) {
      task->next_in_queue_ = nullptr;
      *roots_tail = task;
      roots_tail = &task->next_in_queue_;
    }
  }
  uint32_t root_count = 0;
  while (roots) {
    Task* next = roots->next_in_queue_;
    roots->next_in_queue_ = nullptr;
    PushToQueue(&workers_[round_robin_.fetch_add(1, std::memory_order_relaxed) % worker_count_],
                roots);
    ++root_count;
    roots = next;
  }
  WakeWorkers(root_count);
  ReleasePending(submission);
  return OkStatus();
}

bool Executor::TryPin(Submission* submission) {
  uint32_t pending = submission->pending_.load(std::memory_order_acquire);
  while (pending != 0) {
    if (submission->pending_.compare_exchange_weak(pending, pending + 1,
                                                   std::memory_order_acq_rel)) {
      return true;
    }
  }
  return false;
}

Status Executor::Cancel(uint64_t id) {
  Submission* target = nullptr;
  {
    platform::MutexLock lock(mutex_);
    for (Submission* s = in_flight_head_; s; s = s->next_) {
      if (s->id_ == id) {
        if (TryPin(s)) target = s;
        break;
      }
    }
  }
  if (!target) return NotFoundError("no submission %llu in flight", (unsigned long long)id);
  CancelPinned(target, nullptr);
  return OkStatus();
}

void Executor::CancelAll() {
  while (true) {
    Submission* target = nullptr;
    {
      platform::MutexLock lock(mutex_);
      for (Submission* s = in_flight_head_; s; s = s->next_) {
        if (!s->cancel_requested_) {
          s->cancel_requested_ = true;
          if (TryPin(s)) {
            target = s;
            break;
          }
        }
      }
    }
    if (!target) return;
    CancelPinned(target, nullptr);
  }
}

void Executor::CancelPinned(Submission* submission, Worker* worker) {
  submission->Fail(CancelledError("submission %llu cancelled",
                                  (unsigned long long)submission->id_));
  // Fail() (seq_cst) happens before these loads; ArmWait() moves a wait to
  // kArmed (seq_cst) before it checks for failure. So every armed wait is
  // disarmed either here or by the thread that armed it.
  for (WaitTask* wait = submission->waits_; wait; wait = wait->next_wait_) {
    if (wait->state_.load(std::memory_order_seq_cst) != WaitTask::kArmed) continue;
    DisarmWait(wait, worker);
  }
  ReleasePending(submission);
}

Status Executor::WaitIdle(int64_t deadline_ns) {
  platform::MutexLock lock(mutex_);
  while (in_flight_count_ > 0) {
    if (!idle_cv_.WaitUntil(mutex_, deadline_ns) && in_flight_count_ > 0 &&
        platform::MonotonicNanos() >= deadline_ns) {
      return DeadlineExceededError("%u task submissions still in flight",
                                   unsigned(in_flight_count_));
    }
  }
  return OkStatus();
}

uint32_t Executor::in_flight() const {
  platform::MutexLock lock(mutex_);
  return in_flight_count_;
}

uint32_t Executor::TrimPool() {
  Submission* pool = nullptr;
  {
    platform::MutexLock lock(mutex_);
    pool = pool_;
    pool_ = nullptr;
  }
  uint32_t freed = 0;
  while (pool) {
    Submission* next = pool->next_;
    host_allocator_->Delete(pool);
    pool = next;
    ++freed;
  }
  return freed;
}

void Executor::ReleasePending(Submission* submission) {
  if (submission->pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) Complete(submission);
}

void Executor::Complete(Submission* submission) {
  Status status;
  if (submission->failed()) status = std::move(submission->failure_);
  Completion completion = submission->completion_;
  if (completion.fn) {
    completion.fn(completion.user_data, std::move(status));
  } else {
    status.IgnoreError();
  }
  platform::MutexLock lock(mutex_);
  if (submission->prev_) {
    submission->prev_->next_ = submission->next_;
  } else {
    in_flight_head_ = submission->next_;
  }
  if (submission->next_) submission->next_->prev_ = submission->prev_;
  submission->Reset();
  submission->next_ = pool_;
  pool_ = submission;
  if (--in_flight_count_ == 0) idle_cv_.NotifyAll();
}

//===----------------------------------------------------------------------===//
// Queues and workers
//===----------------------------------------------------------------------===//

void Executor::PushToQueue(Worker* target, Task* task) {
  task->next_in_queue_ = nullptr;
  platform::MutexLock lock(target->queue_mutex);
  if (target->tail) {
    target->tail->next_in_queue_ = task;
  } else {
    target->head = task;
  }
  target->tail = task;
  queued_.fetch_add(1, std::memory_order_seq_cst);
}

void Executor::WakeWorkers(uint32_t count) {
  if (count == 0) return;
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  platform::MutexLock lock(sleep_mutex_);
  if (count == 1) {
    sleep_cv_.NotifyOne();
  } else {
    sleep_cv_.NotifyAll();
  }
}

Task* Executor::TryTakeWork(Worker* worker) {
  if (queued_.load(std::memory_order_acquire) == 0) return nullptr;
  for (uint32_t i = 0; i < worker_count_; ++i) {
    Worker* victim = &workers_[(worker->id + i) % worker_count_];
    platform::MutexLock lock(victim->queue_mutex);
    Task* task = victim->head;
    if (!task) continue;
    victim->head = task->next_in_queue_;
    if (!victim->head) victim->tail = nullptr;
    task->next_in_queue_ = nullptr;
    queued_.fetch_sub(1, std::memory_order_seq_cst);
    return task;
  }
  return nullptr;
}

void Executor::WorkerMain(void* arg) {
  auto* worker = static_cast<Worker*>(arg);
#if OSPREY_HAVE_THREADS
  g_current_worker = worker;
#endif
  worker->executor->WorkerLoop(worker);
}

void Executor::WorkerLoop(Worker* worker) {
  while (true) {
    Task* task = worker->next;
    worker->next = nullptr;
    if (!task) task = TryTakeWork(worker);
    for (int i = 0; !task && i < kSpinRounds; ++i) {
      platform::YieldProcessor();
      task = TryTakeWork(worker);
    }
    if (task) {
      RunTask(task, worker);
      continue;
    }
    platform::MutexLock lock(sleep_mutex_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (queued_.load(std::memory_order_seq_cst) == 0 &&
           !exit_.load(std::memory_order_seq_cst)) {
      sleep_cv_.WaitUntil(sleep_mutex_, platform::kInfiniteFuture);
    }
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    if (exit_.load(std::memory_order_seq_cst) && queued_.load(std::memory_order_seq_cst) == 0) {
      return;
    }
  }
}

//===----------------------------------------------------------------------===//
// Running and retiring tasks
//===----------------------------------------------------------------------===//

void Executor::RunTask(Task* task, Worker* worker) {
  Submission* submission = task->submission_;
  switch (task->type_) {
    case TaskType::kCall: {
      auto* call = static_cast<CallTask*>(task);
      if (!submission->failed()) {
        TaskContext context{worker->id, worker->local_memory};
        Status status = call->fn_(call->user_data_, context);
        if (OSPREY_UNLIKELY(!status.ok())) {
          submission->Fail(std::move(status).Annotate("in task '%s'", call->name_));
        }
      }
      Retire(task, worker);
      return;
    }
    case TaskType::kBarrier:
      Retire(task, worker);
      return;
    case TaskType::kWait: {
      auto* wait = static_cast<WaitTask*>(task);
      if (wait->state_.load(std::memory_order_acquire) == WaitTask::kResolved) {
        Retire(task, worker);  // Queued by ResolveWait().
      } else {
        ArmWait(wait, worker);
      }
      return;
    }
    case TaskType::kDispatch: {
      auto* dispatch = static_cast<DispatchTask*>(task);
      uint32_t shards = dispatch->shard_count_;
      if (shards == 0 || submission->failed()) {
        Retire(task, worker);
        return;
      }
      dispatch->next_tile_.store(0, std::memory_order_relaxed);
      dispatch->tiles_retired_.store(0, std::memory_order_relaxed);
      // Each shard pins the submission until it exits, so a shard that
      // starts after the tiles ran out (and after the dispatch retired) still
      // finds its memory.
      submission->pending_.fetch_add(shards, std::memory_order_relaxed);
      // Shard i starts on worker (self + i): every worker finds one in its
      // own queue, and stealing rebalances if some are busy.
      for (uint32_t i = 1; i < shards; ++i) {
        PushToQueue(&workers_[(worker->id + i) % worker_count_], &dispatch->shards_[i]);
      }
      WakeWorkers(shards - 1);
      RunShard(&dispatch->shards_[0], worker);
      return;
    }
    case TaskType::kShard:
      RunShard(static_cast<ShardTask*>(task), worker);
      return;
  }
}

void Executor::RunShard(ShardTask* shard, Worker* worker) {
  DispatchTask* dispatch = shard->dispatch_;
  Submission* submission = dispatch->submission_;
  const DispatchParams& params = dispatch->params_;
  const uint32_t count = params.tile_count;
  const uint32_t batch = dispatch->batch_;
  TaskContext context{worker->id, worker->local_memory};
  // The dispatch retires when every tile has run or been given up, not when
  // every shard has run: a worker woken late for a small dispatch is not on
  // the critical path.
  uint32_t retired = 0;
  while (true) {
    if (OSPREY_UNLIKELY(submission->failed())) {
      // Give up the tiles nobody claimed yet; later claims find none.
      uint32_t next = dispatch->next_tile_.exchange(count, std::memory_order_relaxed);
      if (next < count) retired = count - next;
      break;
    }
    uint32_t begin = dispatch->next_tile_.fetch_add(batch, std::memory_order_relaxed);
    if (begin >= count) break;
    uint32_t end = count - begin < batch ? count : begin + batch;
    Status status = params.fn(params.user_data, begin, end, context);
    if (OSPREY_UNLIKELY(!status.ok())) {
      submission->Fail(std::move(status).Annotate("in dispatch '%s' (tiles [%u, %u) of %u)",
                                                  params.name, unsigned(begin),
                                                  unsigned(end), unsigned(count)));
    }
    uint32_t done = end - begin;
    if (dispatch->tiles_retired_.fetch_add(done, std::memory_order_acq_rel) + done == count) {
      Retire(dispatch, worker);
      break;
    }
  }
  if (retired > 0 &&
      dispatch->tiles_retired_.fetch_add(retired, std::memory_order_acq_rel) + retired == count) {
    Retire(dispatch, worker);
  }
  ReleasePending(submission);
}

void Executor::ArmWait(WaitTask* wait, Worker* worker) {
  Submission* submission = wait->submission_;
  if (submission->failed()) {
    wait->state_.store(WaitTask::kResolved, std::memory_order_relaxed);
    Retire(wait, worker);
    return;
  }
  // Two pins: one held while arming (the wait may be resolved, and the rest
  // of the submission finish, inside arm()), one held by the source until
  // its ResolveWait() call or a disarm() that returns true.
  submission->pending_.fetch_add(2, std::memory_order_relaxed);
  wait->state_.store(WaitTask::kArming, std::memory_order_seq_cst);
  Status status = wait->source_.arm(wait->source_.user_data, wait);
  if (!status.ok()) {
    ResolveWait(wait, std::move(status).Annotate("arming wait '%s'", wait->source_.name));
  } else {
    uint32_t expected = WaitTask::kArming;
    if (wait->state_.compare_exchange_strong(expected, WaitTask::kArmed,
                                             std::memory_order_seq_cst) &&
        submission->failed()) {
      // Cancelled while arming: the canceller may not have seen the wait.
      DisarmWait(wait, worker);
    }
  }
  ReleasePending(submission);
}

void Executor::DisarmWait(WaitTask* wait, Worker* worker) {
  if (!wait->source_.disarm(wait->source_.user_data, wait)) return;
  // The source dropped the registration: resolve on its behalf and drop its
  // pin. Only one disarm() can remove the registration.
  uint32_t expected = WaitTask::kArmed;
  Submission* submission = wait->submission_;
  if (wait->state_.compare_exchange_strong(expected, WaitTask::kResolved,
                                           std::memory_order_seq_cst)) {
    Retire(wait, worker);
  }
  ReleasePending(submission);
}

void ResolveWait(WaitTask* token, Status status) {
  Submission* submission = token->submission_;
  Executor* executor = submission->executor_;
  uint32_t state = token->state_.load(std::memory_order_seq_cst);
  bool won = false;
  while (state == WaitTask::kArming || state == WaitTask::kArmed) {
    if (token->state_.compare_exchange_weak(state, WaitTask::kResolved,
                                            std::memory_order_seq_cst)) {
      won = true;
      break;
    }
  }
  if (won) {
    if (!status.ok()) {
      submission->Fail(std::move(status).Annotate("waiting for '%s'", token->source_.name));
    }
    // A worker retires the wait. Retiring here could complete the
    // submission, whose completion may signal the next wait, and so on:
    // unbounded recursion on the resolving thread. A worker of this
    // executor (resolving from a completion callback) queues it for itself
    // and gets to it when the callback returns.
    Worker* worker = CurrentWorker();
    if (worker && worker->executor == executor) {
      executor->PushToQueue(worker, token);
    } else {
      executor->PushToQueue(
          &executor->workers_[executor->round_robin_.fetch_add(1, std::memory_order_relaxed) %
                              executor->worker_count_],
          token);
      executor->WakeWorkers(1);
    }
  }
  status.IgnoreError();
  executor->ReleasePending(submission);
}

void Executor::Retire(Task* task, Worker* worker) {
  Task* ready = nullptr;
  Task** ready_tail = &ready;
  uint32_t ready_count = 0;
  for (Task::Edge* edge = task->successors_; edge; edge = edge->next) {
    Task* successor = edge->successor;
    if (successor->pending_predecessors_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      successor->next_in_queue_ = nullptr;
      *ready_tail = successor;
      ready_tail = &successor->next_in_queue_;
      ++ready_count;
    }
  }
  bool continued = false;
  if (worker && ready && !worker->next) {
    // Continue with the first ready task directly: no queue round trip on
    // the dependent-chain path.
    worker->next = ready;
    ready = ready->next_in_queue_;
    worker->next->next_in_queue_ = nullptr;
    --ready_count;
    continued = true;
  }
  while (ready) {
    Task* next = ready->next_in_queue_;
    if (worker) {
      PushToQueue(worker, ready);
    } else {
      PushToQueue(
          &workers_[round_robin_.fetch_add(1, std::memory_order_relaxed) % worker_count_], ready);
    }
    ready = next;
  }
  // Without a continuation, the worker takes one queued task itself next.
  if (worker && !continued && ready_count > 0) --ready_count;
  WakeWorkers(ready_count);
  ReleasePending(task->submission_);
}

}  // namespace osprey::task
