// Instance: process-level VM state shared by contexts, currently the ref
// type registry.
#ifndef OSPREY_VM_INSTANCE_H_
#define OSPREY_VM_INSTANCE_H_

#include <cstddef>

#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "vm/ref.h"

namespace osprey::vm {

// Create one per application. Thread-safety: register types during start-up
// (RegisterRefType is not safe against concurrent calls); lookups are safe
// from any thread once registration is done.
class Instance final : public RefObject {
 public:
  static constexpr size_t kMaxRefTypes = 64;

  // Creates an instance with the built-in types vm.list and vm.buffer
  // registered. |allocator| is borrowed and must outlive the instance and
  // everything created from it.
  static StatusOr<ref_ptr<Instance>> Create(Allocator* allocator);

  // Registers |type| (static storage, borrowed forever). Registering the same
  // descriptor twice is a no-op. ALREADY_EXISTS if another descriptor has
  // the same name; INVALID_ARGUMENT for an empty name; RESOURCE_EXHAUSTED
  // past kMaxRefTypes.
  Status RegisterRefType(const RefType* type);
  // Returns the registered type called |name|, or null.
  const RefType* LookupRefType(const char* name) const;
  bool IsRegistered(const RefType* type) const;

  Allocator* allocator() const { return allocator_; }

  // Use Create(); public only for MakeRef.
  explicit Instance(Allocator* allocator) : allocator_(allocator) {}

 private:
  Allocator* allocator_;
  const RefType* types_[kMaxRefTypes] = {};
  size_t type_count_ = 0;
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_INSTANCE_H_
