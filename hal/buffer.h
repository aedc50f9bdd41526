// Buffers: device-accessible memory with a memory type, allowed usage and
// allowed access that every operation checks.
#ifndef OSPREY_HAL_BUFFER_H_
#define OSPREY_HAL_BUFFER_H_

#include <cstdint>
#include <span>

#include "hal/resource.h"
#include "hal/types.h"
#include "runtime/base/status.h"

namespace osprey::hal {

class Allocator;
class Buffer;

// A host view of part of a buffer, unmapped when destroyed. Move-only.
// Access is limited to what the mapping was made with: reading a write-only
// mapping or writing a read-only one fails with PERMISSION_DENIED.
class MappedMemory {
 public:
  MappedMemory() = default;
  MappedMemory(MappedMemory&& other) noexcept;
  MappedMemory& operator=(MappedMemory&& other) noexcept;
  MappedMemory(const MappedMemory&) = delete;
  MappedMemory& operator=(const MappedMemory&) = delete;
  ~MappedMemory() { Unmap(); }

  // Readable contents; PERMISSION_DENIED unless mapped with kRead.
  StatusOr<std::span<const uint8_t>> Contents() const;
  // Writable contents; PERMISSION_DENIED unless mapped with kWrite.
  StatusOr<std::span<uint8_t>> MutableContents();
  // Copies with range and access checks.
  Status Read(DeviceSize offset, void* data, DeviceSize length) const;
  Status Write(DeviceSize offset, const void* data, DeviceSize length);

  MemoryAccess access() const { return access_; }
  DeviceSize byte_length() const { return length_; }
  bool mapped() const { return buffer_ != nullptr; }
  // Ends the mapping (flushing non-coherent memory). Idempotent.
  void Unmap();

 private:
  friend class Buffer;
  Buffer* buffer_ = nullptr;  // Retained while mapped.
  uint8_t* data_ = nullptr;
  DeviceSize offset_ = 0;  // Absolute offset in the allocated buffer.
  DeviceSize length_ = 0;
  MemoryAccess access_ = MemoryAccess::kNone;
};

class Buffer : public Resource {
 public:
  MemoryType memory_type() const { return memory_type_; }
  BufferUsage allowed_usage() const { return allowed_usage_; }
  MemoryAccess allowed_access() const { return allowed_access_; }
  // Length of this buffer (or subspan) in bytes.
  DeviceSize byte_length() const { return byte_length_; }
  // Offset of this buffer in its allocated buffer (0 unless a subspan).
  DeviceSize byte_offset() const { return byte_offset_; }
  // The buffer owning the memory: this one unless a subspan. Borrowed.
  Buffer* allocated_buffer() { return allocated_buffer_ ? allocated_buffer_.get() : this; }
  // The allocator that made it (null for imported-without-allocator). Borrowed.
  Allocator* device_allocator() const { return device_allocator_; }

  // Resolves (|offset|, |length|) against this buffer (kWholeBuffer allowed)
  // into an absolute range of the allocated buffer. OUT_OF_RANGE if past end.
  Status CalculateRange(DeviceSize offset, DeviceSize length, DeviceSize* out_offset,
                        DeviceSize* out_length) const;

  // Maps a range for the host. PERMISSION_DENIED if the memory type is not
  // host-visible, the usage lacks mapping, or |access| exceeds the buffer's
  // allowed access; OUT_OF_RANGE if the range does not fit.
  Status MapRange(MemoryAccess access, DeviceSize offset, DeviceSize length,
                  MappedMemory* out_mapping);

  // Host copies through a scoped mapping (same checks as MapRange).
  Status ReadData(DeviceSize offset, void* data, DeviceSize length);
  Status WriteData(DeviceSize offset, const void* data, DeviceSize length);

  // For drivers only: the memory backing [offset, offset+length) of this
  // buffer as the device sees it, without the host-visibility check (device
  // access is checked against usage and access when commands are recorded).
  // Returns UNIMPLEMENTED for memory the host cannot address at all.
  Status MapForDevice(MemoryAccess access, DeviceSize offset, DeviceSize length,
                      uint8_t** out_data);

  // Creates a view of [offset, offset+length) sharing this buffer's memory.
  // The subspan retains |buffer|.
  static StatusOr<ref_ptr<Buffer>> Subspan(const ref_ptr<Buffer>& buffer, DeviceSize offset,
                                           DeviceSize length);

 protected:
  Buffer(Allocator* device_allocator, MemoryType memory_type, BufferUsage allowed_usage,
         MemoryAccess allowed_access, DeviceSize byte_offset, DeviceSize byte_length);

  // Implemented by allocated buffers: address of |length| bytes at absolute
  // |offset| of the allocation. Subspans forward to their allocated buffer.
  virtual Status MapRangeImpl(MemoryAccess access, DeviceSize offset, DeviceSize length,
                              uint8_t** out_data) = 0;
  virtual void UnmapRangeImpl(DeviceSize offset, DeviceSize length, uint8_t* data) {}
  // Non-coherent memory: make host writes visible to the device / device
  // writes visible to the host.
  virtual Status FlushRangeImpl(DeviceSize offset, DeviceSize length) { return OkStatus(); }
  virtual Status InvalidateRangeImpl(DeviceSize offset, DeviceSize length) {
    return OkStatus();
  }

 private:
  friend class MappedMemory;
  friend class SubspanBuffer;

  Allocator* device_allocator_;
  ref_ptr<Buffer> allocated_buffer_;  // Set for subspans only.
  MemoryType memory_type_;
  BufferUsage allowed_usage_;
  MemoryAccess allowed_access_;
  DeviceSize byte_offset_;
  DeviceSize byte_length_;
};

// A buffer argument of a command: a range of a buffer.
struct BufferRef {
  Buffer* buffer = nullptr;  // Borrowed; commands retain what they record.
  DeviceSize offset = 0;
  DeviceSize length = kWholeBuffer;
};

}  // namespace osprey::hal

#endif  // OSPREY_HAL_BUFFER_H_
