// C API: sessions (VM context + HAL module + loaded modules), function
// lookup and calls.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <utility>

#include "runtime/embed/file_mapping.h"
#include "runtime/embed/internal.h"
#include "runtime/embed/osprey.h"
#include "runtime/modules/hal/hal_module.h"
#include "vm/bytecode_module.h"
#include "vm/opcodes.h"
#include "vm/value.h"

using osprey::Allocator;
using osprey::MakeRef;
using osprey::ref_ptr;
using osprey::Status;
using osprey::StatusOr;
using osprey::embed::FromC;
using osprey::embed::ToC;
using osprey::embed::ToCStatus;
namespace hal = osprey::hal;
namespace vm = osprey::vm;
namespace hal_module = osprey::modules::hal;

namespace {

// Keeps caller memory passed to osprey_session_load_module_memory alive and
// runs the caller's release callback when the module no longer needs it.
class ReleaseOwner final : public osprey::RefObject {
 public:
  ReleaseOwner(osprey_release_fn_t release, void* user_data, const void* data)
      : release_(release), user_data_(user_data), data_(data) {}
  ~ReleaseOwner() override {
    if (release_) release_(user_data_, const_cast<void*>(data_));
  }

 private:
  osprey_release_fn_t release_;
  void* user_data_;
  const void* data_;
};

// Links the session's modules into a new context, replacing the old one
// only if linking succeeds.
Status Relink(osprey_session_t* session) {
  vm::ContextOptions options;
  options.stack_size = session->options.vm_stack_size;
  options.max_memory = session->options.max_memory;
  options.max_instructions = session->options.max_instructions;
  options.timeout_ns = session->options.timeout_ns > uint64_t(INT64_MAX)
                           ? INT64_MAX
                           : int64_t(session->options.timeout_ns);
  options.interrupt = &session->interrupt;
  OSPREY_ASSIGN_OR_RETURN(
      auto context,
      vm::Context::Create(session->instance->vm_instance.get(),
                          std::span<vm::Module* const>(session->modules, session->module_count),
                          options, session->instance->host_allocator));
  OSPREY_RETURN_IF_ERROR(osprey::embed::ApplyArenas(session, context.get()),
                         "giving the application's arenas to the relinked context");
  session->context = std::move(context);
  return osprey::OkStatus();
}

Status AddModule(osprey_session_t* session, ref_ptr<vm::Module> module) {
  if (session->module_count == osprey_session_t::kMaxModules) {
    return osprey::ResourceExhaustedError("a session holds at most %zu modules",
                                          osprey_session_t::kMaxModules);
  }
  session->modules[session->module_count++] = module.release();
  Status status = Relink(session);
  if (!status.ok()) {
    // Leave the session as it was.
    session->modules[--session->module_count]->Release();
    return status;
  }
  return osprey::OkStatus();
}

// Refuses a module none of whose executables any of the session's devices
// can run (compiled for another CPU, or only for an accelerator the session
// does not have), at load instead of at its first call. Modules with
// variants for several devices load if one of them fits one device.
Status CheckExecutablesRunnable(osprey_session_t* session, const vm::BytecodeModule& module) {
  const uint32_t count = module.executable_count();
  if (count == 0) return osprey::OkStatus();
  for (size_t d = 0; d < session->device_count; ++d) {
    hal::Device* device = session->devices[d]->device.get();
    OSPREY_ASSIGN_OR_RETURN(auto cache, device->CreateExecutableCache(),
                            "creating the executable cache of device '%s'", device->id());
    for (uint32_t i = 0; i < count; ++i) {
      if (cache->CanPrepareFormat(module.executable(i).format)) return osprey::OkStatus();
    }
  }
  char formats[128] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < count && used < sizeof(formats); ++i) {
    int n = snprintf(formats + used, sizeof(formats) - used, "%s%s", i ? ", " : "",
                     module.executable(i).format);
    if (n > 0) used += size_t(n);
  }
  return osprey::UnimplementedError(
      "no device of the session (%zu, the first '%s') can run any of the %u executable(s) of "
      "module '%s' (formats: %s); it was compiled for another target or needs a device the "
      "session does not have",
      session->device_count, session->device->device->id(), unsigned(count), module.name(),
      formats);
}

