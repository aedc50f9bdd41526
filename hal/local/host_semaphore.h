// A timeline semaphore in host memory, built on the platform Mutex and
// ConditionVariable. Shared by every driver whose queue runs on the host.
//
// Besides blocking waits it offers timepoints: "call me once the value
// reaches v (or the semaphore fails)", so an asynchronous scheduler can be
// notified without parking a thread per wait.
#ifndef OSPREY_HAL_LOCAL_HOST_SEMAPHORE_H_
#define OSPREY_HAL_LOCAL_HOST_SEMAPHORE_H_

#include <cstdint>

#include "hal/semaphore.h"
#include "runtime/base/platform/platform.h"

namespace osprey::hal::local {

class HostSemaphore;

// A registration made with HostSemaphore::EnqueueTimepoint. Owned by the
// caller, who must keep it alive until the callback has run or
// CancelTimepoint() returned true. Fields are private to the semaphore.
struct SemaphoreTimepoint {
  // Runs once, without the semaphore's lock held, on the thread that
  // signalled or failed the semaphore (or inside EnqueueTimepoint when the
  // value is already reached). |status| is OK when the value was reached,
  // otherwise a copy of the failure (ABORTED). The callback may destroy the
  // timepoint and may call into the semaphore.
  using Callback = void (*)(void* user_data, HostSemaphore* semaphore, Status status);

  Callback callback = nullptr;
  void* user_data = nullptr;
  uint64_t value = 0;
  SemaphoreTimepoint* next = nullptr;  // Internal list link.
  bool pending = false;                // Internal: in the semaphore's list.
};

// Thread-safe.
class HostSemaphore final : public Semaphore {
 public:
  static StatusOr<ref_ptr<HostSemaphore>> Create(uint64_t initial_value,
                                                 osprey::Allocator* host_allocator);
  ~HostSemaphore() override;

  // Value of kind() for every HostSemaphore (compare addresses).
  static const char kKind;
  const void* kind() const override { return &kKind; }
  // |semaphore| as a HostSemaphore, or null if it is another kind.
  static HostSemaphore* Cast(Semaphore* semaphore) {
    return semaphore && semaphore->kind() == &kKind ? static_cast<HostSemaphore*>(semaphore)
                                                    : nullptr;
  }

  StatusOr<uint64_t> Query() override;
  Status Signal(uint64_t value) override;
  void Fail(Status status) override;
  // On builds without threads nothing else can signal while the caller
  // waits, so a value not yet reached returns DEADLINE_EXCEEDED at once
  // (after the deadline, if the platform clock moves).
  Status Wait(uint64_t value, int64_t deadline_ns) override;

  // Calls |callback(user_data, this, status)| once the value is >= |value|
  // or the semaphore fails. If that is already the case, the callback runs
  // before this returns. |timepoint| is borrowed until the callback runs
  // or CancelTimepoint() returns true.
  void EnqueueTimepoint(SemaphoreTimepoint* timepoint, uint64_t value,
                        SemaphoreTimepoint::Callback callback, void* user_data);

  // Removes a pending timepoint. True: it was removed and its callback will
  // never run. False: its callback has run or is running on another thread.
  bool CancelTimepoint(SemaphoreTimepoint* timepoint);

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.
  explicit HostSemaphore(uint64_t initial_value) : value_(initial_value) {}

  // Unlinks the timepoints due at the current value (or all, if failed);
  // called with |mutex_| held.
  SemaphoreTimepoint* TakeDueTimepointsLocked();
  // Runs |list| without the lock.
  void RunTimepoints(SemaphoreTimepoint* list);
  Status FailureLocked() const;

  platform::Mutex mutex_;
  platform::ConditionVariable condition_;
  uint64_t value_;
  Status failure_;  // OK unless failed.
  SemaphoreTimepoint* timepoints_ = nullptr;
};

// Blocks until any semaphore of |list| reaches its value (OK), one of them
// fails (ABORTED carrying the failure, as Device::WaitSemaphores does), or
// |deadline_ns| passes (DEADLINE_EXCEEDED). Uses timepoints and one
// condition variable: no polling. Every semaphore must be a HostSemaphore
// (INVALID_ARGUMENT otherwise) and the list at most kMaxWaitAny long
// (INVALID_ARGUMENT). Thread-safe.
inline constexpr size_t kMaxWaitAny = 32;
Status WaitAnyHostSemaphores(const SemaphoreList& list, int64_t deadline_ns);

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_HOST_SEMAPHORE_H_
