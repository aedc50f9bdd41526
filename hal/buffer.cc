// Buffers: range resolution, access-checked host mapping and subspans.
#include "hal/buffer.h"

#include <cstring>
#include <utility>

#include "hal/allocator.h"
#include "runtime/base/logging.h"

namespace osprey::hal {

namespace {
// Only read and write are permissions; kDiscard is a hint.
constexpr MemoryAccess kReadWrite = MemoryAccess::kRead | MemoryAccess::kWrite;

const char* AccessName(MemoryAccess access) {
  const bool read = AnyBitSet(access, MemoryAccess::kRead);
  const bool write = AnyBitSet(access, MemoryAccess::kWrite);
  if (read && write) return "read-write";
  if (read) return "read";
  if (write) return "write";
  return "no";
}
}  // namespace

//===----------------------------------------------------------------------===//
// MappedMemory
//===----------------------------------------------------------------------===//

MappedMemory::MappedMemory(MappedMemory&& other) noexcept
    : buffer_(other.buffer_),
      data_(other.data_),
      offset_(other.offset_),
      length_(other.length_),
      access_(other.access_) {
  other.buffer_ = nullptr;
  other.data_ = nullptr;
  other.length_ = 0;
  other.access_ = MemoryAccess::kNone;
}

MappedMemory& MappedMemory::operator=(MappedMemory&& other) noexcept {
  if (this != &other) {
    Unmap();
    buffer_ = other.buffer_;
    data_ = other.data_;
    offset_ = other.offset_;
    length_ = other.length_;
    access_ = other.access_;
    other.buffer_ = nullptr;
    other.data_ = nullptr;
    other.length_ = 0;
    other.access_ = MemoryAccess::kNone;
  }
  return *this;
}

StatusOr<std::span<const uint8_t>> MappedMemory::Contents() const {
  if (!buffer_) return FailedPreconditionError("memory is not mapped");
  if (!AnyBitSet(access_, MemoryAccess::kRead)) {
    return PermissionDeniedError("mapping of %llu bytes is %s-only; reading it is not allowed",
                                 (unsigned long long)length_, AccessName(access_));
  }
  return std::span<const uint8_t>(data_, size_t(length_));
}

StatusOr<std::span<uint8_t>> MappedMemory::MutableContents() {
  if (!buffer_) return FailedPreconditionError("memory is not mapped");
  if (!AnyBitSet(access_, MemoryAccess::kWrite)) {
    return PermissionDeniedError("mapping of %llu bytes is %s-only; writing it is not allowed",
                                 (unsigned long long)length_, AccessName(access_));
  }
  return std::span<uint8_t>(data_, size_t(length_));
}

Status MappedMemory::Read(DeviceSize offset, void* data, DeviceSize length) const {
  OSPREY_ASSIGN_OR_RETURN(auto contents, Contents());
  if (offset > length_ || length > length_ - offset) {
    return OutOfRangeError("reading [%llu, +%llu) from a mapping of %llu bytes",
                           (unsigned long long)offset, (unsigned long long)length,
                           (unsigned long long)length_);
  }
  if (length) memcpy(data, contents.data() + offset, size_t(length));
  return OkStatus();
}

Status MappedMemory::Write(DeviceSize offset, const void* data, DeviceSize length) {
  OSPREY_ASSIGN_OR_RETURN(auto contents, MutableContents());
  if (offset > length_ || length > length_ - offset) {
    return OutOfRangeError("writing [%llu, +%llu) into a mapping of %llu bytes",
                           (unsigned long long)offset, (unsigned long long)length,
                           (unsigned long long)length_);
  }
  if (length) memcpy(contents.data() + offset, data, size_t(length));
  return OkStatus();
}

void MappedMemory::Unmap() {
  if (!buffer_) return;
  Buffer* buffer = buffer_;
  buffer_ = nullptr;
  if (AnyBitSet(access_, MemoryAccess::kWrite) &&
      !AnyBitSet(buffer->memory_type(), MemoryType::kHostCoherent)) {
    Status status = buffer->FlushRangeImpl(offset_, length_);
    if (!status.ok()) {
      // Unmap cannot fail; a lost flush is worth a loud message.
      OSPREY_LOG_ERROR("flushing %llu mapped bytes failed: %s", (unsigned long long)length_,
                       status.message());
    }
  }
  buffer->UnmapRangeImpl(offset_, length_, data_);
  data_ = nullptr;
  length_ = 0;
  access_ = MemoryAccess::kNone;
  buffer->Release();
}

//===----------------------------------------------------------------------===//
// Buffer
//===----------------------------------------------------------------------===//

Buffer::Buffer(Allocator* device_allocator, MemoryType memory_type, BufferUsage allowed_usage,
               MemoryAccess allowed_access, DeviceSize byte_offset, DeviceSize byte_length)
    : device_allocator_(device_allocator),
      memory_type_(memory_type),
      allowed_usage_(allowed_usage),
      allowed_access_(allowed_access),
      byte_offset_(byte_offset),
      byte_length_(byte_length) {}

Status Buffer::CalculateRange(DeviceSize offset, DeviceSize length, DeviceSize* out_offset,
                              DeviceSize* out_length) const {
  *out_offset = 0;
  *out_length = 0;
  if (offset > byte_length_) {
    return OutOfRangeError("offset %llu is past the end of a buffer of %llu bytes",
                           (unsigned long long)offset, (unsigned long long)byte_length_);
  }
  if (length == kWholeBuffer) {
    length = byte_length_ - offset;
  } else if (length > byte_length_ - offset) {
    return OutOfRangeError("range [%llu, %llu + %llu) is past the end of a buffer of %llu bytes",
                           (unsigned long long)offset, (unsigned long long)offset,
                           (unsigned long long)length, (unsigned long long)byte_length_);
  }
  *out_offset = byte_offset_ + offset;
  *out_length = length;
  return OkStatus();
}

Status Buffer::MapRange(MemoryAccess access, DeviceSize offset, DeviceSize length,
                        MappedMemory* out_mapping) {
  out_mapping->Unmap();
  if (!AnyBitSet(access, kReadWrite)) {
    return InvalidArgumentError("mapping requested with neither read nor write access");
  }
  if (!AnyBitSet(memory_type_, MemoryType::kHostVisible)) {
    return PermissionDeniedError(
        "buffer of %llu bytes is not host-visible (memory type 0x%x); it cannot be mapped",
        (unsigned long long)byte_length_, unsigned(memory_type_));
  }
  if (!AnyBitSet(allowed_usage_, BufferUsage::kMappingScoped | BufferUsage::kMappingPersistent)) {
    return PermissionDeniedError(
        "buffer of %llu bytes was allocated without mapping usage (usage 0x%x); it cannot be "
        "mapped",
        (unsigned long long)byte_length_, unsigned(allowed_usage_));
  }
  if (!AllBitsSet(allowed_access_, access & kReadWrite)) {
    return PermissionDeniedError(
        "buffer of %llu bytes allows %s access; mapping it for %s access is not allowed",
        (unsigned long long)byte_length_, AccessName(allowed_access_), AccessName(access));
  }
  DeviceSize abs_offset = 0, abs_length = 0;
  OSPREY_RETURN_IF_ERROR(CalculateRange(offset, length, &abs_offset, &abs_length),
                         "mapping a buffer range");
  Buffer* allocated = allocated_buffer();
  uint8_t* data = nullptr;
  OSPREY_RETURN_IF_ERROR(allocated->MapRangeImpl(access, abs_offset, abs_length, &data));
  if (AnyBitSet(access, MemoryAccess::kRead) &&
      !AnyBitSet(memory_type_, MemoryType::kHostCoherent)) {
    Status status = allocated->InvalidateRangeImpl(abs_offset, abs_length);
    if (!status.ok()) {
      allocated->UnmapRangeImpl(abs_offset, abs_length, data);
      return status;
    }
  }
  allocated->Retain();
  out_mapping->buffer_ = allocated;
  out_mapping->data_ = data;
  out_mapping->offset_ = abs_offset;
  out_mapping->length_ = abs_length;
  out_mapping->access_ = access;
  return OkStatus();
}

Status Buffer::ReadData(DeviceSize offset, void* data, DeviceSize length) {
  MappedMemory mapping;
  OSPREY_RETURN_IF_ERROR(MapRange(MemoryAccess::kRead, offset, length, &mapping),
                         "reading buffer data");
  return mapping.Read(0, data, length);
}

Status Buffer::WriteData(DeviceSize offset, const void* data, DeviceSize length) {
  MappedMemory mapping;
  OSPREY_RETURN_IF_ERROR(MapRange(MemoryAccess::kWrite, offset, length, &mapping),
                         "writing buffer data");
  return mapping.Write(0, data, length);
}

Status Buffer::MapForDevice(MemoryAccess access, DeviceSize offset, DeviceSize length,
                            uint8_t** out_data) {
  *out_data = nullptr;
  if (!AllBitsSet(allowed_access_, access & kReadWrite)) {
    return PermissionDeniedError("buffer of %llu bytes allows %s access; %s access requested",
                                 (unsigned long long)byte_length_, AccessName(allowed_access_),
                                 AccessName(access));
  }
  DeviceSize abs_offset = 0, abs_length = 0;
  OSPREY_RETURN_IF_ERROR(CalculateRange(offset, length, &abs_offset, &abs_length));
  return allocated_buffer()->MapRangeImpl(access, abs_offset, abs_length, out_data);
}

//===----------------------------------------------------------------------===//
// Subspans
//===----------------------------------------------------------------------===//

// A window onto another buffer's memory; never mapped itself (Buffer's
// mapping paths go to the allocated buffer).
class SubspanBuffer final : public Buffer {
 public:
  SubspanBuffer(const ref_ptr<Buffer>& parent, DeviceSize absolute_offset, DeviceSize length)
      : Buffer(parent->device_allocator(), parent->memory_type(), parent->allowed_usage(),
               parent->allowed_access(), absolute_offset, length) {
    allocated_buffer_ = ref_ptr<Buffer>(parent->allocated_buffer());
  }

