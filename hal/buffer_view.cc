// Buffer views: shape validation and formatting.
#include "hal/buffer_view.h"

#include <stdio.h>

#include <limits>
#include <utility>

namespace osprey::hal {

StatusOr<ref_ptr<BufferView>> BufferView::Create(ref_ptr<Buffer> buffer,
                                                 std::span<const int64_t> shape,
                                                 ElementType element_type, Encoding encoding,
                                                 osprey::Allocator* host_allocator) {
  if (!buffer) return InvalidArgumentError("buffer view of a null buffer");
  if (shape.size() > kMaxRank) {
    return InvalidArgumentError("buffer view rank %zu exceeds the maximum of %zu", shape.size(),
                                kMaxRank);
  }
  if (ElementBitWidth(element_type) == 0 || element_type == ElementType::kNone) {
    return InvalidArgumentError("buffer view element type 0x%x is not valid",
                                unsigned(element_type));
  }
  const uint64_t element_size = ElementByteSize(element_type);
  uint64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return InvalidArgumentError("buffer view dimension %zu is negative (%lld)", i,
                                  (long long)shape[i]);
    }
    const uint64_t dim = uint64_t(shape[i]);
    if (dim != 0 && count > uint64_t(std::numeric_limits<int64_t>::max()) / element_size / dim) {
      return InvalidArgumentError("buffer view shape overflows at dimension %zu", i);
    }
    count *= dim;
  }
  const uint64_t needed = count * element_size;
  if (needed > buffer->byte_length()) {
    return OutOfRangeError("buffer view needs %llu bytes but the buffer has %llu",
                           (unsigned long long)needed, (unsigned long long)buffer->byte_length());
  }
  OSPREY_ASSIGN_OR_RETURN(auto view, MakeRef<BufferView>(host_allocator));
  view->buffer_ = std::move(buffer);
  for (size_t i = 0; i < shape.size(); ++i) view->shape_[i] = shape[i];
  view->rank_ = shape.size();
  view->element_type_ = element_type;
  view->encoding_ = encoding;
  return view;
}

int64_t BufferView::element_count() const {
  int64_t count = 1;
  for (size_t i = 0; i < rank_; ++i) count *= shape_[i];
  return count;
}

DeviceSize BufferView::byte_length() const {
  return DeviceSize(element_count()) * ElementByteSize(element_type_);
}

size_t BufferView::FormatShape(char* buffer, size_t capacity) const {
  size_t used = 0;
  auto append = [&](int n) {
    if (n > 0) used += size_t(n);
  };
  for (size_t i = 0; i < rank_; ++i) {
    append(snprintf(used < capacity ? buffer + used : nullptr,
                    used < capacity ? capacity - used : 0, "%lldx", (long long)shape_[i]));
  }
  append(snprintf(used < capacity ? buffer + used : nullptr, used < capacity ? capacity - used : 0,
                  "%s", ElementTypeName(element_type_)));
  return used;
}

}  // namespace osprey::hal
