// A device allocator over host memory, for devices that share the CPU's
// memory (cpu-sync, cpu-task, a simulated NPU).
//
// Placement is enforced even though every byte is host memory: a buffer
// keeps exactly the memory type the caller asked for, so a buffer allocated
// kDeviceLocal (without kHostVisible) cannot be mapped by the host, exactly
// as on a discrete device. kOptimal resolves to host-local, coherent,
// device-visible memory.
#ifndef OSPREY_HAL_LOCAL_HEAP_ALLOCATOR_H_
#define OSPREY_HAL_LOCAL_HEAP_ALLOCATOR_H_

#include <atomic>

#include "hal/allocator.h"
#include "hal/buffer.h"

namespace osprey::hal::local {

class HeapAllocator final : public hal::Allocator {
 public:
  // Default alignment of buffer contents (a cache line).
  static constexpr DeviceSize kDefaultBufferAlignment = 64;

  // |host_allocator| holds buffer objects; |data_allocator| holds buffer
  // contents (null: |host_allocator|). Both are borrowed and must outlive
  // the allocator and every buffer it makes (buffers retain the allocator).
  static StatusOr<ref_ptr<HeapAllocator>> Create(osprey::Allocator* host_allocator,
                                                 osprey::Allocator* data_allocator = nullptr);

  osprey::Allocator* host_allocator() const override { return host_allocator_; }

  // Resolves kOptimal and implied bits. Never compatible: a type visible to
  // neither host nor device, mapping usage without kHostVisible, an
  // alignment that is not a power of two, a length beyond the address space.
  BufferCompatibility QueryCompatibility(BufferParams* params, DeviceSize length) const override;

  // INVALID_ARGUMENT (saying which rule) for params QueryCompatibility
  // rejects; RESOURCE_EXHAUSTED when |data_allocator| is out of memory.
  StatusOr<ref_ptr<Buffer>> AllocateBuffer(const BufferParams& params,
                                           DeviceSize length) override;

  // Wraps host memory; |memory| must satisfy |params.min_alignment|.
  StatusOr<ref_ptr<Buffer>> ImportBuffer(const BufferParams& params, void* memory,
                                         DeviceSize length, ReleaseCallback release) override;

  // Bytes of buffer contents allocated (imports not counted).
  DeviceSize bytes_allocated() const override { return bytes_allocated_.load(); }

  // Why |params| (resolved) cannot make a buffer of |length| bytes; OK if
  // they can. Exposed for drivers that wrap this allocator.
  static Status CheckParams(const BufferParams& params, DeviceSize length);

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.
  HeapAllocator(osprey::Allocator* host_allocator, osprey::Allocator* data_allocator)
      : host_allocator_(host_allocator), data_allocator_(data_allocator) {}

  osprey::Allocator* host_allocator_;
  osprey::Allocator* data_allocator_;
  std::atomic<DeviceSize> bytes_allocated_{0};
};

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_HEAP_ALLOCATOR_H_
