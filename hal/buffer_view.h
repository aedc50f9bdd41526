// Buffer views: a buffer range interpreted as a shaped, typed tensor.
#ifndef OSPREY_HAL_BUFFER_VIEW_H_
#define OSPREY_HAL_BUFFER_VIEW_H_

#include <cstdint>
#include <span>

#include "hal/buffer.h"
#include "hal/resource.h"
#include "hal/types.h"

namespace osprey::hal {

inline constexpr size_t kMaxRank = 8;

class BufferView : public Resource {
 public:
  // Creates a view of |buffer| (retained). INVALID_ARGUMENT if the rank
  // exceeds kMaxRank, a dimension is negative, or the element count
  // overflows; OUT_OF_RANGE if the buffer is smaller than the shape needs.
  static StatusOr<ref_ptr<BufferView>> Create(ref_ptr<Buffer> buffer,
                                              std::span<const int64_t> shape,
                                              ElementType element_type, Encoding encoding,
                                              osprey::Allocator* host_allocator);

  Buffer* buffer() const { return buffer_.get(); }
  const ref_ptr<Buffer>& buffer_ref() const { return buffer_; }
  std::span<const int64_t> shape() const { return {shape_, rank_}; }
  size_t rank() const { return rank_; }
  int64_t dim(size_t i) const { return shape_[i]; }
  ElementType element_type() const { return element_type_; }
  Encoding encoding() const { return encoding_; }
  int64_t element_count() const;
  DeviceSize byte_length() const;

  // Writes e.g. "2x3xf32" into |buffer|; returns the full length.
  size_t FormatShape(char* buffer, size_t capacity) const;

 private:
  BufferView() = default;
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> osprey::MakeRef(osprey::Allocator*, Args&&...);
  friend class osprey::Allocator;  // Constructs through Allocator::New.

  ref_ptr<Buffer> buffer_;
  int64_t shape_[kMaxRank] = {};
  size_t rank_ = 0;
  ElementType element_type_ = ElementType::kNone;
  Encoding encoding_ = Encoding::kDenseRowMajor;
};

}  // namespace osprey::hal

#endif  // OSPREY_HAL_BUFFER_VIEW_H_
