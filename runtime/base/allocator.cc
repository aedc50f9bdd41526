// Allocator implementations: default (the platform's memory), static arena,
// counting.
#include "runtime/base/allocator.h"

#include <cstring>

#include "runtime/base/platform/platform.h"

namespace osprey {

Status Allocator::AllocateZeroed(size_t size, size_t alignment, void** out_ptr) {
  OSPREY_RETURN_IF_ERROR(Allocate(size, alignment, out_ptr));
  memset(*out_ptr, 0, size);
  return OkStatus();
}

namespace {

class SystemAllocator final : public Allocator {
 public:
  Status Allocate(size_t size, size_t alignment, void** out_ptr) override {
    *out_ptr = nullptr;
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      return InvalidArgumentError("alignment %zu is not a power of two", alignment);
    }
    void* p = platform::AllocateMemory(size, alignment);
    if (!p) {
      return ResourceExhaustedError("host allocation of %zu bytes failed", size);
    }
    *out_ptr = p;
    return OkStatus();
  }
  void Free(void* ptr) override { platform::FreeMemory(ptr); }
};

}  // namespace

Allocator* Allocator::Default() {
  static SystemAllocator allocator;
  return &allocator;
}

//===----------------------------------------------------------------------===//
// StaticArenaAllocator
//===----------------------------------------------------------------------===//

// Blocks tile the arena in address order, linked both ways so Free() merges
// a block with its neighbours in constant time. Each allocation's header sits
// just before the returned pointer so Free() can find it. |first_free_| is
// the lowest free block: long-lived allocations made first (the module, the
// context) fill the front of the arena, and searches start past them.
struct StaticArenaAllocator::Block {
  Block* prev;   // Previous block in address order.
  Block* next;   // Next block in address order.
  size_t size;   // Bytes after this header up to |next| (or the arena end).
  bool free;
};

namespace {
constexpr size_t kHeaderAlign = alignof(max_align_t);
size_t AlignUp(size_t v, size_t a) { return (v + a - 1) & ~(a - 1); }
// Allocations store a back-pointer to their block right before the payload.
struct BackPointer {
  void* block;
};
}  // namespace

StaticArenaAllocator::StaticArenaAllocator(void* memory, size_t size) {
  uintptr_t begin = AlignUp(reinterpret_cast<uintptr_t>(memory), kHeaderAlign);
  uintptr_t end = reinterpret_cast<uintptr_t>(memory) + size;
  if (end <= begin || end - begin <= sizeof(Block)) return;
  head_ = reinterpret_cast<Block*>(begin);
  head_->prev = nullptr;
  head_->next = nullptr;
  head_->size = end - begin - sizeof(Block);
  head_->free = true;
  first_free_ = head_;
  capacity_ = head_->size;
}

Status StaticArenaAllocator::Allocate(size_t size, size_t alignment, void** out_ptr) {
  *out_ptr = nullptr;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return InvalidArgumentError("alignment %zu is not a power of two", alignment);
  }
  if (alignment < alignof(BackPointer)) alignment = alignof(BackPointer);
  for (Block* block = first_free_; block; block = block->next) {
    if (!block->free) continue;
    uintptr_t data_begin = reinterpret_cast<uintptr_t>(block + 1);
    uintptr_t payload = AlignUp(data_begin + sizeof(BackPointer), alignment);
    uintptr_t data_end = data_begin + block->size;
    if (payload + size > data_end || payload + size < payload) continue;
    // Split off the tail when it can hold another block.
    uintptr_t tail = AlignUp(payload + size, kHeaderAlign);
    if (tail + sizeof(Block) + kHeaderAlign <= data_end) {
      auto* rest = reinterpret_cast<Block*>(tail);
      rest->prev = block;
      rest->next = block->next;
      rest->size = data_end - tail - sizeof(Block);
      rest->free = true;
      if (rest->next) rest->next->prev = rest;
      block->next = rest;
      block->size = tail - data_begin;
    }
    block->free = false;
    if (block == first_free_) {
      Block* next = block->next;
      while (next && !next->free) next = next->next;
      first_free_ = next;
    }
    reinterpret_cast<BackPointer*>(payload)[-1].block = block;
    in_use_ += block->size;
    if (in_use_ > peak_) peak_ = in_use_;
    *out_ptr = reinterpret_cast<void*>(payload);
    return OkStatus();
  }
  return ResourceExhaustedError(
      "static arena cannot fit %zu bytes (capacity %zu, in use %zu)", size,
      capacity_, in_use_);
}

void StaticArenaAllocator::Free(void* ptr) {
  if (!ptr) return;
  auto* block = static_cast<Block*>(static_cast<BackPointer*>(ptr)[-1].block);
  OSPREY_DCHECK(!block->free);
  block->free = true;
  in_use_ -= block->size;
  // Merge with the free neighbours.
  if (Block* next = block->next; next && next->free) {
    block->size += sizeof(Block) + next->size;
    block->next = next->next;
    if (block->next) block->next->prev = block;
  }
  if (Block* prev = block->prev; prev && prev->free) {
    prev->size += sizeof(Block) + block->size;
    prev->next = block->next;
    if (prev->next) prev->next->prev = prev;
    block = prev;
  }
  if (!first_free_ || block < first_free_) first_free_ = block;
}

//===----------------------------------------------------------------------===//
// CountingAllocator
//===----------------------------------------------------------------------===//

Status CountingAllocator::Allocate(size_t size, size_t alignment, void** out_ptr) {
  OSPREY_RETURN_IF_ERROR(base_->Allocate(size, alignment, out_ptr));
  ++allocations_;
  return OkStatus();
}

void CountingAllocator::Free(void* ptr) {
  if (!ptr) return;
  ++frees_;
  base_->Free(ptr);
}

}  // namespace osprey
