// Platform-independent helpers of the platform layer.
#include "runtime/base/platform/platform.h"

namespace osprey::platform {

int64_t DeadlineFromTimeout(int64_t timeout_ns) {
  if (timeout_ns == kInfiniteFuture) return kInfiniteFuture;
  if (timeout_ns <= 0) return kImmediatePast;
  int64_t now = MonotonicNanos();
  if (now > kInfiniteFuture - timeout_ns) return kInfiniteFuture;
  return now + timeout_ns;
}

}  // namespace osprey::platform
