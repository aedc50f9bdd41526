// The null driver: a compiling template for new HAL drivers. Every object
// exists and every operation returns UNIMPLEMENTED; each stub says what a
// real driver must do there. Copy this folder to start a driver (see
// README.md).
#ifndef OSPREY_DRIVERS_NULL_NULL_DEVICE_H_
#define OSPREY_DRIVERS_NULL_NULL_DEVICE_H_

#include <cstdint>
#include <span>

#include "hal/allocator.h"
#include "hal/buffer.h"
#include "hal/command_buffer.h"
#include "hal/device.h"
#include "hal/driver.h"
#include "hal/executable.h"
#include "hal/semaphore.h"

namespace osprey::drivers::null {

//===----------------------------------------------------------------------===//
// Buffer
//===----------------------------------------------------------------------===//

// A real buffer owns a device allocation (a VkDeviceMemory range, an NPU
// SRAM offset, ...) and frees it in its destructor. hal::Buffer already
// checks ranges and permissions; the driver only provides addresses.
class NullBuffer final : public hal::Buffer {
 public:
  NullBuffer(hal::Allocator* allocator, const hal::BufferParams& params, hal::DeviceSize length)
      : hal::Buffer(allocator, params.type, params.usage, params.access, 0, length) {}

 protected:
  // Real version: return the host address of [offset, offset+length) of
  // the allocation (mapping it if needed), or UNIMPLEMENTED if the host
  // cannot address this memory at all.
  Status MapRangeImpl(hal::MemoryAccess access, hal::DeviceSize offset, hal::DeviceSize length,
                      uint8_t** out_data) override;
};

//===----------------------------------------------------------------------===//
// Allocator
//===----------------------------------------------------------------------===//

class NullAllocator final : public hal::Allocator {
 public:
  explicit NullAllocator(osprey::Allocator* host_allocator) : host_allocator_(host_allocator) {}
  osprey::Allocator* host_allocator() const override { return host_allocator_; }

  // Real version: resolve kOptimal to the device's best heap for the
  // usage, add implied visibility bits, and report what works.
  hal::BufferCompatibility QueryCompatibility(hal::BufferParams* params,
                                              hal::DeviceSize length) const override;
  // Real version: allocate device memory honouring the exact memory type
  // requested, and wrap it in a buffer that frees it on destruction.
  StatusOr<ref_ptr<hal::Buffer>> AllocateBuffer(const hal::BufferParams& params,
                                                hal::DeviceSize length) override;
  // Real version: wrap host memory the device can address, or copy-import.
  StatusOr<ref_ptr<hal::Buffer>> ImportBuffer(const hal::BufferParams& params, void* memory,
                                              hal::DeviceSize length,
                                              hal::ReleaseCallback release) override;

 private:
  osprey::Allocator* host_allocator_;
};

//===----------------------------------------------------------------------===//
// Command buffer
//===----------------------------------------------------------------------===//

// hal::CommandBuffer validates every command before these hooks run; a real
// version records the (resolved) command in the device's format, e.g. by
// deriving from hal::local::RecordingCommandBuffer and replaying the list.
class NullCommandBuffer final : public hal::CommandBuffer {
 public:
  NullCommandBuffer(hal::CommandBufferMode mode, osprey::Allocator* host_allocator)
      : hal::CommandBuffer(mode, host_allocator) {}

 protected:
  Status ExecutionBarrierImpl() override;
  Status FillBufferImpl(hal::BufferRef target, uint32_t pattern, size_t pattern_length) override;
  Status UpdateBufferImpl(const void* source_data, hal::BufferRef target) override;
  Status CopyBufferImpl(hal::BufferRef source, hal::BufferRef target) override;
  Status DispatchImpl(hal::Executable* executable, uint32_t ordinal,
                      hal::WorkgroupCount workgroup_count, std::span<const uint32_t> constants,
                      std::span<const hal::BufferRef> bindings) override;
};

//===----------------------------------------------------------------------===//
// Semaphore
//===----------------------------------------------------------------------===//

// Real version: a timeline semaphore the device can signal and wait on
// (or hal::local::HostSemaphore when the queue runs on the host).
class NullSemaphore final : public hal::Semaphore {
 public:
  StatusOr<uint64_t> Query() override;
  Status Signal(uint64_t value) override;
  void Fail(Status status) override;
  Status Wait(uint64_t value, int64_t deadline_ns) override;
};

//===----------------------------------------------------------------------===//
// Executable cache
//===----------------------------------------------------------------------===//

// Real version: accept the device's executable format (schema in
// drivers/<name>/schema/), verify every offset and size, and build an
// Executable whose ExportInfo describes each dispatch function.
class NullExecutableCache final : public hal::ExecutableCache {
 public:
  bool CanPrepareFormat(const char* format) const override;
  StatusOr<ref_ptr<hal::Executable>> PrepareExecutable(
      const hal::ExecutableParams& params) override;
};

//===----------------------------------------------------------------------===//
// Device and driver
//===----------------------------------------------------------------------===//

class NullDevice final : public hal::Device {
 public:
  static StatusOr<ref_ptr<NullDevice>> Create(osprey::Allocator* host_allocator);

  const char* id() const override { return "null"; }
  hal::Allocator* allocator() const override { return allocator_.get(); }
  osprey::Allocator* host_allocator() const override { return host_allocator_; }

  StatusOr<ref_ptr<hal::CommandBuffer>> CreateCommandBuffer(hal::CommandBufferMode mode) override;
  StatusOr<ref_ptr<hal::Semaphore>> CreateSemaphore(uint64_t initial_value) override;
  StatusOr<ref_ptr<hal::ExecutableCache>> CreateExecutableCache() override;
  // Real version: wait (or enqueue a wait) for |wait|, run the command
  // buffers in order, then signal |signal|, failing it on any error.
  Status QueueExecute(const hal::SemaphoreList& wait,
                      std::span<hal::CommandBuffer* const> command_buffers,
                      const hal::SemaphoreList& signal) override;

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.
  explicit NullDevice(osprey::Allocator* host_allocator) : host_allocator_(host_allocator) {}

  osprey::Allocator* host_allocator_;
  ref_ptr<NullAllocator> allocator_;
};

class NullDriver final : public hal::Driver {
 public:
  static StatusOr<ref_ptr<hal::Driver>> Create(osprey::Allocator* host_allocator);
  // Real version: find the hardware (UNAVAILABLE if absent), parse params
  // (INVALID_ARGUMENT for unknown keys) and open the device. The null
  // driver makes a NullDevice so its stubs can be exercised.
  StatusOr<ref_ptr<hal::Device>> CreateDevice(std::span<const hal::DeviceParam> params) override;

  explicit NullDriver(osprey::Allocator* host_allocator) : host_allocator_(host_allocator) {}

 private:
  osprey::Allocator* host_allocator_;
};

}  // namespace osprey::drivers::null

#endif  // OSPREY_DRIVERS_NULL_NULL_DEVICE_H_
