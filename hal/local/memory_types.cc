// Memory-type resolution and the shared allocator refusals.
#include "hal/local/memory_types.h"

namespace osprey::hal::local {

void ResolveMemoryType(BufferParams* params) {
  MemoryType type = params->type;
  if (AnyBitSet(type, MemoryType::kOptimal)) {
    type = (type & ~MemoryType::kOptimal) | MemoryType::kHostLocal | MemoryType::kHostCoherent |
           MemoryType::kDeviceVisible;
  }
  if (AnyBitSet(type, MemoryType::kDeviceLocalBit)) type |= MemoryType::kDeviceVisible;
  if (AnyBitSet(type, MemoryType::kHostLocalBit)) type |= MemoryType::kHostVisible;
  params->type = type;
}

Status CheckMemoryType(const BufferParams& params, const char* allocator) {
  if (!AnyBitSet(params.type, MemoryType::kHostVisible | MemoryType::kDeviceVisible)) {
    return InvalidArgumentError(
        "memory type 0x%x is visible to neither the host nor the device (%s allocator)",
        unsigned(params.type), allocator);
  }
  if (AnyBitSet(params.usage, BufferUsage::kMappingScoped | BufferUsage::kMappingPersistent) &&
      !AnyBitSet(params.type, MemoryType::kHostVisible)) {
    return InvalidArgumentError(
        "buffer usage 0x%x includes host mapping but memory type 0x%x is not host-visible",
        unsigned(params.usage), unsigned(params.type));
  }
  if (params.min_alignment & (params.min_alignment - 1)) {
    return InvalidArgumentError("minimum alignment %llu is not a power of two",
                                (unsigned long long)params.min_alignment);
  }
  return OkStatus();
}

BufferCompatibility ResolvedCompatibility(const BufferParams& params, bool importable) {
  BufferCompatibility result = BufferCompatibility::kAllocatable;
  if (importable) result |= BufferCompatibility::kImportable;
  if (AnyBitSet(params.type, MemoryType::kHostVisible)) result |= BufferCompatibility::kExportable;
  if (AnyBitSet(params.type, MemoryType::kDeviceVisible)) {
    if (AnyBitSet(params.usage, BufferUsage::kTransfer)) {
      result |= BufferCompatibility::kQueueTransfer;
    }
    if (AnyBitSet(params.usage,
                  BufferUsage::kDispatchStorage | BufferUsage::kDispatchUniformRead)) {
      result |= BufferCompatibility::kQueueDispatch;
    }
  }
  return result;
}

}  // namespace osprey::hal::local
