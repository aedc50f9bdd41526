// Thin C++ wrapper over osprey.h: RAII handles and a move-only Status.
//
// Every class owns one reference to its C object and releases it on
// destruction; copies retain. Nothing here throws or allocates beyond what
// the C API does, so it is usable in exception-free embedded C++ too. The
// thread-safety rules of osprey.h apply unchanged.
//
//   osprey::embed::Instance instance;
//   osprey::embed::Status status = osprey::embed::Instance::Create(&instance);
//   if (!status.ok()) fprintf(stderr, "%s\n", status.message());
#ifndef OSPREY_RUNTIME_EMBED_OSPREY_HPP_
#define OSPREY_RUNTIME_EMBED_OSPREY_HPP_

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "runtime/embed/osprey.h"

namespace osprey::embed {

// Owns an osprey_status_t* (null = OK). Move-only.
class [[nodiscard]] Status {
 public:
  Status() = default;
  explicit Status(osprey_status_t* status) : status_(status) {}
  Status(Status&& other) noexcept : status_(std::exchange(other.status_, nullptr)) {}
  Status& operator=(Status&& other) noexcept {
    if (this != &other) {
      osprey_status_free(status_);
      status_ = std::exchange(other.status_, nullptr);
    }
    return *this;
  }
  Status(const Status&) = delete;
  Status& operator=(const Status&) = delete;
  ~Status() { osprey_status_free(status_); }

  bool ok() const { return status_ == nullptr; }
  osprey_status_code_t code() const { return osprey_status_code(status_); }
  // "CODE: message"; "OK" when ok(). Valid while this Status lives.
  const char* message() const { return osprey_status_message(status_); }

