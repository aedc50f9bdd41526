// The "hal" native VM module: HAL devices, allocators, buffers, buffer
// views, command buffers, executables and semaphores exposed to bytecode;
// and "hal_inline", a smaller synchronous subset.
//
// Bytecode imports functions as "hal.<name>" (e.g. "hal.allocator.allocate");
// README.md lists every function with its signature and errors. Each
// context gets its own state: the device the module was created for, an
// executable cache and the executables prepared from the calling modules'
// executable tables (prepared once per context, then reused).
#ifndef OSPREY_RUNTIME_MODULES_HAL_HAL_MODULE_H_
#define OSPREY_RUNTIME_MODULES_HAL_HAL_MODULE_H_

#include <span>

#include "hal/api.h"
#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"
#include "vm/instance.h"
#include "vm/native_module.h"
#include "vm/ref.h"

namespace osprey::modules::hal {

//===----------------------------------------------------------------------===//
// Ref types
//===----------------------------------------------------------------------===//

// The VM ref types of HAL objects. Register them once per vm::Instance with
// RegisterTypes() before creating contexts that use the module.
extern const vm::RefType kDeviceType;         // "hal.device"
extern const vm::RefType kAllocatorType;      // "hal.allocator"
extern const vm::RefType kBufferType;         // "hal.buffer"
extern const vm::RefType kBufferViewType;     // "hal.buffer_view"
extern const vm::RefType kCommandBufferType;  // "hal.command_buffer"
extern const vm::RefType kExecutableType;     // "hal.executable"
extern const vm::RefType kSemaphoreType;      // "hal.semaphore"

// Registers every HAL ref type with |instance|. Idempotent.
Status RegisterTypes(vm::Instance* instance);

// Wraps HAL objects as VM refs (retained) for arguments and results.
vm::Ref WrapBufferView(::osprey::hal::BufferView* view);
vm::Ref WrapBuffer(::osprey::hal::Buffer* buffer);

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

// Largest number of bindings and push constants of one dispatch call (kept
// on the stack: dispatch recording allocates nothing).
inline constexpr size_t kMaxDispatchBindings = 32;
inline constexpr size_t kMaxDispatchConstants = 64;
// Largest number of devices one module (one session) drives.
inline constexpr size_t kMaxModuleDevices = 4;

// Creates the module bound to |device| (retained by the module). Every
// context the module is registered with uses this device. |allocator| is
// borrowed and must outlive the module.
StatusOr<ref_ptr<vm::Module>> CreateModule(ref_ptr<::osprey::hal::Device> device,
                                           Allocator* allocator);
// Creates the module bound to 1..kMaxModuleDevices distinct |devices|: the
// first is the default ("hal.device"); bytecode reaches the others with
// hal.devices.get / hal.devices.select and may use any of them wherever a
// device argument is taken (executables are prepared and cached per device).
StatusOr<ref_ptr<vm::Module>> CreateModule(
    std::span<const ref_ptr<::osprey::hal::Device>> devices, Allocator* allocator);

// The function table (for tools that list module functions).
std::span<const vm::NativeFunction> ModuleFunctions();

// Creates the "hal_inline" module: the small subset for programs that run
// each dispatch to completion before the next, with no command buffers or
// semaphores in bytecode. buffer.allocate takes only a length (host-local,
// device-visible, default usage); dispatch records, submits and waits in
// one call; buffer views, executables and queries are as in "hal". Each
// context keeps its own state, like "hal".
StatusOr<ref_ptr<vm::Module>> CreateInlineModule(ref_ptr<::osprey::hal::Device> device,
                                                 Allocator* allocator);
std::span<const vm::NativeFunction> InlineModuleFunctions();

}  // namespace osprey::modules::hal

#endif  // OSPREY_RUNTIME_MODULES_HAL_HAL_MODULE_H_
