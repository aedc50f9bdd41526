// Runs the platform layer's conformance checks (platform_checks.h) on
// FreeRTOS: from the board's main task, with threads as FreeRTOS tasks.
// Exit code: the number of failed checks (0: all passed).
#include <stdint.h>
#include <stdio.h>

#include "FreeRTOS.h"
#include "runtime/base/platform/platform.h"
#include "runtime/base/platform/platform_checks.h"
#include "samples/rtos_loader/board/rtos_board.h"

extern "C" int osprey_rtos_main(int, char**) {
  vPortFree(pvPortMalloc(1));  // heap_4 sets itself up on first use.
  size_t free_before = xPortGetFreeHeapSize();
  osprey::platform::PlatformCheckOptions options;
  options.verbose = true;
  // Below the main task: its waits must block for the waker to run.
  options.lower_priority = OSPREY_RTOS_MAIN_PRIORITY - 1;
  options.stack_size = 16 * 1024;
  int failures = osprey::platform::RunPlatformChecks(options);
  // More than the heap holds: null, not a crash or a hook. (Not part of the
  // portable checks: sanitizers abort on such requests by default.)
  if (osprey::platform::AllocateMemory(configTOTAL_HEAP_SIZE, 16) != nullptr ||
      osprey::platform::AllocateMemory(SIZE_MAX - 64, 16) != nullptr) {
    printf("error: allocating more than the FreeRTOS heap did not return null\n");
    ++failures;
  }
  // Every thread was joined: its stack and control block are back.
  size_t free_after = xPortGetFreeHeapSize();
  if (free_after != free_before) {
    printf("error: FreeRTOS heap %u bytes free before the checks, %u after\n",
           unsigned(free_before), unsigned(free_after));
    ++failures;
  }
  printf("%s: %d platform check(s) failed\n", failures ? "FAIL" : "PASS", failures);
  return failures;
}
