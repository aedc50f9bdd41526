// The bare-metal check firmware: runs the runtime's self-checks (and, when the
// HAL and cpu-sync driver are built, real dispatches) on the target CPU and
// returns a bit mask of the failing groups as the exit code, which QEMU
// passes back to the host through semihosting. 0 means every check passed.
//
// --inject-failure adds one check that must fail (exit bit 128), so the
// test harness can prove that a failing image is reported as failing.
#include <stdio.h>
#include <string.h>

#include <cstddef>
#include <cstdint>

#include "runtime/base/logging.h"
#include "tests/qemu/firmware/base_checks.h"
#include "tests/qemu/firmware/checks.h"

#if OSPREY_FIRMWARE_HAVE_HAL
#include "tests/qemu/firmware/hal_checks.h"
#endif

namespace {

// All runtime memory comes from this buffer through a StaticArenaAllocator:
// the firmware has no heap.
alignas(16) uint8_t g_heap[64 * 1024];

void PrintLog(void*, osprey::LogLevel level, const char* message) {
  printf("[osprey %d] %s\n", static_cast<int>(level), message);
}

// Prints the group's result and returns |bit| if it failed.
int Report(const osprey::tests::qemu::firmware::CheckGroup& group, int bit) {
  printf("%-8s %d checks, %d failed\n", group.name(), group.checks(), group.failures());
  return group.failures() == 0 && group.checks() > 0 ? 0 : bit;
}

}  // namespace

int main(int argc, char** argv) {
  using osprey::tests::qemu::firmware::CheckGroup;
  bool inject_failure = false;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--inject-failure") == 0) inject_failure = true;
  }
  osprey::SetLogSink(&PrintLog, nullptr);
  printf("osprey bare-metal firmware\n");

  int exit_code = 0;
  CheckGroup base("base");
  osprey::tests::qemu::firmware::RunBaseChecks(g_heap, sizeof(g_heap), base);
  exit_code |= Report(base, 1);

#if OSPREY_FIRMWARE_HAVE_HAL
  exit_code |= osprey::tests::qemu::firmware::RunHalChecks(g_heap, sizeof(g_heap));
#endif

  if (inject_failure) {
    CheckGroup injected("injected");
    FW_EXPECT(injected, sizeof(g_heap) == 0);
    exit_code |= Report(injected, 128);
  }

  printf("%s (exit code %d)\n", exit_code == 0 ? "PASS" : "FAIL", exit_code);
  return exit_code;
}
