// Context creation (linking) and the invocation entry points.
#include "vm/context.h"

#include <cstring>
#include <new>
#include <utility>

#include "runtime/base/platform/platform.h"
#include "vm/bytecode_module.h"
#include "vm/context_internal.h"
#include "vm/interpreter.h"
#include "vm/native_module.h"

namespace osprey::vm {

const char* Function::module_name() const {
  return instance_ ? instance_->module->name() : "";
}

Context::Context(Instance* instance, const ContextOptions& options, Allocator* allocator)
    : instance_(instance),
      options_(options),
      allocator_(allocator),
      interrupt_(options.interrupt ? options.interrupt : &own_interrupt_) {}

Context::~Context() {
  // Destroy states in reverse link order: later modules may reference
  // objects owned by earlier ones.
  for (uint32_t i = module_count_; i-- > 0;) {
    ModuleInstance& m = modules_[i];
    if (m.state) m.module->DestroyState(m.state, allocator_);
    allocator_->Free(m.imports);
    m.~ModuleInstance();
  }
  allocator_->Free(modules_);
  allocator_->Free(stack_);
}

StatusOr<ref_ptr<Context>> Context::Create(Instance* instance, std::span<Module* const> modules,
                                           const ContextOptions& options, Allocator* allocator) {
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<Context> context,
                          MakeRef<Context>(allocator, instance, options, allocator));
  OSPREY_RETURN_IF_ERROR(context->Link(modules), "creating VM context");
  return context;
}

Status Context::Link(std::span<Module* const> modules) {
  if (modules.size() > 1024) {
    return InvalidArgumentError("too many modules (%zu)", modules.size());
  }
  if (options_.timeout_ns < 0) {
    return InvalidArgumentError("timeout of %lld ns is negative",
                                static_cast<long long>(options_.timeout_ns));
  }
  if (options_.max_memory != 0) {
    OSPREY_ASSIGN_OR_RETURN(budget_, MemoryBudget::Create(options_.max_memory, allocator_));
  }
  void* memory = nullptr;
  if (!modules.empty()) {
    OSPREY_RETURN_IF_ERROR(
        allocator_->Allocate(modules.size() * sizeof(ModuleInstance), 16, &memory));
  }
  modules_ = static_cast<ModuleInstance*>(memory);

  // Modules and their states.
  for (size_t i = 0; i < modules.size(); ++i) {
    Module* module = modules[i];
    if (!module) return InvalidArgumentError("module %zu is null", i);
    for (size_t j = 0; j < i; ++j) {
      if (strcmp(modules[j]->name(), module->name()) == 0) {
        return InvalidArgumentError("two modules are named '%s'", module->name());
      }
    }
    ModuleInstance* m = new (&modules_[i]) ModuleInstance();
    ++module_count_;
    m->module = ref_ptr<Module>(module);
    if (module->kind() == ModuleKind::kBytecode) {
      m->bytecode = static_cast<const BytecodeModule*>(module);
    } else {
      m->native = static_cast<const NativeModule*>(module);
      OSPREY_RETURN_IF_ERROR(m->native->Validate());
    }
    OSPREY_ASSIGN_OR_RETURN(m->state, module->CreateState(allocator_),
                            "creating state of module '%s'", module->name());
    if (m->bytecode) m->globals = static_cast<BytecodeModuleState*>(m->state);
  }

  // Imports.
  for (uint32_t i = 0; i < module_count_; ++i) {
    ModuleInstance& m = modules_[i];
    if (!m.bytecode || m.bytecode->import_count() == 0) continue;
    uint32_t import_count = m.bytecode->import_count();
    OSPREY_RETURN_IF_ERROR(allocator_->AllocateZeroed(import_count * sizeof(ImportTarget), 16,
                                                      reinterpret_cast<void**>(&m.imports)));
    for (uint32_t k = 0; k < import_count; ++k) {
      const ImportInfo& imp = m.bytecode->import(k);
      const char* function_name = imp.full_name + imp.module_name_length + 1;
      ModuleInstance* target = nullptr;
      for (uint32_t j = 0; j < module_count_; ++j) {
        const char* name = modules_[j].module->name();
        if (j != i && strlen(name) == imp.module_name_length &&
            memcmp(name, imp.full_name, imp.module_name_length) == 0) {
          target = &modules_[j];
          break;
        }
      }
      if (!target) {
        return NotFoundError("import '%s' of module '%s' not found: no module named '%.*s' in the "
                             "context",
                             imp.full_name, m.module->name(), int(imp.module_name_length),
                             imp.full_name);
      }
      Module* tm = target->module.get();
      bool found = false;
      for (uint32_t e = 0; e < tm->export_count(); ++e) {
        ExportInfo info = tm->export_info(e);
        if (strcmp(info.name, function_name) != 0) continue;
        if (strcmp(info.signature, imp.signature_text) != 0) {
          return InvalidArgumentError(
              "import '%s' of module '%s' has signature '%s' but the export has '%s'",
              imp.full_name, m.module->name(), imp.signature_text, info.signature);
        }
        m.imports[k].instance = target;
        m.imports[k].ordinal = info.function_ordinal;
        found = true;
        break;
      }
      if (!found) {
        return NotFoundError("import '%s' of module '%s' not found: module '%s' has no export "
                             "'%s'",
                             imp.full_name, m.module->name(), tm->name(), function_name);
      }
    }
  }

  // Stack.
  if (options_.stack_size < 1024) {
    return InvalidArgumentError("stack size %zu is too small (minimum 1024 bytes)",
                                options_.stack_size);
  }
  OSPREY_RETURN_IF_ERROR(
      allocator_->Allocate(options_.stack_size, 16, reinterpret_cast<void**>(&stack_)),
      "allocating a %zu-byte VM stack", options_.stack_size);

  // Initializers.
  for (uint32_t i = 0; i < module_count_; ++i) {
    ModuleInstance& m = modules_[i];
    if (!m.bytecode || m.bytecode->initializer() < 0) continue;
    BeginInvocation();
    OSPREY_RETURN_IF_ERROR(
        Interpreter::Run(this, &m, uint32_t(m.bytecode->initializer()), nullptr, nullptr),
        "running initializer of module '%s'", m.module->name());
  }
  return OkStatus();
}