 protected:
  Status MapRangeImpl(MemoryAccess access, DeviceSize offset, DeviceSize length,
                      uint8_t** out_data) override {
    return allocated_buffer_->MapRangeImpl(access, offset, length, out_data);
  }
  void UnmapRangeImpl(DeviceSize offset, DeviceSize length, uint8_t* data) override {
    allocated_buffer_->UnmapRangeImpl(offset, length, data);
  }
  Status FlushRangeImpl(DeviceSize offset, DeviceSize length) override {
    return allocated_buffer_->FlushRangeImpl(offset, length);
  }
  Status InvalidateRangeImpl(DeviceSize offset, DeviceSize length) override {
    return allocated_buffer_->InvalidateRangeImpl(offset, length);
  }
};

StatusOr<ref_ptr<Buffer>> Buffer::Subspan(const ref_ptr<Buffer>& buffer, DeviceSize offset,
                                          DeviceSize length) {
  if (!buffer) return InvalidArgumentError("subspan of a null buffer");
  DeviceSize abs_offset = 0, abs_length = 0;
  OSPREY_RETURN_IF_ERROR(buffer->CalculateRange(offset, length, &abs_offset, &abs_length),
                         "creating a buffer subspan");
  osprey::Allocator* host_allocator = buffer->device_allocator()
                                          ? buffer->device_allocator()->host_allocator()
                                          : buffer->host_allocator();
  if (!host_allocator) {
    return FailedPreconditionError(
        "cannot create a subspan: the buffer has neither a device allocator nor a host "
        "allocator to allocate it from");
  }
  OSPREY_ASSIGN_OR_RETURN(auto subspan,
                          MakeRef<SubspanBuffer>(host_allocator, buffer, abs_offset, abs_length));
  return ref_ptr<Buffer>(std::move(subspan));
}

}  // namespace osprey::hal
