// A buffer over host memory, either allocated by a device allocator (and
// freed into the same memory source) or imported from the application.
// Shared by every allocator that hands out host memory (heap, npu).
#ifndef OSPREY_HAL_LOCAL_HOST_BUFFER_H_
#define OSPREY_HAL_LOCAL_HOST_BUFFER_H_

#include <atomic>
#include <cstdint>

#include "hal/allocator.h"
#include "hal/buffer.h"

namespace osprey::hal::local {

class HostBuffer final : public Buffer {
 public:
  // Wraps |length| bytes at |data| for |device_allocator| (retained, so the
  // memory source and |bytes_allocated| outlive the buffer). If
  // |data_allocator| is set the buffer owns |data|: it frees it there and
  // subtracts |length| from |*bytes_allocated| (may be null) on destruction.
  // Otherwise the memory is imported and |release| runs on destruction.
  HostBuffer(Allocator* device_allocator, const BufferParams& params, DeviceSize length,
             uint8_t* data, osprey::Allocator* data_allocator,
             std::atomic<DeviceSize>* bytes_allocated, ReleaseCallback release);
  ~HostBuffer() override;

 protected:
  Status MapRangeImpl(MemoryAccess access, DeviceSize offset, DeviceSize length,
                      uint8_t** out_data) override;

 private:
  ref_ptr<Allocator> device_allocator_;
  uint8_t* data_;
  osprey::Allocator* data_allocator_;
  std::atomic<DeviceSize>* bytes_allocated_;
  ReleaseCallback release_;
};

}  // namespace osprey::hal::local

#endif  // OSPREY_HAL_LOCAL_HOST_BUFFER_H_