StatusOr<Function> Context::LookupFunction(const char* module_name,
                                           const char* function_name) const {
  for (uint32_t i = 0; i < module_count_; ++i) {
    ModuleInstance& m = modules_[i];
    if (strcmp(m.module->name(), module_name) != 0) continue;
    for (uint32_t e = 0; e < m.module->export_count(); ++e) {
      ExportInfo info = m.module->export_info(e);
      if (strcmp(info.name, function_name) != 0) continue;
      Function f;
      f.instance_ = &m;
      f.ordinal_ = info.function_ordinal;
      f.name_ = info.name;
      f.signature_text_ = info.signature;
      OSPREY_RETURN_IF_ERROR(ParseSignature(info.signature, strlen(info.signature), &f.signature_));
      return f;
    }
    return NotFoundError("module '%s' has no export '%s'", module_name, function_name);
  }
  return NotFoundError("no module named '%s' in the context", module_name);
}

StatusOr<Function> Context::LookupFunction(const char* full_name) const {
  const char* dot = strchr(full_name, '.');
  if (!dot || dot == full_name) {
    return InvalidArgumentError("function name '%s' is not of the form 'module.function'",
                                full_name);
  }
  char module_name[257];
  size_t length = size_t(dot - full_name);
  if (length >= sizeof(module_name)) return NotFoundError("module name too long in '%s'", full_name);
  memcpy(module_name, full_name, length);
  module_name[length] = 0;
  return LookupFunction(module_name, dot + 1);
}

ModuleState* Context::GetModuleState(const Module* module) const {
  for (uint32_t i = 0; i < module_count_; ++i) {
    if (modules_[i].module.get() == module) return modules_[i].state;
  }
  return nullptr;
}

Status Context::Invoke(const Function& function, std::span<const Value> args,
                       std::span<Value> results) {
  if (OSPREY_UNLIKELY(!function.instance_)) {
    return InvalidArgumentError("invoking an empty Function handle");
  }
  const Signature& sig = function.signature_;
  if (OSPREY_UNLIKELY(args.size() != sig.arg_count)) {
    return InvalidArgumentError("function '%s.%s' takes %u arguments, got %zu",
                                function.module_name(), function.name_, unsigned(sig.arg_count),
                                args.size());
  }
  if (OSPREY_UNLIKELY(results.size() != sig.result_count)) {
    return InvalidArgumentError("function '%s.%s' returns %u results, caller expects %zu",
                                function.module_name(), function.name_,
                                unsigned(sig.result_count), results.size());
  }
  for (size_t k = 0; k < args.size(); ++k) {
    Bank bank;
    BankFromChar(sig.args[k], &bank);
    if (OSPREY_UNLIKELY(args[k].type != ValueTypeOfBank(bank))) {
      return InvalidArgumentError("function '%s.%s' argument %zu: expected %s, got %s",
                                  function.module_name(), function.name_, k, BankName(bank),
                                  ValueTypeName(args[k].type));
    }
  }
  BeginInvocation();
  if (function.instance_->native) {
    return InvokeNative(function.instance_, function.ordinal_, nullptr, args.data(), args.size(),
                        results.data(), results.size());
  }
  return Interpreter::Run(this, function.instance_, function.ordinal_, args.data(),
                          results.data());
}

void Context::BeginInvocation() {
  if (depth_ != 0) return;  // Re-entered from a native call: same invocation.
  instructions_executed_ = 0;
  deadline_ns_ = platform::kInfiniteFuture;
  if (options_.timeout_ns > 0) {
    invocation_start_ns_ = platform::MonotonicNanos();
    deadline_ns_ = platform::DeadlineFromTimeout(options_.timeout_ns);
  }
}

Status Context::InvokeNative(ModuleInstance* instance, uint32_t ordinal,
                             const BytecodeModule* caller, const Value* args, size_t arg_count,
                             Value* results, size_t result_count) {
  const NativeFunction& fn = instance->native->function(ordinal);
  if (OSPREY_UNLIKELY(depth_ >= options_.max_call_depth)) {
    return ResourceExhaustedError("VM call depth limit %u reached calling '%s.%s'",
                                  options_.max_call_depth, instance->module->name(), fn.name);
  }
  // Results start as zero / null of the declared type.
  const char* types = strchr(fn.signature, ':') + 1;
  for (size_t k = 0; k < result_count; ++k) {
    Bank bank;
    BankFromChar(types[k], &bank);
    results[k] = Value();
    results[k].type = ValueTypeOfBank(bank);
  }
  NativeCall call(this, instance->state, caller, args, arg_count, results, result_count);
  ++depth_;
  Status status = fn.function(call);
  --depth_;
  return status;
}

}  // namespace osprey::vm