Status LoadModule(osprey_session_t* session, std::span<const uint8_t> bytes,
                  ref_ptr<osprey::RefObject> owner) {
  vm::LoadOptions options;
  options.integrity = vm::IntegrityCheck(session->options.integrity_check);
  OSPREY_ASSIGN_OR_RETURN(auto module,
                          vm::BytecodeModule::Load(bytes, std::move(owner),
                                                   session->instance->host_allocator, options));
  OSPREY_RETURN_IF_ERROR(CheckExecutablesRunnable(session, *module));
  // AddModule releases the module when linking fails, and with it the
  // module's bytes (unmapped or handed back to the application): the name
  // in the context line must be a copy.
  char name[vm::kMaxModuleNameLength + 1];
  snprintf(name, sizeof(name), "%s", module->name());
  OSPREY_RETURN_IF_ERROR(AddModule(session, ref_ptr<vm::Module>(std::move(module))),
                         "linking module '%s'", name);
  return osprey::OkStatus();
}

// Copies "module.function" into |out|.
void FormatFunctionName(const vm::Function& function, char* out, size_t capacity) {
  snprintf(out, capacity, "%s.%s", function.module_name(), function.name());
}

// Writes the exports of |module| as "a, b, c" for NOT_FOUND messages.
void ListExports(const vm::Module* module, char* out, size_t capacity) {
  size_t used = 0;
  out[0] = '\0';
  for (uint32_t i = 0; i < module->export_count() && used < capacity; ++i) {
    int n = snprintf(out + used, capacity - used, "%s%s", i ? ", " : "",
                     module->export_info(i).name);
    if (n > 0) used += size_t(n);
  }
}

StatusOr<vm::Function> Lookup(osprey_session_t* session, const char* name) {
  if (!session->context || session->module_count <= osprey_session_t::kFirstApplicationModule) {
    return osprey::FailedPreconditionError(
        "no module is loaded in the session (looking up '%s')", name);
  }
  if (strchr(name, '.')) return session->context->LookupFunction(name);
  // Bare name: most recently loaded application module first.
  for (size_t i = session->module_count; i-- > osprey_session_t::kFirstApplicationModule;) {
    auto function = session->context->LookupFunction(session->modules[i]->name(), name);
    if (function.ok()) return function;
  }
  char exports[256];
  const vm::Module* last = session->modules[session->module_count - 1];
  ListExports(last, exports, sizeof(exports));
  return osprey::NotFoundError("no function '%s' in the loaded modules; module '%s' exports: %s",
                               name, last->name(), exports);
}

const char* ExpectedValueName(char type) {
  switch (type) {
    case 'i': return "an i32";
    case 'I': return "an i64";
    case 'f': return "an f32";
    case 'F': return "an f64";
    default: return "a non-null buffer view";
  }
}

