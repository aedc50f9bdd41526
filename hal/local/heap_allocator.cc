// Heap allocator and heap buffers over host memory.
#include "hal/local/heap_allocator.h"

#include <cstdint>
#include <utility>

#include "hal/local/host_buffer.h"
#include "hal/local/memory_types.h"

namespace osprey::hal::local {

using ull = unsigned long long;

StatusOr<ref_ptr<HeapAllocator>> HeapAllocator::Create(osprey::Allocator* host_allocator,
                                                       osprey::Allocator* data_allocator) {
  if (!host_allocator) return InvalidArgumentError("heap allocator needs a host allocator");
  return MakeRef<HeapAllocator>(host_allocator, host_allocator,
                                data_allocator ? data_allocator : host_allocator);
}

Status HeapAllocator::CheckParams(const BufferParams& params, DeviceSize length) {
  OSPREY_RETURN_IF_ERROR(CheckMemoryType(params, "heap"));
  if (length > DeviceSize(SIZE_MAX / 2)) {
    return InvalidArgumentError("buffer length %llu exceeds the host address space", (ull)length);
  }
  return OkStatus();
}

BufferCompatibility HeapAllocator::QueryCompatibility(BufferParams* params,
                                                      DeviceSize length) const {
  ResolveMemoryType(params);
  Status status = CheckParams(*params, length);
  if (!status.ok()) {
    status.IgnoreError();  // The answer is "never works"; Allocate explains why.
    return BufferCompatibility::kNone;
  }
  return ResolvedCompatibility(*params, /*importable=*/true);
}

StatusOr<ref_ptr<Buffer>> HeapAllocator::AllocateBuffer(const BufferParams& params,
                                                        DeviceSize length) {
  BufferParams resolved = params;
  ResolveMemoryType(&resolved);
  OSPREY_RETURN_IF_ERROR(CheckParams(resolved, length), "allocating a buffer of %llu bytes",
                         (ull)length);
  DeviceSize alignment = resolved.min_alignment > kDefaultBufferAlignment
                             ? resolved.min_alignment
                             : kDefaultBufferAlignment;
  void* data = nullptr;
  // Zero-length buffers still get a distinct address.
  OSPREY_RETURN_IF_ERROR(
      data_allocator_->Allocate(length ? size_t(length) : 1, size_t(alignment), &data),
      "allocating a buffer of %llu bytes", (ull)length);
  auto buffer = MakeRef<HostBuffer>(host_allocator_, this, resolved, length,
                                    static_cast<uint8_t*>(data), data_allocator_,
                                    &bytes_allocated_, ReleaseCallback{});
  if (!buffer.ok()) {
    data_allocator_->Free(data);
    return std::move(buffer).status();
  }
  bytes_allocated_.fetch_add(length);
  return ref_ptr<Buffer>(std::move(*buffer));
}

StatusOr<ref_ptr<Buffer>> HeapAllocator::ImportBuffer(const BufferParams& params, void* memory,
                                                      DeviceSize length,
                                                      ReleaseCallback release) {
  BufferParams resolved = params;
  ResolveMemoryType(&resolved);
  OSPREY_RETURN_IF_ERROR(CheckParams(resolved, length), "importing %llu bytes of host memory",
                         (ull)length);
  if (!memory && length > 0) return InvalidArgumentError("imported memory is null");
  if (resolved.min_alignment && reinterpret_cast<uintptr_t>(memory) % resolved.min_alignment) {
    return InvalidArgumentError("imported memory at %p is not aligned to %llu bytes", memory,
                                (ull)resolved.min_alignment);
  }
  OSPREY_ASSIGN_OR_RETURN(auto buffer,
                          MakeRef<HostBuffer>(host_allocator_, this, resolved, length,
                                              static_cast<uint8_t*>(memory), nullptr, nullptr,
                                              release));
  return ref_ptr<Buffer>(std::move(buffer));
}

}  // namespace osprey::hal::local
