// MemoryBudget: a size header before each block lets Free uncharge it.
#include "vm/memory_budget.h"

#include <cstdint>

namespace osprey::vm {

namespace {
// Stored just before each block handed out.
struct BlockHeader {
  size_t size;
  size_t offset;  // From the base allocation to the block.
};
constexpr size_t kHeaderRoom = 16;
static_assert(sizeof(BlockHeader) <= kHeaderRoom, "header must fit its room");
}  // namespace

StatusOr<ref_ptr<MemoryBudget>> MemoryBudget::Create(size_t limit, Allocator* base) {
  return MakeRef<MemoryBudget>(base, limit, base);
}

Status MemoryBudget::Allocate(size_t size, size_t alignment, void** out_ptr) {
  *out_ptr = nullptr;
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return InvalidArgumentError("alignment %zu is not a power of two", alignment);
  }
  const size_t offset = alignment > kHeaderRoom ? alignment : kHeaderRoom;
  if (size > SIZE_MAX - offset) {
    return ResourceExhaustedError("VM memory request of %zu bytes is too large", size);
  }
  // Charge first so that concurrent allocations cannot both pass the check.
  const size_t before = in_use_.fetch_add(size, std::memory_order_relaxed);
  if (limit_ != 0 && (before + size < before || before + size > limit_)) {
    in_use_.fetch_sub(size, std::memory_order_relaxed);
    return ResourceExhaustedError(
        "VM memory budget exceeded: %zu more bytes requested with %zu of %zu bytes in use", size,
        before, limit_);
  }
  void* base = nullptr;
  Status status = base_->Allocate(size + offset, offset, &base);
  if (!status.ok()) {
    in_use_.fetch_sub(size, std::memory_order_relaxed);
    return status;
  }
  uint8_t* block = static_cast<uint8_t*>(base) + offset;
  BlockHeader* header = reinterpret_cast<BlockHeader*>(block - kHeaderRoom);
  header->size = size;
  header->offset = offset;
  Retain();  // Each live block keeps the budget alive.
  *out_ptr = block;
  return OkStatus();
}

void MemoryBudget::Free(void* ptr) {
  if (!ptr) return;
  uint8_t* block = static_cast<uint8_t*>(ptr);
  const BlockHeader* header = reinterpret_cast<const BlockHeader*>(block - kHeaderRoom);
  in_use_.fetch_sub(header->size, std::memory_order_relaxed);
  base_->Free(block - header->offset);
  Release();  // May destroy the budget: nothing may follow.
}

}  // namespace osprey::vm