Status CallValues(osprey_function_t* function, const osprey_value_t* inputs, size_t input_count,
                  osprey_value_t* outputs, size_t output_capacity, size_t* out_output_count) {
  const vm::Signature& signature = function->function.signature();
  if (input_count != signature.arg_count) {
    return osprey::InvalidArgumentError("takes %u inputs, got %zu", unsigned(signature.arg_count),
                                        input_count);
  }
  if (input_count > 0 && !inputs) {
    return osprey::InvalidArgumentError("%zu inputs but inputs is null", input_count);
  }
  if (output_capacity < signature.result_count) {
    return osprey::InvalidArgumentError("returns %u outputs but room was given for %zu",
                                        unsigned(signature.result_count), output_capacity);
  }
  vm::Value args[vm::kMaxSignatureValues];
  vm::Value results[vm::kMaxSignatureValues];
  for (size_t k = 0; k < input_count; ++k) {
    const char type = signature.args[k];
    const osprey_value_t& input = inputs[k];
    bool match = true;
    switch (type) {
      case 'i':
        match = input.type == OSPREY_VALUE_TYPE_I32;
        args[k] = vm::Value::I32(input.u.i32);
        break;
      case 'I':
        match = input.type == OSPREY_VALUE_TYPE_I64;
        args[k] = vm::Value::I64(input.u.i64);
        break;
      case 'f':
        match = input.type == OSPREY_VALUE_TYPE_F32;
        args[k] = vm::Value::F32(input.u.f32);
        break;
      case 'F':
        match = input.type == OSPREY_VALUE_TYPE_F64;
        args[k] = vm::Value::F64(input.u.f64);
        break;
      default:
        match = input.type == OSPREY_VALUE_TYPE_BUFFER_VIEW && input.u.buffer_view;
        if (match) {
          args[k] = vm::Value::FromRef(hal_module::WrapBufferView(FromC(input.u.buffer_view)));
        }
        break;
    }
    if (!match) {
      return osprey::InvalidArgumentError(
          "input %zu must be %s (signature '%s')", k, ExpectedValueName(type),
          function->function.signature_text());
    }
  }
  Status invoked = function->context->Invoke(
      function->function, std::span<const vm::Value>(args, input_count),
      std::span<vm::Value>(results, signature.result_count));
  if (!invoked.ok()) {
    // A compiled module drops its arena when a call fails after taking it;
    // hand the application's arenas back so the next call does not
    // allocate one. Only the session's current context has every module.
    osprey_session_t* session = function->session.get();
    if (function->context.get() == session->context.get()) {
      Status restored = osprey::embed::ApplyArenas(session, session->context.get());
      if (!restored.ok()) {
        invoked.Annotate("restoring the application's arenas afterwards also failed: %s",
                         restored.message());
      }
    }
    return invoked;
  }
  // Check every result before handing any out so a failure leaks nothing.
  for (size_t k = 0; k < signature.result_count; ++k) {
    if (signature.results[k] != 'r') continue;
    const vm::Ref& ref = results[k].ref;
    if (!ref.is_null() && !ref.As<hal::BufferView>(&hal_module::kBufferViewType)) {
      return osprey::UnimplementedError(
          "output %zu is a '%s' ref; only buffer views can be returned to the application", k,
          ref.type() ? ref.type()->name : "(untyped)");
    }
  }
  for (size_t k = 0; k < signature.result_count; ++k) {
    osprey_value_t& output = outputs[k];
    switch (signature.results[k]) {
      case 'i': output.type = OSPREY_VALUE_TYPE_I32; output.u.i32 = results[k].i32; break;
      case 'I': output.type = OSPREY_VALUE_TYPE_I64; output.u.i64 = results[k].i64; break;
      case 'f': output.type = OSPREY_VALUE_TYPE_F32; output.u.f32 = results[k].f32; break;
      case 'F': output.type = OSPREY_VALUE_TYPE_F64; output.u.f64 = results[k].f64; break;
      default:
        output.type = OSPREY_VALUE_TYPE_BUFFER_VIEW;
        output.u.buffer_view = ToC(static_cast<hal::BufferView*>(results[k].ref.release()));
        break;
    }
  }
  *out_output_count = signature.result_count;
  return osprey::OkStatus();
}

}  // namespace

