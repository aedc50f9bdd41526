// HostBuffer: ownership and release of host memory behind a buffer.
#include "hal/local/host_buffer.h"

namespace osprey::hal::local {

HostBuffer::HostBuffer(Allocator* device_allocator, const BufferParams& params,
                       DeviceSize length, uint8_t* data, osprey::Allocator* data_allocator,
                       std::atomic<DeviceSize>* bytes_allocated, ReleaseCallback release)
    : Buffer(device_allocator, params.type, params.usage, params.access, 0, length),
      device_allocator_(device_allocator),
      data_(data),
      data_allocator_(data_allocator),
      bytes_allocated_(bytes_allocated),
      release_(release) {}

HostBuffer::~HostBuffer() {
  if (data_allocator_) {
    data_allocator_->Free(data_);
    if (bytes_allocated_) bytes_allocated_->fetch_sub(byte_length());
  } else if (release_.fn) {
    release_.fn(release_.user_data, data_);
  }
}

Status HostBuffer::MapRangeImpl(MemoryAccess, DeviceSize offset, DeviceSize, uint8_t** out_data) {
  *out_data = data_ + offset;
  return OkStatus();
}

}  // namespace osprey::hal::local
