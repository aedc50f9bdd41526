// Semaphore lists: validation shared by every device's queue.
#include "hal/semaphore.h"

namespace osprey::hal {

Status SemaphoreList::Validate(const char* what) const {
  if (semaphores.size() != values.size()) {
    return InvalidArgumentError("%s semaphore list has %zu semaphores but %zu values", what,
                                semaphores.size(), values.size());
  }
  for (size_t i = 0; i < semaphores.size(); ++i) {
    if (!semaphores[i]) return InvalidArgumentError("%s semaphore %zu is null", what, i);
  }
  return OkStatus();
}

}  // namespace osprey::hal