extern "C" {

void osprey_session_options_init(osprey_session_options_t* options) {
  if (!options) return;
  *options = osprey_session_options_t{};
  options->vm_stack_size = vm::ContextOptions().stack_size;
  options->max_memory = osprey_session_t::kDefaultMaxMemory;
}

osprey_status_t* osprey_session_create(osprey_instance_t* instance, osprey_device_t* device,
                                       osprey_session_t** out_session) {
  return osprey_session_create_with_options(instance, device, nullptr, out_session);
}

osprey_status_t* osprey_session_create_with_options(osprey_instance_t* instance,
                                                    osprey_device_t* device,
                                                    const osprey_session_options_t* options,
                                                    osprey_session_t** out_session) {
  return osprey_session_create_with_devices(instance, &device, device ? 1 : 0, options,
                                            out_session);
}

osprey_status_t* osprey_session_create_with_devices(osprey_instance_t* instance,
                                                    osprey_device_t* const* devices,
                                                    size_t device_count,
                                                    const osprey_session_options_t* options,
                                                    osprey_session_t** out_session) {
  if (!out_session) return ToCStatus(osprey::InvalidArgumentError("out_session is null"));
  *out_session = nullptr;
  if (!instance || !devices || device_count == 0) {
    return ToCStatus(osprey::InvalidArgumentError("instance and device are required"));
  }
  if (device_count > osprey_session_t::kMaxDevices) {
    return ToCStatus(osprey::InvalidArgumentError("a session takes at most %zu devices, got %zu",
                                                  osprey_session_t::kMaxDevices, device_count));
  }
  ref_ptr<hal::Device> hal_devices[osprey_session_t::kMaxDevices];
  for (size_t i = 0; i < device_count; ++i) {
    if (!devices[i]) {
      return ToCStatus(osprey::InvalidArgumentError("device %zu is null", i));
    }
    if (devices[i]->instance.get() != instance) {
      return ToCStatus(osprey::InvalidArgumentError(
          "device %zu ('%s') was created from another instance", i, devices[i]->device->id()));
    }
    hal_devices[i] = devices[i]->device;
  }
  osprey_session_options_t defaults;
  osprey_session_options_init(&defaults);
  if (!options) options = &defaults;
  if (unsigned(options->integrity_check) > unsigned(OSPREY_INTEGRITY_CHECK_NONE)) {
    return ToCStatus(osprey::InvalidArgumentError("integrity check %d is not one of "
                                                  "OSPREY_INTEGRITY_CHECK_*",
                                                  int(options->integrity_check)));
  }
  if (options->vm_stack_size < 1024) {
    return ToCStatus(osprey::InvalidArgumentError(
        "VM stack size %zu is too small (minimum 1024 bytes)", options->vm_stack_size));
  }
  auto session = MakeRef<osprey_session_t>(instance->host_allocator);
  if (!session.ok()) return ToCStatus(std::move(session).status());
  (*session)->options = *options;
  (*session)->instance = ref_ptr<osprey_instance_t>(instance);
  (*session)->device = ref_ptr<osprey_device_t>(devices[0]);
  for (size_t i = 0; i < device_count; ++i) {
    (*session)->devices[i] = ref_ptr<osprey_device_t>(devices[i]);
  }
  (*session)->device_count = device_count;
  auto module = hal_module::CreateModule(
      std::span<const ref_ptr<hal::Device>>(hal_devices, device_count), instance->host_allocator);
  if (!module.ok()) return ToCStatus(std::move(module).status().Annotate("creating hal module"));
  auto inline_module = hal_module::CreateInlineModule(hal_devices[0], instance->host_allocator);
  if (!inline_module.ok()) {
    return ToCStatus(std::move(inline_module).status().Annotate("creating hal_inline module"));
  }
  // Linked once, with both native modules in place.
  (*session)->modules[(*session)->module_count++] = module->release();
  Status status = AddModule(session->get(), std::move(*inline_module));
  if (!status.ok()) return ToCStatus(std::move(status).Annotate("creating session"));
  *out_session = session->release();
  return nullptr;
}

void osprey_session_interrupt(osprey_session_t* session) {
  if (session) session->interrupt.store(true, std::memory_order_relaxed);
}

void osprey_session_retain(osprey_session_t* session) {
  if (session) session->Retain();
}
void osprey_session_release(osprey_session_t* session) {
  if (session) session->Release();
}

osprey_status_t* osprey_session_load_module_file(osprey_session_t* session, const char* path) {
  if (!session || !path) {
    return ToCStatus(osprey::InvalidArgumentError("session and path are required"));
  }
  auto mapping = osprey::embed::FileMapping::Open(path, session->instance->host_allocator);
  if (!mapping.ok()) return ToCStatus(std::move(mapping).status());
  std::span<const uint8_t> bytes = (*mapping)->contents();
  return ToCStatus(LoadModule(session, bytes, ref_ptr<osprey::RefObject>(std::move(*mapping)))
                       .Annotate("loading module '%s'", path));
}

osprey_status_t* osprey_session_load_module_memory(osprey_session_t* session, const void* data,
                                                   size_t size, osprey_release_fn_t release,
                                                   void* release_user_data) {
  if (!session || !data || size == 0) {
    return ToCStatus(osprey::InvalidArgumentError("session, data and a non-zero size are required"));
  }
  if (reinterpret_cast<uintptr_t>(data) % 16 != 0) {
    return ToCStatus(osprey::InvalidArgumentError(
        "module data at %p is not 16-byte aligned", data));
  }
  ref_ptr<osprey::RefObject> owner;
  if (release) {
    auto release_owner = MakeRef<ReleaseOwner>(session->instance->host_allocator, release,
                                               release_user_data, data);
    if (!release_owner.ok()) return ToCStatus(std::move(release_owner).status());
    owner = std::move(*release_owner);
  }
  return ToCStatus(
      LoadModule(session, std::span<const uint8_t>(static_cast<const uint8_t*>(data), size),
                 std::move(owner))
          .Annotate("loading module from memory (%zu bytes)", size));
}

osprey_status_t* osprey_session_lookup_function(osprey_session_t* session, const char* name,
                                                osprey_function_t** out_function) {
  if (!out_function) return ToCStatus(osprey::InvalidArgumentError("out_function is null"));
  *out_function = nullptr;
  if (!session || !name) {
    return ToCStatus(osprey::InvalidArgumentError("session and name are required"));
  }
  auto function = Lookup(session, name);
  if (!function.ok()) return ToCStatus(std::move(function).status());
  auto handle = MakeRef<osprey_function_t>(session->instance->host_allocator);
  if (!handle.ok()) return ToCStatus(std::move(handle).status());
  (*handle)->session = ref_ptr<osprey_session_t>(session);
  (*handle)->context = session->context;
  (*handle)->function = *function;
  FormatFunctionName(*function, (*handle)->name, sizeof((*handle)->name));
  *out_function = handle->release();
  return nullptr;
}

void osprey_function_retain(osprey_function_t* function) {
  if (function) function->Retain();
}
void osprey_function_release(osprey_function_t* function) {
  if (function) function->Release();
}

const char* osprey_function_name(const osprey_function_t* function) {
  return function ? function->name : "";
}
size_t osprey_function_input_count(const osprey_function_t* function) {
  return function ? function->function.signature().arg_count : 0;
}
size_t osprey_function_output_count(const osprey_function_t* function) {
  return function ? function->function.signature().result_count : 0;
}
const char* osprey_function_signature(const osprey_function_t* function) {
  return function ? function->function.signature_text() : "";
}

osprey_status_t* osprey_function_call_values(osprey_function_t* function,
                                             const osprey_value_t* inputs, size_t input_count,
                                             osprey_value_t* outputs, size_t output_capacity,
                                             size_t* out_output_count) {
  if (out_output_count) *out_output_count = 0;
  if (!function || !out_output_count || (output_capacity && !outputs)) {
    return ToCStatus(osprey::InvalidArgumentError("function, outputs and out_output_count are "
                                                  "required"));
  }
  return ToCStatus(
      CallValues(function, inputs, input_count, outputs, output_capacity, out_output_count)
          .Annotate("calling '%s'", function->name));
}

osprey_status_t* osprey_function_call(osprey_function_t* function,
                                      osprey_buffer_view_t* const* inputs, size_t input_count,
                                      osprey_buffer_view_t** outputs, size_t output_capacity,
                                      size_t* out_output_count) {
  if (out_output_count) *out_output_count = 0;
  if (!function || !out_output_count || (output_capacity && !outputs)) {
    return ToCStatus(osprey::InvalidArgumentError("function, outputs and out_output_count are "
                                                  "required"));
  }
  const vm::Signature& signature = function->function.signature();
  for (size_t k = 0; k < signature.arg_count; ++k) {
    if (signature.args[k] != 'r') {
      return ToCStatus(osprey::UnimplementedError(
          "calling '%s': argument %zu is a scalar (signature '%s'); use "
          "osprey_function_call_values",
          function->name, k, function->function.signature_text()));
    }
  }
  for (size_t k = 0; k < signature.result_count; ++k) {
    if (signature.results[k] != 'r') {
      return ToCStatus(osprey::UnimplementedError(
          "calling '%s': result %zu is a scalar (signature '%s'); use "
          "osprey_function_call_values",
          function->name, k, function->function.signature_text()));
    }
  }
  if (input_count > vm::kMaxSignatureValues || (input_count && !inputs)) {
    return ToCStatus(osprey::InvalidArgumentError(
        "calling '%s': %zu inputs given (inputs %s)", function->name, input_count,
        inputs ? "present" : "null"));
  }
  osprey_value_t in[vm::kMaxSignatureValues];
  osprey_value_t out[vm::kMaxSignatureValues];
  for (size_t k = 0; k < input_count; ++k) {
    in[k].type = OSPREY_VALUE_TYPE_BUFFER_VIEW;
    in[k].u.buffer_view = inputs[k];
  }
  size_t count = 0;
  osprey_status_t* status = osprey_function_call_values(
      function, in, input_count, out, output_capacity < vm::kMaxSignatureValues
                                          ? output_capacity
                                          : vm::kMaxSignatureValues,
      &count);
  if (status) return status;
  for (size_t k = 0; k < count; ++k) outputs[k] = out[k].u.buffer_view;
  *out_output_count = count;
  return nullptr;
}

}  // extern "C"
