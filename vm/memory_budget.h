// MemoryBudget: the memory bytecode may hold in one context (vm.list
// storage, vm.buffer contents), as an allocator with a byte limit.
#ifndef OSPREY_VM_MEMORY_BUDGET_H_
#define OSPREY_VM_MEMORY_BUDGET_H_

#include <atomic>
#include <cstddef>

#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"

namespace osprey::vm {

// Forwards to a base allocator while the bytes live in its allocations stay
// within |limit|; beyond it Allocate fails with RESOURCE_EXHAUSTED (naming
// the limit, the bytes in use and the request) without touching the base.
// Every live allocation retains the budget, so objects allocated from it
// may outlive the context that made them. Thread-safe if the base is.
class MemoryBudget final : public RefObject, public Allocator {
 public:
  // |base| is borrowed and must outlive every allocation. |limit| 0 means
  // no limit (the budget still counts).
  static StatusOr<ref_ptr<MemoryBudget>> Create(size_t limit, Allocator* base);

  Status Allocate(size_t size, size_t alignment, void** out_ptr) override;
  void Free(void* ptr) override;

  size_t limit() const { return limit_; }
  // Bytes requested by the live allocations (bookkeeping excluded).
  size_t bytes_in_use() const { return in_use_.load(std::memory_order_relaxed); }

  // Use Create(); public only for MakeRef.
  MemoryBudget(size_t limit, Allocator* base) : limit_(limit), base_(base) {}

 private:
  const size_t limit_;
  Allocator* const base_;
  std::atomic<size_t> in_use_{0};
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_MEMORY_BUDGET_H_
