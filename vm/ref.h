// VM references: a ref-counted object paired with its registered type.
//
// Any osprey::RefObject (a HAL buffer, a vm::List, ...) can live in a VM ref
// register. The VM has no RTTI, so every ref carries a pointer to a static
// RefType descriptor; code that needs a concrete type compares descriptors
// (see Ref::As) and fails with INVALID_ARGUMENT on a mismatch.
#ifndef OSPREY_VM_REF_H_
#define OSPREY_VM_REF_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"

namespace osprey::vm {

// Identity of a ref type. Define one as a constant with static storage
// duration (e.g. `inline constexpr RefType kBufferType{"hal.buffer"};`) and
// register it with Instance::RegisterRefType. Compared by address.
struct RefType {
  const char* name;  // "module.type", e.g. "hal.buffer_view".
};

// An owning handle: copying retains, destruction releases. A null Ref has
// no object and no type. Not thread-safe (like ref_ptr).
class Ref {
 public:
  constexpr Ref() = default;
  // Retains |object| (may be null, then |type| is dropped).
  Ref(RefObject* object, const RefType* type) : ptr_(object), type_(object ? type : nullptr) {
    if (ptr_) ptr_->Retain();
  }
  // Takes over the caller's reference to |object|.
  static Ref Adopt(RefObject* object, const RefType* type) {
    Ref r;
    r.ptr_ = object;
    r.type_ = object ? type : nullptr;
    return r;
  }
  template <typename T>
  static Ref FromRefPtr(ref_ptr<T> object, const RefType* type) {
    return Adopt(object.release(), type);
  }

  Ref(const Ref& o) : Ref(o.ptr_, o.type_) {}
  Ref(Ref&& o) noexcept : ptr_(o.ptr_), type_(o.type_) {
    o.ptr_ = nullptr;
    o.type_ = nullptr;
  }
  Ref& operator=(const Ref& o) {
    if (o.ptr_) o.ptr_->Retain();
    RefObject* old = ptr_;
    ptr_ = o.ptr_;
    type_ = o.type_;
    if (old) old->Release();
    return *this;
  }
  Ref& operator=(Ref&& o) noexcept {
    if (this != &o) {
      RefObject* old = ptr_;
      ptr_ = o.ptr_;
      type_ = o.type_;
      o.ptr_ = nullptr;
      o.type_ = nullptr;
      if (old) old->Release();
    }
    return *this;
  }
  ~Ref() { reset(); }

  void reset() {
    if (ptr_) {
      RefObject* old = ptr_;
      ptr_ = nullptr;
      type_ = nullptr;
      old->Release();
    }
  }
  // Gives up ownership; the caller owns one reference to the result.
  RefObject* release() {
    RefObject* p = ptr_;
    ptr_ = nullptr;
    type_ = nullptr;
    return p;
  }

  RefObject* get() const { return ptr_; }
  const RefType* type() const { return type_; }
  bool is_null() const { return ptr_ == nullptr; }
  explicit operator bool() const { return ptr_ != nullptr; }
  bool operator==(const Ref& o) const { return ptr_ == o.ptr_; }

  // Returns the object as T if its type is |type|, else null. Borrowed.
  template <typename T>
  T* As(const RefType* type) const {
    return type_ == type ? static_cast<T*>(ptr_) : nullptr;
  }

 private:
  RefObject* ptr_ = nullptr;
  const RefType* type_ = nullptr;
};

// Returns |ref| as a T of |type|, or INVALID_ARGUMENT naming |what| (e.g.
// "argument 2") when the ref is null or of another type.
template <typename T>
Status CheckRefType(const Ref& ref, const RefType* type, const char* what, T** out) {
  if (OSPREY_UNLIKELY(ref.is_null())) {
    return InvalidArgumentError("%s: expected a '%s' ref, got null", what, type->name);
  }
  if (OSPREY_UNLIKELY(ref.type() != type)) {
    return InvalidArgumentError("%s: expected a '%s' ref, got '%s'", what, type->name,
                                ref.type() ? ref.type()->name : "(untyped)");
  }
  *out = static_cast<T*>(ref.get());
  return OkStatus();
}

}  // namespace osprey::vm

#endif  // OSPREY_VM_REF_H_
