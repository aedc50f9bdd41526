// Device defaults: waiting on several semaphores.
#include "hal/device.h"

#include "runtime/base/platform/platform.h"

namespace osprey::hal {

namespace {

// kAny over semaphores of unknown kind: poll with a growing sleep. Drivers
// whose semaphores support notification override WaitSemaphores.
Status WaitAny(const SemaphoreList& list, int64_t deadline_ns) {
  int64_t backoff_ns = 1000;
  while (true) {
    for (size_t i = 0; i < list.size(); ++i) {
      auto value = list.semaphores[i]->Query();
      if (!value.ok()) {
        return AbortedError("semaphore %zu of the wait failed: %s", i,
                            value.status().message());
      }
      if (*value >= list.values[i]) return OkStatus();
    }
    const int64_t now = platform::MonotonicNanos();
    if (now >= deadline_ns) {
      return DeadlineExceededError("none of %zu semaphores reached its value before the deadline",
                                   list.size());
    }
    int64_t sleep_ns = backoff_ns;
    if (deadline_ns - now < sleep_ns) sleep_ns = deadline_ns - now;
    platform::SleepNanos(sleep_ns);
    if (backoff_ns < 1000000) backoff_ns *= 2;
  }
}

}  // namespace

StatusOr<int64_t> Device::QueryI64(const char* key) {
  return NotFoundError("device '%s' has no value '%s'", id(), key);
}

bool ParseDeviceParamUint64(const char* text, uint64_t max, uint64_t* out_value) {
  if (!text || !*text) return false;
  uint64_t value = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    const uint64_t digit = uint64_t(*p - '0');
    if (value > max / 10) return false;
    value *= 10;
    if (digit > max - value) return false;
    value += digit;
  }
  *out_value = value;
  return true;
}

Status Device::WaitSemaphores(WaitMode mode, const SemaphoreList& semaphores,
                              int64_t deadline_ns) {
  OSPREY_RETURN_IF_ERROR(semaphores.Validate("wait"));
  if (semaphores.size() == 0) return OkStatus();
  if (mode == WaitMode::kAll || semaphores.size() == 1) {
    for (size_t i = 0; i < semaphores.size(); ++i) {
      OSPREY_RETURN_IF_ERROR(semaphores.semaphores[i]->Wait(semaphores.values[i], deadline_ns),
                             "waiting for semaphore %zu of %zu to reach %llu", i,
                             semaphores.size(), (unsigned long long)semaphores.values[i]);
    }
    return OkStatus();
  }
  return WaitAny(semaphores, deadline_ns);
}

}  // namespace osprey::hal
