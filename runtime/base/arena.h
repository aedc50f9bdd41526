// Arena: bump allocation of short-lived scratch (per submission, per call)
// from blocks of a parent allocator, all released in one Reset().
#ifndef OSPREY_RUNTIME_BASE_ARENA_H_
#define OSPREY_RUNTIME_BASE_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "runtime/base/allocator.h"

namespace osprey {

// Not thread-safe. Blocks are kept across Reset() so steady-state use
// allocates nothing from the parent.
class Arena {
 public:
  // |parent| is borrowed and must outlive the arena.
  explicit Arena(Allocator* parent, size_t block_size = 4096)
      : parent_(parent), block_size_(block_size) {}
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  Status Allocate(size_t size, size_t alignment, void** out_ptr);

  template <typename T, typename... Args>
  StatusOr<T*> New(Args&&... args) {
    void* memory = nullptr;
    OSPREY_RETURN_IF_ERROR(Allocate(sizeof(T), alignof(T), &memory));
    return new (memory) T(std::forward<Args>(args)...);
  }
  template <typename T>
  StatusOr<T*> NewArray(size_t count) {
    void* memory = nullptr;
    if (count > SIZE_MAX / sizeof(T)) {
      return ResourceExhaustedError("arena array of %zu elements overflows", count);
    }
    OSPREY_RETURN_IF_ERROR(Allocate(sizeof(T) * count, alignof(T), &memory));
    T* items = static_cast<T*>(memory);
    for (size_t i = 0; i < count; ++i) new (&items[i]) T();
    return items;
  }

  // Releases everything allocated since the last Reset(). Destructors of
  // objects placed in the arena are not run: keep them trivial.
  void Reset();

  size_t bytes_allocated() const { return bytes_allocated_; }

 private:
  struct Block {
    Block* next;
    size_t capacity;
  };
  Allocator* parent_;
  size_t block_size_;
  Block* used_ = nullptr;   // Blocks holding live data; head is current.
  Block* spare_ = nullptr;  // Blocks kept from earlier Reset()s.
  size_t offset_ = 0;       // Into the current block's data.
  size_t bytes_allocated_ = 0;
};

}  // namespace osprey

#endif  // OSPREY_RUNTIME_BASE_ARENA_H_
