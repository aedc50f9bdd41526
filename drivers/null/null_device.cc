// The null driver's stubs: each returns UNIMPLEMENTED.
#include "drivers/null/null_device.h"

#include <utility>

namespace osprey::drivers::null {

Status NullBuffer::MapRangeImpl(hal::MemoryAccess, hal::DeviceSize, hal::DeviceSize,
                                uint8_t** out_data) {
  *out_data = nullptr;
  return UnimplementedError("null driver: buffer mapping is not implemented");
}

hal::BufferCompatibility NullAllocator::QueryCompatibility(hal::BufferParams*,
                                                           hal::DeviceSize) const {
  return hal::BufferCompatibility::kNone;
}

StatusOr<ref_ptr<hal::Buffer>> NullAllocator::AllocateBuffer(const hal::BufferParams&,
                                                             hal::DeviceSize length) {
  return UnimplementedError("null driver: allocating a buffer of %llu bytes is not implemented",
                            (unsigned long long)length);
}

StatusOr<ref_ptr<hal::Buffer>> NullAllocator::ImportBuffer(const hal::BufferParams&, void*,
                                                           hal::DeviceSize,
                                                           hal::ReleaseCallback) {
  return UnimplementedError("null driver: importing host memory is not implemented");
}

Status NullCommandBuffer::ExecutionBarrierImpl() {
  return UnimplementedError("null driver: execution barriers are not implemented");
}
Status NullCommandBuffer::FillBufferImpl(hal::BufferRef, uint32_t, size_t) {
  return UnimplementedError("null driver: FillBuffer is not implemented");
}
Status NullCommandBuffer::UpdateBufferImpl(const void*, hal::BufferRef) {
  return UnimplementedError("null driver: UpdateBuffer is not implemented");
}
Status NullCommandBuffer::CopyBufferImpl(hal::BufferRef, hal::BufferRef) {
  return UnimplementedError("null driver: CopyBuffer is not implemented");
}
Status NullCommandBuffer::DispatchImpl(hal::Executable*, uint32_t, hal::WorkgroupCount,
                                       std::span<const uint32_t>,
                                       std::span<const hal::BufferRef>) {
  return UnimplementedError("null driver: Dispatch is not implemented");
}

StatusOr<uint64_t> NullSemaphore::Query() {
  return UnimplementedError("null driver: semaphores are not implemented");
}
Status NullSemaphore::Signal(uint64_t) {
  return UnimplementedError("null driver: semaphores are not implemented");
}
void NullSemaphore::Fail(Status status) {
  // Real version: record |status| and wake every waiter with it.
  status.IgnoreError();
}
Status NullSemaphore::Wait(uint64_t, int64_t) {
  return UnimplementedError("null driver: semaphores are not implemented");
}

bool NullExecutableCache::CanPrepareFormat(const char*) const { return false; }
StatusOr<ref_ptr<hal::Executable>> NullExecutableCache::PrepareExecutable(
    const hal::ExecutableParams& params) {
  return UnimplementedError("null driver: preparing executables of format '%s' is not implemented",
                            params.format ? params.format : "");
}

StatusOr<ref_ptr<NullDevice>> NullDevice::Create(osprey::Allocator* host_allocator) {
  if (!host_allocator) return InvalidArgumentError("null device needs a host allocator");
  OSPREY_ASSIGN_OR_RETURN(auto device, MakeRef<NullDevice>(host_allocator, host_allocator));
  OSPREY_ASSIGN_OR_RETURN(device->allocator_,
                          MakeRef<NullAllocator>(host_allocator, host_allocator));
  return device;
}

StatusOr<ref_ptr<hal::CommandBuffer>> NullDevice::CreateCommandBuffer(
    hal::CommandBufferMode mode) {
  // Real version: allocate the device's command buffer (or a recording one).
  OSPREY_ASSIGN_OR_RETURN(auto command_buffer,
                          MakeRef<NullCommandBuffer>(host_allocator_, mode, host_allocator_));
  return ref_ptr<hal::CommandBuffer>(std::move(command_buffer));
}

StatusOr<ref_ptr<hal::Semaphore>> NullDevice::CreateSemaphore(uint64_t) {
  OSPREY_ASSIGN_OR_RETURN(auto semaphore, MakeRef<NullSemaphore>(host_allocator_));
  return ref_ptr<hal::Semaphore>(std::move(semaphore));
}

StatusOr<ref_ptr<hal::ExecutableCache>> NullDevice::CreateExecutableCache() {
  OSPREY_ASSIGN_OR_RETURN(auto cache, MakeRef<NullExecutableCache>(host_allocator_));
  return ref_ptr<hal::ExecutableCache>(std::move(cache));
}

Status NullDevice::QueueExecute(const hal::SemaphoreList&, std::span<hal::CommandBuffer* const>,
                                const hal::SemaphoreList&) {
  return UnimplementedError("null driver: QueueExecute is not implemented");
}

StatusOr<ref_ptr<hal::Driver>> NullDriver::Create(osprey::Allocator* host_allocator) {
  if (!host_allocator) return InvalidArgumentError("null driver needs a host allocator");
  OSPREY_ASSIGN_OR_RETURN(auto driver, MakeRef<NullDriver>(host_allocator, host_allocator));
  return ref_ptr<hal::Driver>(std::move(driver));
}

StatusOr<ref_ptr<hal::Device>> NullDriver::CreateDevice(std::span<const hal::DeviceParam> params) {
  if (!params.empty()) {
    return InvalidArgumentError("unknown null device param '%s' (the null driver takes none)",
                                params[0].key ? params[0].key : "");
  }
  OSPREY_ASSIGN_OR_RETURN(auto device, NullDevice::Create(host_allocator_));
  return ref_ptr<hal::Device>(std::move(device));
}

}  // namespace osprey::drivers::null
