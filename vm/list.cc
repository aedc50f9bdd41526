// vm.list implementation.
#include "vm/list.h"

#include <new>
#include <utility>

namespace osprey::vm {

namespace {
constexpr RefType kListType{"vm.list"};
}  // namespace

const RefType* List::type() { return &kListType; }

StatusOr<ref_ptr<List>> List::Create(size_t capacity, Allocator* allocator) {
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<List> list, MakeRef<List>(allocator, allocator));
  OSPREY_RETURN_IF_ERROR(list->Reserve(capacity), "creating a list of capacity %zu", capacity);
  return list;
}

List::~List() {
  for (size_t i = 0; i < size_; ++i) items_[i].~Value();
  allocator_->Free(items_);
}

Status List::Reserve(size_t capacity) {
  if (capacity <= capacity_) return OkStatus();
  if (capacity > SIZE_MAX / sizeof(Value)) {
    return ResourceExhaustedError("list capacity %zu is too large", capacity);
  }
  void* memory = nullptr;
  OSPREY_RETURN_IF_ERROR(allocator_->Allocate(capacity * sizeof(Value), alignof(Value), &memory));
  Value* items = static_cast<Value*>(memory);
  for (size_t i = 0; i < size_; ++i) {
    new (&items[i]) Value(std::move(items_[i]));
    items_[i].~Value();
  }
  allocator_->Free(items_);
  items_ = items;
  capacity_ = capacity;
  return OkStatus();
}

Status List::Resize(size_t new_size) {
  if (new_size > capacity_) {
    size_t grown = capacity_ * 2;
    OSPREY_RETURN_IF_ERROR(Reserve(new_size > grown ? new_size : grown));
  }
  for (size_t i = new_size; i < size_; ++i) items_[i].~Value();
  for (size_t i = size_; i < new_size; ++i) new (&items_[i]) Value();
  size_ = new_size;
  return OkStatus();
}

Status List::Get(size_t index, const Value** out_value) const {
  if (OSPREY_UNLIKELY(index >= size_)) {
    return OutOfRangeError("list index %zu out of range (size %zu)", index, size_);
  }
  *out_value = &items_[index];
  return OkStatus();
}

Status List::Set(size_t index, Value value) {
  if (OSPREY_UNLIKELY(index >= size_)) {
    return OutOfRangeError("list index %zu out of range (size %zu)", index, size_);
  }
  items_[index] = std::move(value);
  return OkStatus();
}

Status List::Push(Value value) {
  OSPREY_RETURN_IF_ERROR(Resize(size_ + 1));
  items_[size_ - 1] = std::move(value);
  return OkStatus();
}

}  // namespace osprey::vm
