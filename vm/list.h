// vm.list: a growable list of Values (mixed scalars and refs), the VM's
// container for argument packs, shapes and object collections.
#ifndef OSPREY_VM_LIST_H_
#define OSPREY_VM_LIST_H_

#include <cstddef>
#include <cstdint>

#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "vm/ref.h"
#include "vm/value.h"

namespace osprey::vm {

// Not thread-safe. Storage comes from the allocator passed to Create and is
// only reallocated when the list grows past its capacity.
class List final : public RefObject {
 public:
  // The registered type of every List ("vm.list").
  static const RefType* type();

  // Creates an empty list that can hold |capacity| elements without
  // reallocating. RESOURCE_EXHAUSTED when memory runs out.
  static StatusOr<ref_ptr<List>> Create(size_t capacity, Allocator* allocator);

  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }

  // Grows (new elements are kNone: read as 0 / null) or shrinks (dropped
  // refs are released). RESOURCE_EXHAUSTED if growing fails.
  Status Resize(size_t new_size);

  // Borrowed pointer to element |index|, or OUT_OF_RANGE.
  Status Get(size_t index, const Value** out_value) const;
  // Replaces element |index|; OUT_OF_RANGE if |index| >= size().
  Status Set(size_t index, Value value);
  // Appends, growing the capacity as needed.
  Status Push(Value value);

  // Use Create(); public only for MakeRef.
  explicit List(Allocator* allocator) : allocator_(allocator) {}
  ~List() override;

 private:
  Status Reserve(size_t capacity);

  Allocator* allocator_;
  Value* items_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_LIST_H_
