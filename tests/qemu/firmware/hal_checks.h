// Dispatch checks of the firmware: CPU executables loaded through the HAL's
// loaders (and, when built, run through the cpu-sync device), with every
// byte of memory from a StaticArenaAllocator over a caller-owned buffer.
#ifndef OSPREY_TESTS_QEMU_FIRMWARE_HAL_CHECKS_H_
#define OSPREY_TESTS_QEMU_FIRMWARE_HAL_CHECKS_H_

#include <cstddef>

namespace osprey::tests::qemu::firmware {

// Exit-code bits of the groups RunHalChecks runs.
inline constexpr int kLocalDispatchFailed = 2;  // static loader + direct calls
inline constexpr int kDeviceDispatchFailed = 4;  // cpu-sync device
inline constexpr int kElfDispatchFailed = 8;     // ELF loader

// Runs every group compiled into this build and prints one line per group.
// |memory| (|size| bytes, at least 32 KiB) is borrowed and clobbered.
// Returns the OR of the failed groups' bits (0 if all passed).
int RunHalChecks(void* memory, size_t size);

}  // namespace osprey::tests::qemu::firmware

#endif  // OSPREY_TESTS_QEMU_FIRMWARE_HAL_CHECKS_H_
