// The objects behind the opaque handles of osprey.h, shared by the files
// that implement the C API. Not part of the public API.
#ifndef OSPREY_RUNTIME_EMBED_INTERNAL_H_
#define OSPREY_RUNTIME_EMBED_INTERNAL_H_

#include <atomic>

#include "hal/api.h"
#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"
#include "runtime/embed/osprey.h"
#include "vm/bytecode_module.h"
#include "vm/context.h"
#include "vm/instance.h"
#include "vm/module.h"

struct osprey_instance_t final : public osprey::RefObject {
  osprey::hal::DriverRegistry registry;
  osprey::ref_ptr<osprey::vm::Instance> vm_instance;  // HAL ref types registered.
  osprey::Allocator* host_allocator = nullptr;
};

struct osprey_device_t final : public osprey::RefObject {
  osprey::ref_ptr<osprey_instance_t> instance;
  osprey::ref_ptr<osprey::hal::Device> device;
};

// Modules in load order; the VM context is rebuilt on each load because
// contexts link their modules once.
struct osprey_session_t final : public osprey::RefObject {
  static constexpr size_t kMaxModules = 16;
  // Default of osprey_session_options_t.max_memory.
  static constexpr size_t kDefaultMaxMemory = size_t(64) << 20;
  ~osprey_session_t() override {
    context.reset();
    for (size_t i = module_count; i-- > 0;) modules[i]->Release();
  }
  static constexpr size_t kMaxDevices = 4;
  osprey::ref_ptr<osprey_instance_t> instance;
  // The default device: imports and module arenas use its allocator.
  osprey::ref_ptr<osprey_device_t> device;
  // Every device of the session, |device| first.
  osprey::ref_ptr<osprey_device_t> devices[kMaxDevices];
  size_t device_count = 0;
  // Native modules registered first: "hal" and "hal_inline".
  static constexpr size_t kFirstApplicationModule = 2;
  osprey::vm::Module* modules[kMaxModules] = {};  // Each retained.
  size_t module_count = 0;
  osprey::ref_ptr<osprey::vm::Context> context;
  osprey_session_options_t options = {};
  // Shared by every context the session links, so that an interrupt
  // reaches calls of functions looked up before a later load too.
  std::atomic<bool> interrupt{false};
  // Arenas the application supplied, per module index (null: none); given
  // to each new context again when the session relinks.
  osprey::ref_ptr<osprey::hal::Buffer> arenas[kMaxModules];
};

// A loaded application module of a session (always a bytecode module).
struct osprey_module_t final : public osprey::RefObject {
  osprey::ref_ptr<osprey_session_t> session;
  const osprey::vm::BytecodeModule* module = nullptr;  // Retained by |session|.
  size_t index = 0;  // In session->modules.
};

struct osprey_function_t final : public osprey::RefObject {
  osprey::ref_ptr<osprey_session_t> session;
  osprey::ref_ptr<osprey::vm::Context> context;
  osprey_session_options_t options = {};
  // Shared by every context the session links, so that an interrupt
  // reaches calls of functions looked up before a later load too.
  std::atomic<bool> interrupt{false};  // The context |function| belongs to.
  osprey::vm::Function function;
  char name[128] = {};
};

namespace osprey::embed {

// Gives every arena in |session->arenas| to the module's set_arena in
// |context| (a context of the session's modules).
Status ApplyArenas(osprey_session_t* session, vm::Context* context);

// Wraps |status| for the C API: null for OK, else a heap status the caller
// frees with osprey_status_free.
osprey_status_t* ToCStatus(Status status);

// C handles of buffer views are the HAL objects themselves.
inline osprey_buffer_view_t* ToC(hal::BufferView* view) {
  return reinterpret_cast<osprey_buffer_view_t*>(view);
}
inline hal::BufferView* FromC(osprey_buffer_view_t* view) {
  return reinterpret_cast<hal::BufferView*>(view);
}
inline const hal::BufferView* FromC(const osprey_buffer_view_t* view) {
  return reinterpret_cast<const hal::BufferView*>(view);
}

}  // namespace osprey::embed

#endif  // OSPREY_RUNTIME_EMBED_INTERNAL_H_
