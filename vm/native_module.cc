// Native module table validation and NativeCall helpers.
#include "vm/native_module.h"

#include <stdio.h>

#include <cstring>

#include "vm/context.h"

namespace osprey::vm {

Allocator* NativeCall::allocator() const { return context_->allocator(); }

void NativeCall::FormatArgName(size_t k, char* buffer, size_t capacity) {
  snprintf(buffer, capacity, "argument %zu", k);
}

StatusOr<ref_ptr<NativeModule>> NativeModule::Create(const char* name,
                                                     std::span<const NativeFunction> functions,
                                                     Allocator* allocator) {
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<NativeModule> module,
                          MakeRef<NativeModule>(allocator, name, functions));
  OSPREY_RETURN_IF_ERROR(module->Validate());
  return module;
}

ExportInfo NativeModule::export_info(uint32_t ordinal) const {
  ExportInfo info;
  info.name = functions_[ordinal].name;
  info.signature = functions_[ordinal].signature;
  info.function_ordinal = ordinal;
  return info;
}

Status NativeModule::Validate() const {
  if (!name_ || !*name_) return InvalidArgumentError("native module has no name");
  for (const char* c = name_; *c; ++c) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_';
    if (!ok) {
      return InvalidArgumentError("native module name '%s' is not an identifier", name_);
    }
  }
  for (size_t i = 0; i < functions_.size(); ++i) {
    const NativeFunction& f = functions_[i];
    if (!f.name || !*f.name || !f.signature || !f.function) {
      return InvalidArgumentError("native module '%s' function %zu has no name, signature or "
                                  "function pointer",
                                  name_, i);
    }
    Signature sig;
    OSPREY_RETURN_IF_ERROR(ParseSignature(f.signature, strlen(f.signature), &sig),
                           "native function '%s.%s'", name_, f.name);
    for (size_t j = 0; j < i; ++j) {
      if (strcmp(functions_[j].name, f.name) == 0) {
        return InvalidArgumentError("native module '%s' defines '%s' twice", name_, f.name);
      }
    }
  }
  return OkStatus();
}

}  // namespace osprey::vm
