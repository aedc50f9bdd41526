// Memory-type resolution shared by the allocators of devices whose buffers
// live in host memory or in device memory the driver manages (heap
// allocator, npu allocator): what a requested memory type resolves to, the
// refusals every such allocator makes, and what a buffer of the resolved
// type can do. An allocator adds only its own limits (address space, pools)
// and whether it can import.
//
//   BufferParams resolved = params;
//   hal::local::ResolveMemoryType(&resolved);
//   OSPREY_RETURN_IF_ERROR(hal::local::CheckMemoryType(resolved, "my-npu"));
//   ... own limits ...
//   return hal::local::ResolvedCompatibility(resolved, /*importable=*/true);
#ifndef OSPREY_HAL_LOCAL_MEMORY_TYPES_H_
#define OSPREY_HAL_LOCAL_MEMORY_TYPES_H_

#include "hal/types.h"
#include "runtime/base/status.h"

namespace osprey::hal::local {

// Resolves |params->type| in place:
// - kOptimal becomes host-local, host-coherent, device-visible memory (host
//   memory works for every usage, mapping included); explicit bits the
//   caller added next to kOptimal stay;
// - kDeviceLocalBit implies kDeviceVisible, kHostLocalBit implies
//   kHostVisible.
// Usage and access are left as they are.
void ResolveMemoryType(BufferParams* params);

// The refusals on resolved |params| that every local allocator makes, as
// INVALID_ARGUMENT naming the rule (|allocator| names the allocator in the
// message): a type visible to neither the host nor the device, mapping
// usage (kMappingScoped or kMappingPersistent) without kHostVisible, a
// minimum alignment that is not a power of two (0: no requirement).
Status CheckMemoryType(const BufferParams& params, const char* allocator);

// What a buffer with resolved |params| that passed CheckMemoryType can do:
// allocatable; importable if |importable|; exportable if host-visible; and,
// if device-visible, usable by transfers (kTransfer usage) and dispatches
// (kDispatchStorage or kDispatchUniformRead usage).
BufferCompatibility ResolvedCompatibility(const BufferParams& params, bool importable);

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_MEMORY_TYPES_H_