 private:
  osprey_status_t* status_ = nullptr;
};

// Shared implementation of the handle classes: retain on copy, release on
// destruction.
template <typename T, void (*RetainFn)(T*), void (*ReleaseFn)(T*)>
class Handle {
 public:
  Handle() = default;
  // Takes over one reference to |handle|.
  explicit Handle(T* handle) : handle_(handle) {}
  Handle(const Handle& other) : handle_(other.handle_) {
    if (handle_) RetainFn(handle_);
  }
  Handle(Handle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Handle& operator=(Handle other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~Handle() {
    if (handle_) ReleaseFn(handle_);
  }

  T* get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  // Gives up the reference; the caller releases it.
  T* release() { return std::exchange(handle_, nullptr); }

 protected:
  // Releases the current handle and returns the slot for a C call to fill.
  T** reset_and_get_address() {
    if (handle_) ReleaseFn(std::exchange(handle_, nullptr));
    return &handle_;
  }

 private:
  T* handle_ = nullptr;
};

class Instance : public Handle<osprey_instance_t, osprey_instance_retain, osprey_instance_release> {
 public:
  using Handle::Handle;
  static Status Create(Instance* out) {
    return Status(osprey_instance_create(out->reset_and_get_address()));
  }
  // |allocator| must outlive everything created from the instance.
  static Status CreateWithAllocator(osprey_allocator_t* allocator, Instance* out) {
    return Status(
        osprey_instance_create_with_allocator(allocator, out->reset_and_get_address()));
  }
  size_t driver_count() const { return osprey_instance_driver_count(get()); }
  const char* driver_name(size_t i) const { return osprey_instance_driver_name(get(), i); }
};

class Device : public Handle<osprey_device_t, osprey_device_retain, osprey_device_release> {
 public:
  using Handle::Handle;
  static Status Create(const Instance& instance, const char* name,
                       std::span<const osprey_device_param_t> params, Device* out) {
    return Status(osprey_device_create(instance.get(), name, params.data(), params.size(),
                                       out->reset_and_get_address()));
  }
  const char* name() const { return osprey_device_name(get()); }
  // See osprey_device_query_i64.
  Status QueryI64(const char* key, int64_t* out_value) const {
    return Status(osprey_device_query_i64(get(), key, out_value));
  }
};

class BufferView
    : public Handle<osprey_buffer_view_t, osprey_buffer_view_retain, osprey_buffer_view_release> {
 public:
  using Handle::Handle;
  // Copies |data| into new device memory.
  static Status Create(const Device& device, std::span<const int64_t> shape,
                       osprey_element_type_t type, const void* data, size_t byte_length,
                       BufferView* out) {
    return Status(osprey_buffer_view_create(device.get(), shape.data(), shape.size(), type, data,
                                            byte_length, out->reset_and_get_address()));
  }
  // Wraps |data| without copying; see osprey_buffer_view_wrap.
  static Status Wrap(const Device& device, std::span<const int64_t> shape,
                     osprey_element_type_t type, void* data, size_t byte_length,
                     osprey_release_fn_t release, void* user_data, BufferView* out) {
    return Status(osprey_buffer_view_wrap(device.get(), shape.data(), shape.size(), type, data,
                                          byte_length, release, user_data,
                                          out->reset_and_get_address()));
  }

  size_t rank() const { return osprey_buffer_view_rank(get()); }
  int64_t dim(size_t i) const { return osprey_buffer_view_dim(get(), i); }
  osprey_element_type_t element_type() const { return osprey_buffer_view_element_type(get()); }
  int64_t element_count() const { return osprey_buffer_view_element_count(get()); }
  size_t byte_length() const { return osprey_buffer_view_byte_length(get()); }
  size_t FormatShape(char* buffer, size_t capacity) const {
    return osprey_buffer_view_format_shape(get(), buffer, capacity);
  }
  Status Read(void* data, size_t capacity) const {
    return Status(osprey_buffer_view_read(get(), data, capacity));
  }
};

class Function
    : public Handle<osprey_function_t, osprey_function_retain, osprey_function_release> {
 public:
  using Handle::Handle;
  const char* name() const { return osprey_function_name(get()); }
  const char* signature() const { return osprey_function_signature(get()); }
  size_t input_count() const { return osprey_function_input_count(get()); }
  size_t output_count() const { return osprey_function_output_count(get()); }

  // Calls with tensor inputs; fills |outputs| (each slot receives one
  // reference) and sets |*out_count|.
  Status Call(std::span<const BufferView> inputs, std::span<BufferView> outputs,
              size_t* out_count) const {
    constexpr size_t kMax = 32;
    osprey_buffer_view_t* in[kMax];
    osprey_buffer_view_t* out[kMax];
    if (inputs.size() > kMax || outputs.size() > kMax) {
      return Status(osprey_function_call(get(), nullptr, inputs.size(), nullptr, 0, out_count));
    }
    for (size_t i = 0; i < inputs.size(); ++i) in[i] = inputs[i].get();
    size_t count = 0;
    Status status(osprey_function_call(get(), in, inputs.size(), out, outputs.size(), &count));
    if (status.ok()) {
      for (size_t i = 0; i < count; ++i) outputs[i] = BufferView(out[i]);
    }
    if (out_count) *out_count = status.ok() ? count : 0;
    return status;
  }
};

class Module : public Handle<osprey_module_t, osprey_module_retain, osprey_module_release> {
 public:
  using Handle::Handle;
  const char* name() const { return osprey_module_name(get()); }
  // See osprey_module_lookup_attribute; |*out_value| is owned by the module.
  Status LookupAttribute(const char* key, const char** out_value) const {
    return Status(osprey_module_lookup_attribute(get(), key, out_value));
  }
  Status ArenaRequirement(size_t* out_size, size_t* out_alignment) const {
    return Status(osprey_module_arena_requirement(get(), out_size, out_alignment));
  }
  // See osprey_module_set_arena.
  Status SetArena(void* memory, size_t size, osprey_release_fn_t release = nullptr,
                  void* user_data = nullptr) {
    return Status(osprey_module_set_arena(get(), memory, size, release, user_data));
  }
};

class Session : public Handle<osprey_session_t, osprey_session_retain, osprey_session_release> {
 public:
  using Handle::Handle;
  static Status Create(const Instance& instance, const Device& device, Session* out) {
    return Status(
        osprey_session_create(instance.get(), device.get(), out->reset_and_get_address()));
  }
  // See osprey_session_options_t; start from Options() (the defaults).
  static osprey_session_options_t Options() {
    osprey_session_options_t options;
    osprey_session_options_init(&options);
    return options;
  }
  static Status Create(const Instance& instance, const Device& device,
                       const osprey_session_options_t& options, Session* out) {
    return Status(osprey_session_create_with_options(instance.get(), device.get(), &options,
                                                     out->reset_and_get_address()));
  }
  // Several devices, the first the default; see
  // osprey_session_create_with_devices.
  static Status Create(const Instance& instance, std::span<const Device> devices,
                       const osprey_session_options_t& options, Session* out) {
    // More than four is refused by the C API before it reads |handles|.
    osprey_device_t* handles[4] = {};
    for (size_t i = 0; i < devices.size() && i < 4; ++i) handles[i] = devices[i].get();
    return Status(osprey_session_create_with_devices(instance.get(), handles, devices.size(),
                                                     &options, out->reset_and_get_address()));
  }
  // Thread-safe; see osprey_session_interrupt.
  void Interrupt() { osprey_session_interrupt(get()); }
  Status LoadModuleFile(const char* path) {
    return Status(osprey_session_load_module_file(get(), path));
  }
  Status LoadModuleMemory(const void* data, size_t size, osprey_release_fn_t release = nullptr,
                          void* user_data = nullptr) {
    return Status(osprey_session_load_module_memory(get(), data, size, release, user_data));
  }
  // |name| null: the most recently loaded module.
  Status LookupModule(const char* name, Module* out) {
    osprey_module_t* handle = nullptr;
    Status status(osprey_session_lookup_module(get(), name, &handle));
    if (status.ok()) *out = Module(handle);
    return status;
  }
  Status LookupFunction(const char* name, Function* out) {
    osprey_function_t* handle = nullptr;
    Status status(osprey_session_lookup_function(get(), name, &handle));
    if (status.ok()) *out = Function(handle);
    return status;
  }
};

}  // namespace osprey::embed

#endif  // OSPREY_RUNTIME_EMBED_OSPREY_HPP_
