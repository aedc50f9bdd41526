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

// Blocks tile the arena in address order. Each allocation's header sits just
// before the returned pointer so Free() can find it.
struct StaticArenaAllocator::Block {
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
  head_->next = nullptr;
  head_->size = end - begin - sizeof(Block);
  head_->free = true;
  capacity_ = head_->size;
}

Status StaticArenaAllocator::Allocate(size_t size, size_t alignment, void** out_ptr) {
  *out_ptr = nullptr;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return InvalidArgumentError("alignment %zu is not a power of two", alignment);
  }
  if (alignment < alignof(BackPointer)) alignment = alignof(BackPointer);
  for (Block* block = head_; block; block = block->next) {
    if (!block->free) continue;
    uintptr_t data_begin = reinterpret_cast<uintptr_t>(block + 1);
    uintptr_t payload = AlignUp(data_begin + sizeof(BackPointer), alignment);
    uintptr_t data_end = data_begin + block->size;
    if (payload + size > data_end || payload + size < payload) continue;
    // Split off the tail when it can hold another block.
    uintptr_t tail = AlignUp(payload + size, kHeaderAlign);
    if (tail + sizeof(Block) + kHeaderAlign <= data_end) {
      auto* rest = reinterpret_cast<Block*>(tail);
      rest->next = block->next;
      rest->size = data_end - tail - sizeof(Block);
      rest->free = true;
      block->next = rest;
      block->size = tail - data_begin;
    }
    block->free = false;
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
  // Coalesce every run of free blocks (the list is short on embedded builds).
  for (Block* b = head_; b; b = b->next) {
    while (b->free && b->next && b->next->free) {
      b->size += sizeof(Block) + b->next->size;
      b->next = b->next->next;
    }
  }
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
