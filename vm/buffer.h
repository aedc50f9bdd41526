// vm.buffer: a host byte buffer for small host-side data (shapes, parameter
// blocks) and read-only views of module rodata segments.
#ifndef OSPREY_VM_BUFFER_H_
#define OSPREY_VM_BUFFER_H_

#include <cstddef>
#include <cstdint>

#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "vm/ref.h"

namespace osprey::vm {

// Not thread-safe for concurrent writes. Accessors take byte offsets and
// check them (OUT_OF_RANGE) because they are data-dependent.
class Buffer final : public RefObject {
 public:
  // The registered type of every Buffer ("vm.buffer").
  static const RefType* type();

  // Allocates |length| zeroed, writable bytes aligned to |alignment|.
  static StatusOr<ref_ptr<Buffer>> Allocate(size_t length, size_t alignment,
                                            Allocator* allocator);
  // Wraps |length| read-only bytes at |data| without copying. |owner| (may
  // be null) is retained for the buffer's lifetime; otherwise the caller
  // keeps |data| alive as long as the buffer.
  static StatusOr<ref_ptr<Buffer>> WrapReadOnly(const void* data, size_t length,
                                                ref_ptr<RefObject> owner, Allocator* allocator);

  const uint8_t* data() const { return data_; }
  // Null for read-only buffers.
  uint8_t* mutable_data() { return read_only_ ? nullptr : data_; }
  size_t length() const { return length_; }
  bool read_only() const { return read_only_; }

  // OUT_OF_RANGE unless [offset, offset + length) lies inside the buffer
  // (negative values are out of range).
  Status CheckRange(int64_t offset, int64_t length) const;
  // CheckRange plus PERMISSION_DENIED for read-only buffers.
  Status CheckWritableRange(int64_t offset, int64_t length) const;

  // Use Allocate() or WrapReadOnly(); public only for MakeRef.
  Buffer() = default;
  ~Buffer() override;

 private:

  uint8_t* data_ = nullptr;
  size_t length_ = 0;
  bool read_only_ = false;
  Allocator* data_allocator_ = nullptr;  // Set when data_ is owned.
  ref_ptr<RefObject> owner_;
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_BUFFER_H_
