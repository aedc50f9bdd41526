// Host memory allocators passed explicitly to everything that allocates.
//
// Nothing in the runtime calls malloc or operator new on its own: objects
// are created with the Allocator their creator passes in, and remember it so
// they free themselves into the same place. Default() is the platform
// layer's memory (platform::AllocateMemory: mimalloc or libc on POSIX, the
// FreeRTOS heap on FreeRTOS); bare-metal applications hand in a
// StaticArenaAllocator over memory they reserve.
#ifndef OSPREY_RUNTIME_BASE_ALLOCATOR_H_
#define OSPREY_RUNTIME_BASE_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "runtime/base/status.h"

namespace osprey {

inline constexpr size_t kDefaultAlignment = 16;

class Allocator {
 public:
  virtual ~Allocator() = default;

  // Allocates |size| bytes aligned to |alignment| (a power of two).
  // Returns RESOURCE_EXHAUSTED when the memory is not there.
  // Thread-safety is up to the implementation; Default() is thread-safe.
  virtual Status Allocate(size_t size, size_t alignment, void** out_ptr) = 0;
  // Frees memory from Allocate(); null is ignored.
  virtual void Free(void* ptr) = 0;

  // Allocates zeroed memory.
  Status AllocateZeroed(size_t size, size_t alignment, void** out_ptr);

  // Constructs a T with placement new in memory from this allocator.
  // Destroy with Delete() on the same allocator.
  template <typename T, typename... Args>
  StatusOr<T*> New(Args&&... args) {
    void* memory = nullptr;
    OSPREY_RETURN_IF_ERROR(Allocate(sizeof(T), alignof(T) > kDefaultAlignment
                                                   ? alignof(T)
                                                   : kDefaultAlignment,
                                    &memory));
    return new (memory) T(std::forward<Args>(args)...);
  }
  template <typename T>
  void Delete(T* object) {
    if (!object) return;
    object->~T();
    Free(object);
  }

  // The process-wide default over platform::AllocateMemory (mimalloc or
  // libc on POSIX, the FreeRTOS heap on FreeRTOS). Borrowed; lives for the
  // whole program.
  static Allocator* Default();
};

// A first-fit allocator over caller-provided memory, for bare-metal builds
// with no heap. Freed blocks coalesce with free neighbours; Free is constant
// time and searches start at the lowest free block. Not thread-safe.
class StaticArenaAllocator final : public Allocator {
 public:
  // |memory| is borrowed and must outlive this allocator.
  StaticArenaAllocator(void* memory, size_t size);

  Status Allocate(size_t size, size_t alignment, void** out_ptr) override;
  void Free(void* ptr) override;

  size_t capacity() const { return capacity_; }
  size_t bytes_in_use() const { return in_use_; }
  size_t peak_bytes_in_use() const { return peak_; }

 private:
  struct Block;
  Block* head_ = nullptr;
  Block* first_free_ = nullptr;
  size_t capacity_ = 0;
  size_t in_use_ = 0;
  size_t peak_ = 0;
};

// An allocator that counts calls and bytes and forwards to another one;
// used by tests and tools to check for leaks and steady-state allocation.
// Thread-safe if |base| is.
class CountingAllocator final : public Allocator {
 public:
  explicit CountingAllocator(Allocator* base) : base_(base) {}
  Status Allocate(size_t size, size_t alignment, void** out_ptr) override;
  void Free(void* ptr) override;

  size_t allocations() const { return allocations_.load(); }
  size_t frees() const { return frees_.load(); }
  size_t live() const { return allocations() - frees(); }

 private:
  Allocator* base_;
  std::atomic<size_t> allocations_{0};
  std::atomic<size_t> frees_{0};
};

}  // namespace osprey

#endif  // OSPREY_RUNTIME_BASE_ALLOCATOR_H_
