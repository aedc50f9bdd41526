// Behaviour every threaded port of the platform layer must show, as plain
// checks (no test framework) so they also run on a target under an RTOS:
// time, sleeping, memory alignment, mutual exclusion, condition variable
// timeouts and wake-ups, thread start/join with options, per-thread
// storage, and waits that block instead of spinning. The host unit test
// (platform_test.cc) and the FreeRTOS image (samples/rtos_loader) run them.
#ifndef OSPREY_RUNTIME_BASE_PLATFORM_PLATFORM_CHECKS_H_
#define OSPREY_RUNTIME_BASE_PLATFORM_PLATFORM_CHECKS_H_

#include <cstdint>

namespace osprey::platform {

struct PlatformCheckOptions {
  // A thread priority below the caller's (ThreadOptions::priority), used to
  // show that a waiting caller blocks: a busy-waiting caller would starve
  // the lower-priority thread that is to wake it. -1 where the platform has
  // no priorities.
  int32_t lower_priority = -1;
  // Stack for the threads the checks start (0: platform default).
  uint32_t stack_size = 0;
  // Prints each check's name as it starts.
  bool verbose = false;
};

// Runs every check from a thread of the platform (on an RTOS: a task) and
// prints one line per failure. Returns the number of failed checks.
int RunPlatformChecks(const PlatformCheckOptions& options);

}  // namespace osprey::platform

#endif  // OSPREY_RUNTIME_BASE_PLATFORM_PLATFORM_CHECKS_H_
