// Instance and the ref type registry.
#include "vm/instance.h"

#include <cstring>

#include "vm/buffer.h"
#include "vm/list.h"

namespace osprey::vm {

StatusOr<ref_ptr<Instance>> Instance::Create(Allocator* allocator) {
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<Instance> instance, MakeRef<Instance>(allocator, allocator));
  OSPREY_RETURN_IF_ERROR(instance->RegisterRefType(List::type()));
  OSPREY_RETURN_IF_ERROR(instance->RegisterRefType(Buffer::type()));
  return instance;
}

Status Instance::RegisterRefType(const RefType* type) {
  if (!type || !type->name || !type->name[0]) {
    return InvalidArgumentError("ref type has no name");
  }
  for (size_t i = 0; i < type_count_; ++i) {
    if (types_[i] == type) return OkStatus();
    if (strcmp(types_[i]->name, type->name) == 0) {
      return AlreadyExistsError("another ref type named '%s' is already registered", type->name);
    }
  }
  if (type_count_ == kMaxRefTypes) {
    return ResourceExhaustedError("cannot register ref type '%s': limit of %zu types reached",
                                  type->name, kMaxRefTypes);
  }
  types_[type_count_++] = type;
  return OkStatus();
}

const RefType* Instance::LookupRefType(const char* name) const {
  for (size_t i = 0; i < type_count_; ++i) {
    if (strcmp(types_[i]->name, name) == 0) return types_[i];
  }
  return nullptr;
}

bool Instance::IsRegistered(const RefType* type) const {
  for (size_t i = 0; i < type_count_; ++i) {
    if (types_[i] == type) return true;
  }
  return false;
}

}  // namespace osprey::vm
