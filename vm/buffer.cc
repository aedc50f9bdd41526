// vm.buffer implementation.
#include "vm/buffer.h"

#include <cstring>
#include <utility>

namespace osprey::vm {

namespace {
constexpr RefType kBufferType{"vm.buffer"};
}  // namespace

const RefType* Buffer::type() { return &kBufferType; }

StatusOr<ref_ptr<Buffer>> Buffer::Allocate(size_t length, size_t alignment,
                                           Allocator* allocator) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return InvalidArgumentError("buffer alignment %zu is not a power of two", alignment);
  }
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<Buffer> buffer, MakeRef<Buffer>(allocator));
  if (length > 0) {
    void* memory = nullptr;
    OSPREY_RETURN_IF_ERROR(allocator->AllocateZeroed(length, alignment, &memory),
                           "allocating a %zu-byte buffer", length);
    buffer->data_ = static_cast<uint8_t*>(memory);
    buffer->data_allocator_ = allocator;
  }
  buffer->length_ = length;
  return buffer;
}

StatusOr<ref_ptr<Buffer>> Buffer::WrapReadOnly(const void* data, size_t length,
                                               ref_ptr<RefObject> owner, Allocator* allocator) {
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<Buffer> buffer, MakeRef<Buffer>(allocator));
  buffer->data_ = const_cast<uint8_t*>(static_cast<const uint8_t*>(data));
  buffer->length_ = length;
  buffer->read_only_ = true;
  buffer->owner_ = std::move(owner);
  return buffer;
}

Buffer::~Buffer() {
  if (data_allocator_) data_allocator_->Free(data_);
}

Status Buffer::CheckRange(int64_t offset, int64_t length) const {
  if (OSPREY_UNLIKELY(offset < 0 || length < 0 || uint64_t(offset) > length_ ||
                      uint64_t(length) > length_ - uint64_t(offset))) {
    return OutOfRangeError("buffer range [%lld, +%lld) out of bounds (length %zu)",
                           static_cast<long long>(offset), static_cast<long long>(length),
                           length_);
  }
  return OkStatus();
}

Status Buffer::CheckWritableRange(int64_t offset, int64_t length) const {
  if (OSPREY_UNLIKELY(read_only_)) {
    return PermissionDeniedError("buffer is read-only (a rodata segment)");
  }
  return CheckRange(offset, length);
}

}  // namespace osprey::vm
