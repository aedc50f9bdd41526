// C API: loaded modules, their reflection attributes and application-supplied
// arenas.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <utility>

#include "runtime/embed/internal.h"
#include "runtime/embed/osprey.h"
#include "runtime/modules/hal/hal_module.h"
#include "vm/value.h"

using osprey::MakeRef;
using osprey::ref_ptr;
using osprey::Status;
using osprey::StatusOr;
using osprey::embed::ToCStatus;
namespace hal = osprey::hal;
namespace vm = osprey::vm;

namespace {

constexpr char kArenaSizeKey[] = "arena_size";
constexpr char kArenaAlignmentKey[] = "arena_alignment";
constexpr char kSetArenaName[] = "set_arena";

// Parses a decimal attribute value; false unless all of |text| is digits and
// the value fits a size_t.
bool ParseSize(const char* text, size_t* out) {
  if (!text || !*text) return false;
  size_t value = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    size_t digit = size_t(*p - '0');
    if (value > (SIZE_MAX - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *out = value;
  return true;
}

Status ArenaRequirement(const vm::BytecodeModule* module, size_t* out_size,
                        size_t* out_alignment) {
  const char* size_text = module->LookupAttribute(kArenaSizeKey);
  if (!size_text) {
    return osprey::NotFoundError(
        "module '%s' records no %s attribute (it was not compiled by osprey-compile)",
        module->name(), kArenaSizeKey);
  }
  size_t size = 0;
  if (!ParseSize(size_text, &size)) {
    return osprey::DataLossError("module '%s' attribute %s='%s' is not a byte count",
                                 module->name(), kArenaSizeKey, size_text);
  }
  size_t alignment = 1;
  const char* alignment_text = module->LookupAttribute(kArenaAlignmentKey);
  if (size > 0 && !alignment_text) {
    return osprey::DataLossError("module '%s' records %s but no %s", module->name(),
                                 kArenaSizeKey, kArenaAlignmentKey);
  }
  if (alignment_text &&
      (!ParseSize(alignment_text, &alignment) || alignment == 0 ||
       (alignment & (alignment - 1)) != 0)) {
    return osprey::DataLossError("module '%s' attribute %s='%s' is not a power of two",
                                 module->name(), kArenaAlignmentKey, alignment_text);
  }
  *out_size = size;
  *out_alignment = alignment;
  return osprey::OkStatus();
}

Status CallSetArena(vm::Context* context, const vm::Module* module, hal::Buffer* arena) {
  OSPREY_ASSIGN_OR_RETURN(vm::Function function,
                          context->LookupFunction(module->name(), kSetArenaName));
  vm::Value args[1] = {vm::Value::FromRef(osprey::modules::hal::WrapBuffer(arena))};
  OSPREY_RETURN_IF_ERROR(context->Invoke(function, args, {}), "calling %s.%s", module->name(),
                         kSetArenaName);
  return osprey::OkStatus();
}

// Sets |*imported| once |release| belongs to an imported buffer (whose
// destruction runs it).
Status SetArena(osprey_module_t* handle, void* memory, size_t size,
                hal::ReleaseCallback release, bool* imported) {
  osprey_session_t* session = handle->session.get();
  const vm::BytecodeModule* module = handle->module;
  size_t needed = 0;
  size_t alignment = 1;
  OSPREY_RETURN_IF_ERROR(ArenaRequirement(module, &needed, &alignment));
  bool exports_set_arena = false;
  for (uint32_t i = 0; i < module->export_count(); ++i) {
    exports_set_arena = exports_set_arena || strcmp(module->export_info(i).name, kSetArenaName) == 0;
  }
  if (needed == 0 || !exports_set_arena) {
    return osprey::FailedPreconditionError(
        "module '%s' has no arena (arena_size %zu, %s)", module->name(), needed,
        exports_set_arena ? "exports set_arena" : "exports no set_arena");
  }
  if (!memory) return osprey::InvalidArgumentError("arena memory is null");
  if (size < needed) {
    return osprey::InvalidArgumentError(
        "arena memory of %zu bytes is smaller than the %zu bytes module '%s' needs", size, needed,
        module->name());
  }
  if (reinterpret_cast<uintptr_t>(memory) % alignment != 0) {
    return osprey::InvalidArgumentError(
        "arena memory at %p is not aligned to the %zu bytes module '%s' needs", memory,
        alignment, module->name());
  }
  hal::BufferParams params;
  params.type = hal::MemoryType::kHostVisible | hal::MemoryType::kDeviceVisible;
  params.usage = hal::BufferUsage::kDefault;
  params.access = hal::MemoryAccess::kAll;
  OSPREY_ASSIGN_OR_RETURN(
      auto buffer,
      session->device->device->allocator()->ImportBuffer(params, memory, size, release),
      "importing %zu bytes of arena memory for module '%s' on device '%s'", size, module->name(),
      session->device->device->id());
  *imported = true;
  OSPREY_RETURN_IF_ERROR(CallSetArena(session->context.get(), module, buffer.get()));
  session->arenas[handle->index] = std::move(buffer);
  return osprey::OkStatus();
}

}  // namespace

namespace osprey::embed {

Status ApplyArenas(osprey_session_t* session, vm::Context* context) {
  for (size_t i = 0; i < session->module_count; ++i) {
    if (!session->arenas[i]) continue;
    OSPREY_RETURN_IF_ERROR(CallSetArena(context, session->modules[i], session->arenas[i].get()));
  }
  return OkStatus();
}

}  // namespace osprey::embed

extern "C" {

osprey_status_t* osprey_session_lookup_module(osprey_session_t* session, const char* name,
                                              osprey_module_t** out_module) {
  if (!out_module) return ToCStatus(osprey::InvalidArgumentError("out_module is null"));
  *out_module = nullptr;
  if (!session) return ToCStatus(osprey::InvalidArgumentError("session is required"));
  const size_t first = osprey_session_t::kFirstApplicationModule;
  if (session->module_count <= first) {
    return ToCStatus(osprey::FailedPreconditionError(
        "no module is loaded in the session (looking up module '%s')", name ? name : "(last)"));
  }
  size_t index = session->module_count - 1;
  if (name) {
    size_t i = session->module_count;
    while (i-- > first && strcmp(session->modules[i]->name(), name) != 0) {
    }
    if (i < first || i >= session->module_count) {
      char loaded[256];
      size_t used = 0;
      loaded[0] = '\0';
      for (size_t k = first; k < session->module_count && used < sizeof(loaded); ++k) {
        int n = snprintf(loaded + used, sizeof(loaded) - used, "%s%s", k > first ? ", " : "",
                         session->modules[k]->name());
        if (n > 0) used += size_t(n);
      }
      return ToCStatus(
          osprey::NotFoundError("no module '%s' in the session (loaded: %s)", name, loaded));
    }
    index = i;
  }
  auto handle = MakeRef<osprey_module_t>(session->instance->host_allocator);
  if (!handle.ok()) return ToCStatus(std::move(handle).status());
  (*handle)->session = ref_ptr<osprey_session_t>(session);
  // Only osprey_session_load_module_* add modules after the native ones, and
  // they add bytecode modules.
  (*handle)->module = static_cast<const vm::BytecodeModule*>(session->modules[index]);
  (*handle)->index = index;
  *out_module = handle->release();
  return nullptr;
}

void osprey_module_retain(osprey_module_t* module) {
  if (module) module->Retain();
}
void osprey_module_release(osprey_module_t* module) {
  if (module) module->Release();
}

const char* osprey_module_name(const osprey_module_t* module) {
  return module ? module->module->name() : "";
}

osprey_status_t* osprey_module_lookup_attribute(const osprey_module_t* module, const char* key,
                                                const char** out_value) {
  if (!out_value) return ToCStatus(osprey::InvalidArgumentError("out_value is null"));
  *out_value = nullptr;
  if (!module || !key) {
    return ToCStatus(osprey::InvalidArgumentError("module and key are required"));
  }
  const char* value = module->module->LookupAttribute(key);
  if (!value) {
    return ToCStatus(osprey::NotFoundError("module '%s' has no attribute '%s'",
                                           module->module->name(), key));
  }
  *out_value = value;
  return nullptr;
}

osprey_status_t* osprey_module_arena_requirement(const osprey_module_t* module,
                                                 size_t* out_size, size_t* out_alignment) {
  if (!module || !out_size || !out_alignment) {
    return ToCStatus(
        osprey::InvalidArgumentError("module, out_size and out_alignment are required"));
  }
  *out_size = 0;
  *out_alignment = 1;
  return ToCStatus(ArenaRequirement(module->module, out_size, out_alignment));
}

osprey_status_t* osprey_module_set_arena(osprey_module_t* module, void* memory, size_t size,
                                         osprey_release_fn_t release, void* release_user_data) {
  if (!module) {
    if (release) release(release_user_data, memory);
    return ToCStatus(osprey::InvalidArgumentError("module is required"));
  }
  hal::ReleaseCallback callback{release, release_user_data};
  bool imported = false;
  Status status = SetArena(module, memory, size, callback, &imported);
  // A failure before the import leaves the memory unused: release it as
  // documented. After the import, dropping the buffer has run it.
  if (!status.ok() && !imported && release) release(release_user_data, memory);
  return ToCStatus(std::move(status).Annotate("setting the arena of module '%s'",
                                              module->module->name()));
}

}  // extern "C"
