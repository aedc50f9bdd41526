// Dispatch checks of the firmware: CPU executables loaded through the HAL's
// loaders (and, when built, run through the cpu-sync device), with every
// byte of memory from a StaticArenaAllocator over a caller-owned buffer.
#ifndef OSPREY_SAMPLES_BARE_METAL_HAL_CHECKS_H_
#define OSPREY_SAMPLES_BARE_METAL_HAL_CHECKS_H_

#include <cstddef>

namespace osprey::samples::bare_metal {

// Exit-code bits of the groups RunHalChecks runs.
inline constexpr int kLocalDispatchFailed = 2;  // static loader + direct calls
inline constexpr int kDeviceDispatchFailed = 4;  // cpu-sync device
inline constexpr int kElfDispatchFailed = 8;     // ELF loader

// Runs every group compiled into this build and prints one line per group.
// |memory| (|size| bytes, at least 32 KiB) is borrowed and clobbered.
// Returns the OR of the failed groups' bits (0 if all passed).
int RunHalChecks(void* memory, size_t size);

}  // namespace osprey::samples::bare_metal

#endif  // OSPREY_SAMPLES_BARE_METAL_HAL_CHECKS_H_
