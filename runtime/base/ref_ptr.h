// Intrusive reference counting for shared runtime objects.
//
// RefObject holds an atomic count. ref_ptr<T> retains when copied, releases
// when destroyed and hands over on move. When the count reaches zero the
// object's virtual Destroy() runs; objects made with MakeRef() free
// themselves into the allocator that created them.
#ifndef OSPREY_RUNTIME_BASE_REF_PTR_H_
#define OSPREY_RUNTIME_BASE_REF_PTR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "runtime/base/allocator.h"
#include "runtime/base/status.h"

namespace osprey {

template <typename T>
class ref_ptr;
template <typename T, typename... Args>
StatusOr<ref_ptr<T>> MakeRef(Allocator* allocator, Args&&... args);

class RefObject {
 public:
  RefObject(const RefObject&) = delete;
  RefObject& operator=(const RefObject&) = delete;

  void Retain() const { ref_count_.fetch_add(1, std::memory_order_relaxed); }
  // Destroys the object when the last reference goes. Out of line: every
  // ref_ptr destructor calls it, and inlined (an atomic read-modify-write
  // loop and a virtual call) it costs far more code than a call.
  void Release() const;
  uint32_t ref_count() const { return ref_count_.load(std::memory_order_acquire); }

  // The allocator this object was created with (null if not from MakeRef).
  Allocator* host_allocator() const { return host_allocator_; }

 protected:
  RefObject() = default;
  virtual ~RefObject() = default;

  // Runs when the last reference goes away. The default destroys the object
  // and returns its memory to host_allocator().
  virtual void Destroy() {
    Allocator* allocator = host_allocator_;
    void* allocation = allocation_;
    this->~RefObject();
    if (allocator) allocator->Free(allocation);
  }

 private:
  template <typename T, typename... Args>
  friend StatusOr<ref_ptr<T>> MakeRef(Allocator* allocator, Args&&... args);

  mutable std::atomic<uint32_t> ref_count_{1};
  Allocator* host_allocator_ = nullptr;
  void* allocation_ = nullptr;  // Start of the memory MakeRef() allocated.
};

template <typename T>
class ref_ptr {
 public:
  constexpr ref_ptr() = default;
  constexpr ref_ptr(std::nullptr_t) {}  // NOLINT
  // Retains |p|.
  explicit ref_ptr(T* p) : p_(p) {
    if (p_) p_->Retain();
  }
  ref_ptr(const ref_ptr& o) : ref_ptr(o.p_) {}
  ref_ptr(ref_ptr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  ref_ptr(const ref_ptr<U>& o) : ref_ptr(o.get()) {}  // NOLINT
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  ref_ptr(ref_ptr<U>&& o) noexcept : p_(o.release()) {}  // NOLINT
  ~ref_ptr() { reset(); }

  ref_ptr& operator=(const ref_ptr& o) {
    ref_ptr(o).swap(*this);
    return *this;
  }
  ref_ptr& operator=(ref_ptr&& o) noexcept {
    ref_ptr(std::move(o)).swap(*this);
    return *this;
  }
  ref_ptr& operator=(std::nullptr_t) {
    reset();
    return *this;
  }

  // Adopts |p| without retaining (takes over the caller's reference).
  static ref_ptr Adopt(T* p) {
    ref_ptr r;
    r.p_ = p;
    return r;
  }
  // Gives up ownership without releasing; the caller owns one reference.
  T* release() {
    T* p = p_;
    p_ = nullptr;
    return p;
  }
  void reset() {
    if (p_) {
      T* p = p_;
      p_ = nullptr;
      p->Release();
    }
  }
  void swap(ref_ptr& o) { std::swap(p_, o.p_); }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool operator==(const ref_ptr& o) const { return p_ == o.p_; }
  bool operator==(std::nullptr_t) const { return p_ == nullptr; }

 private:
  T* p_ = nullptr;
};

// Creates a T (derived from RefObject) in memory from |allocator|; the object
// frees itself there when its last reference is released.
template <typename T, typename... Args>
StatusOr<ref_ptr<T>> MakeRef(Allocator* allocator, Args&&... args) {
  static_assert(std::is_base_of_v<RefObject, T>, "T must derive from RefObject");
  OSPREY_ASSIGN_OR_RETURN(T * object, allocator->New<T>(std::forward<Args>(args)...));
  static_cast<RefObject*>(object)->host_allocator_ = allocator;
  static_cast<RefObject*>(object)->allocation_ = object;
  return ref_ptr<T>::Adopt(object);
}

}  // namespace osprey

#endif  // OSPREY_RUNTIME_BASE_REF_PTR_H_
