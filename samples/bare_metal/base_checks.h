// Self-checks of runtime/base (Status, allocators, Arena, ref_ptr) that run
// inside the firmware on the target CPU.
#ifndef OSPREY_SAMPLES_BARE_METAL_BASE_CHECKS_H_
#define OSPREY_SAMPLES_BARE_METAL_BASE_CHECKS_H_

#include <cstddef>

#include "samples/bare_metal/checks.h"

namespace osprey::samples::bare_metal {

// Runs the checks, recording results in |group|. |memory| (|size| bytes,
// at least 8 KiB) is borrowed scratch for the allocator checks; its contents
// are clobbered.
void RunBaseChecks(void* memory, size_t size, CheckGroup& group);

}  // namespace osprey::samples::bare_metal

#endif  // OSPREY_SAMPLES_BARE_METAL_BASE_CHECKS_H_
