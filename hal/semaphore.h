// Timeline semaphores: a monotonically increasing 64-bit value that the host
// and devices signal and wait on, or a sticky failure.
#ifndef OSPREY_HAL_SEMAPHORE_H_
#define OSPREY_HAL_SEMAPHORE_H_

#include <cstdint>
#include <span>

#include "hal/resource.h"
#include "runtime/base/status.h"

namespace osprey::hal {

class Semaphore : public Resource {
 public:
  // The current value, or the failure status once the semaphore failed.
  virtual StatusOr<uint64_t> Query() = 0;

  // Raises the value to |value|, waking waiters whose value is reached.
  // INVALID_ARGUMENT if |value| is not greater than the current value;
  // the failure status if the semaphore has failed.
  virtual Status Signal(uint64_t value) = 0;

  // Puts the semaphore in the failed state with |status| (not OK); every
  // current and future wait returns (a copy of) it.
  virtual void Fail(Status status) = 0;

  // Blocks until the value is >= |value| or |deadline_ns| (absolute,
  // platform::MonotonicNanos) passes. DEADLINE_EXCEEDED on timeout,
  // ABORTED carrying the failure message if the semaphore failed.
  virtual Status Wait(uint64_t value, int64_t deadline_ns) = 0;

  // Identifies the implementation so a driver can recognise its own
  // semaphores without RTTI (e.g. &hal::local::HostSemaphore::kKind).
  // Null by default.
  virtual const void* kind() const { return nullptr; }
};

// Semaphores paired with payload values (what to wait for or signal).
struct SemaphoreList {
  std::span<Semaphore* const> semaphores;  // Borrowed.
  std::span<const uint64_t> values;
  size_t size() const { return semaphores.size(); }

  // INVALID_ARGUMENT if the two spans differ in length or a semaphore is
  // null; |what| names the list in the message ("wait", "signal").
  Status Validate(const char* what) const;
};

}  // namespace osprey::hal

#endif  // OSPREY_HAL_SEMAPHORE_H_
