// Self-checks of runtime/base (Status, allocators, Arena, ref_ptr) that run
// inside the firmware on the target CPU.
#ifndef OSPREY_TESTS_QEMU_FIRMWARE_BASE_CHECKS_H_
#define OSPREY_TESTS_QEMU_FIRMWARE_BASE_CHECKS_H_

#include <cstddef>

#include "tests/qemu/firmware/checks.h"

namespace osprey::tests::qemu::firmware {

// Runs the checks, recording results in |group|. |memory| (|size| bytes,
// at least 8 KiB) is borrowed scratch for the allocator checks; its contents
// are clobbered.
void RunBaseChecks(void* memory, size_t size, CheckGroup& group);

}  // namespace osprey::tests::qemu::firmware

#endif  // OSPREY_TESTS_QEMU_FIRMWARE_BASE_CHECKS_H_
