// Host timeline semaphore and its timepoint callbacks.
#include "hal/local/host_semaphore.h"

#include <utility>

namespace osprey::hal::local {

using ull = unsigned long long;

const char HostSemaphore::kKind = 0;

StatusOr<ref_ptr<HostSemaphore>> HostSemaphore::Create(uint64_t initial_value,
                                                       osprey::Allocator* host_allocator) {
  return MakeRef<HostSemaphore>(host_allocator, initial_value);
}

HostSemaphore::~HostSemaphore() {
  // Nobody can signal a destroyed semaphore: tell pending timepoints so
  // their owners do not wait forever.
  SemaphoreTimepoint* list = nullptr;
  {
    platform::MutexLock lock(mutex_);
    list = timepoints_;
    timepoints_ = nullptr;
    for (SemaphoreTimepoint* t = list; t; t = t->next) t->pending = false;
  }
  while (list) {
    SemaphoreTimepoint* next = list->next;
    list->callback(list->user_data, this,
                   AbortedError("semaphore destroyed before reaching %llu", (ull)list->value));
    list = next;
  }
}

Status HostSemaphore::FailureLocked() const {
  return AbortedError("semaphore failed: %s", failure_.message()[0] ? failure_.message()
                                                                    : StatusCodeName(
                                                                          failure_.code()));
}

StatusOr<uint64_t> HostSemaphore::Query() {
  platform::MutexLock lock(mutex_);
  if (!failure_.ok()) return failure_.Clone();
  return value_;
}

SemaphoreTimepoint* HostSemaphore::TakeDueTimepointsLocked() {
  SemaphoreTimepoint* due = nullptr;
  SemaphoreTimepoint** link = &timepoints_;
  const bool failed = !failure_.ok();
  while (*link) {
    SemaphoreTimepoint* t = *link;
    if (failed || t->value <= value_) {
      *link = t->next;
      t->pending = false;
      t->next = due;
      due = t;
    } else {
      link = &t->next;
    }
  }
  return due;
}

void HostSemaphore::RunTimepoints(SemaphoreTimepoint* list) {
  while (list) {
    // Read the link first: the callback may destroy its timepoint.
    SemaphoreTimepoint* next = list->next;
    Status status;
    {
      platform::MutexLock lock(mutex_);
      if (!failure_.ok()) status = FailureLocked();
    }
    list->callback(list->user_data, this, std::move(status));
    list = next;
  }
}

Status HostSemaphore::Signal(uint64_t value) {
  SemaphoreTimepoint* due = nullptr;
  {
    platform::MutexLock lock(mutex_);
    if (!failure_.ok()) return failure_.Clone().Annotate("signalling a failed semaphore");
    if (value <= value_) {
      return InvalidArgumentError(
          "semaphore signal to %llu does not advance it (current value %llu)", (ull)value,
          (ull)value_);
    }
    value_ = value;
    due = TakeDueTimepointsLocked();
    condition_.NotifyAll();
  }
  RunTimepoints(due);
  return OkStatus();
}

void HostSemaphore::Fail(Status status) {
  if (status.ok()) status = InternalError("semaphore failed with an OK status");
  SemaphoreTimepoint* due = nullptr;
  {
    platform::MutexLock lock(mutex_);
    if (!failure_.ok()) return;  // The first failure wins.
    failure_ = std::move(status);
    due = TakeDueTimepointsLocked();
    condition_.NotifyAll();
  }
  RunTimepoints(due);
}

Status HostSemaphore::Wait(uint64_t value, int64_t deadline_ns) {
  platform::MutexLock lock(mutex_);
  while (true) {
    if (!failure_.ok()) return FailureLocked();
    if (value_ >= value) return OkStatus();
    if (!condition_.WaitUntil(mutex_, deadline_ns)) {
      if (!failure_.ok()) return FailureLocked();
      if (value_ >= value) return OkStatus();
      if (platform::MonotonicNanos() >= deadline_ns || !OSPREY_HAVE_THREADS) {
        return DeadlineExceededError("semaphore at %llu did not reach %llu before the deadline",
                                     (ull)value_, (ull)value);
      }
    }
  }
}

void HostSemaphore::EnqueueTimepoint(SemaphoreTimepoint* timepoint, uint64_t value,
                                     SemaphoreTimepoint::Callback callback, void* user_data) {
  timepoint->callback = callback;
  timepoint->user_data = user_data;
  timepoint->value = value;
  Status status;
  {
    platform::MutexLock lock(mutex_);
    if (failure_.ok() && value_ < value) {
      timepoint->next = timepoints_;
      timepoint->pending = true;
      timepoints_ = timepoint;
      return;
    }
    if (!failure_.ok()) status = FailureLocked();
  }
  callback(user_data, this, std::move(status));
}

bool HostSemaphore::CancelTimepoint(SemaphoreTimepoint* timepoint) {
  platform::MutexLock lock(mutex_);
  if (!timepoint->pending) return false;
  for (SemaphoreTimepoint** link = &timepoints_; *link; link = &(*link)->next) {
    if (*link == timepoint) {
      *link = timepoint->next;
      timepoint->pending = false;
      return true;
    }
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Waiting for any of several semaphores
//===----------------------------------------------------------------------===//

namespace {

// Lives on the waiter's stack; the waiter leaves only after every timepoint
// was cancelled or its callback finished (|settled| == count).
struct AnyWait {
  platform::Mutex mutex;
  platform::ConditionVariable condition;
  size_t reached = 0;
  size_t failed = 0;
  size_t settled = 0;
  Status first_failure;
};

void OnAnyTimepoint(void* user_data, HostSemaphore*, Status status) {
  auto* wait = static_cast<AnyWait*>(user_data);
  platform::MutexLock lock(wait->mutex);
  if (status.ok()) {
    ++wait->reached;
  } else {
    ++wait->failed;
    if (wait->first_failure.ok()) wait->first_failure = std::move(status);
  }
  ++wait->settled;
  wait->condition.NotifyAll();
}

}  // namespace

Status WaitAnyHostSemaphores(const SemaphoreList& list, int64_t deadline_ns) {
  const size_t count = list.size();
  if (list.values.size() != count) {
    return InvalidArgumentError("semaphore list has %zu semaphores but %zu values", count,
                                list.values.size());
  }
  if (count > kMaxWaitAny) {
    return InvalidArgumentError("waiting for any of %zu semaphores; at most %zu supported", count,
                                kMaxWaitAny);
  }
  HostSemaphore* semaphores[kMaxWaitAny];
  for (size_t i = 0; i < count; ++i) {
    semaphores[i] = HostSemaphore::Cast(list.semaphores[i]);
    if (!semaphores[i]) {
      return InvalidArgumentError("semaphore %zu is null or not a host semaphore", i);
    }
  }
  if (count == 0) return OkStatus();

  AnyWait wait;
  SemaphoreTimepoint timepoints[kMaxWaitAny];
  for (size_t i = 0; i < count; ++i) {
    semaphores[i]->EnqueueTimepoint(&timepoints[i], list.values[i], &OnAnyTimepoint, &wait);
  }
  {
    platform::MutexLock lock(wait.mutex);
    while (wait.reached == 0 && wait.failed == 0) {
      if (!wait.condition.WaitUntil(wait.mutex, deadline_ns) &&
          (platform::MonotonicNanos() >= deadline_ns || !OSPREY_HAVE_THREADS)) {
        break;
      }
    }
  }
  // Withdraw what has not fired; then wait out callbacks still running on
  // other threads, since they touch |wait|.
  size_t cancelled = 0;
  for (size_t i = 0; i < count; ++i) {
    if (semaphores[i]->CancelTimepoint(&timepoints[i])) ++cancelled;
  }
  {
    platform::MutexLock lock(wait.mutex);
    while (wait.settled + cancelled < count) {
      wait.condition.WaitUntil(wait.mutex, platform::kInfiniteFuture);
    }
  }
  if (wait.reached > 0) return OkStatus();
  if (wait.failed > 0) {
    return std::move(wait.first_failure).Annotate("waiting for any of %zu semaphores", count);
  }
  return DeadlineExceededError("none of %zu semaphores reached its value before the deadline",
                               count);
}

}  // namespace osprey::hal::local
