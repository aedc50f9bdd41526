// Arena: block chaining and reuse.
#include "runtime/base/arena.h"

namespace osprey {

namespace {
uintptr_t AlignUp(uintptr_t v, size_t a) { return (v + a - 1) & ~uintptr_t(a - 1); }
}  // namespace

Arena::~Arena() {
  Reset();
  while (spare_) {
    Block* next = spare_->next;
    parent_->Free(spare_);
    spare_ = next;
  }
}

Status Arena::Allocate(size_t size, size_t alignment, void** out_ptr) {
  *out_ptr = nullptr;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return InvalidArgumentError("alignment %zu is not a power of two", alignment);
  }
  if (used_) {
    uintptr_t data = reinterpret_cast<uintptr_t>(used_ + 1);
    uintptr_t p = AlignUp(data + offset_, alignment);
    if (p + size <= data + used_->capacity && p + size >= p) {
      offset_ = p + size - data;
      bytes_allocated_ += size;
      *out_ptr = reinterpret_cast<void*>(p);
      return OkStatus();
    }
  }
  // Need a new block: reuse a spare one if it is big enough.
  size_t needed = size + alignment;
  Block* block = nullptr;
  if (spare_ && spare_->capacity >= needed) {
    block = spare_;
    spare_ = spare_->next;
  } else {
    size_t capacity = needed > block_size_ ? needed : block_size_;
    void* memory = nullptr;
    OSPREY_RETURN_IF_ERROR(parent_->Allocate(sizeof(Block) + capacity, kDefaultAlignment, &memory),
                           "growing arena by %zu bytes", capacity);
    block = static_cast<Block*>(memory);
    block->capacity = capacity;
  }
  block->next = used_;
  used_ = block;
  offset_ = 0;
  return Allocate(size, alignment, out_ptr);
}

void Arena::Reset() {
  while (used_) {
    Block* next = used_->next;
    used_->next = spare_;
    spare_ = used_;
    used_ = next;
  }
  offset_ = 0;
  bytes_allocated_ = 0;
}

}  // namespace osprey
