// Context: a set of modules linked together (imports resolved across
// modules), their per-context state, and a preallocated VM stack on which
// exported functions are invoked.
#ifndef OSPREY_VM_CONTEXT_H_
#define OSPREY_VM_CONTEXT_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"
#include "vm/instance.h"
#include "vm/module.h"
#include "vm/signature.h"
#include "vm/value.h"

namespace osprey::vm {

class BytecodeModule;
class Interpreter;
class InterpreterState;
struct ModuleInstance;

struct ContextOptions {
  // Bytes of VM stack for call frames (registers) and native-call argument
  // marshalling. Allocated once at creation; invocations never allocate.
  size_t stack_size = 64 * 1024;
  // Deepest allowed call nesting (bytecode and native frames).
  uint32_t max_call_depth = 256;
};

// A resolved function of a context. Valid while the context lives.
class Function {
 public:
  Function() = default;
  const char* module_name() const;
  const char* name() const { return name_; }            // Export name.
  const char* signature_text() const { return signature_text_; }
  const Signature& signature() const { return signature_; }
  bool valid() const { return instance_ != nullptr; }

 private:
  friend class Context;
  ModuleInstance* instance_ = nullptr;
  uint32_t ordinal_ = 0;  // Internal function index of the module.
  const char* name_ = "";
  const char* signature_text_ = "";
  Signature signature_;
};

// Thread-compatible: one invocation at a time per context (native functions
// may re-enter Invoke on the same thread). Create one context per thread for
// parallel execution.
class Context final : public RefObject {
 public:
  // Links |modules| (each retained): creates each module's state, resolves
  // every import of every bytecode module by "module.function" against the
  // exports of the other modules, allocates the stack and then runs the
  // bytecode initializers in order. Errors: NOT_FOUND naming an import that
  // no module provides; INVALID_ARGUMENT for a signature mismatch, a
  // duplicate module name or an invalid native module; RESOURCE_EXHAUSTED;
  // any error an initializer returns. |instance| and |allocator| are
  // borrowed and must outlive the context.
  static StatusOr<ref_ptr<Context>> Create(Instance* instance, std::span<Module* const> modules,
                                           const ContextOptions& options, Allocator* allocator);

  // Finds the export "module.function". NOT_FOUND when absent.
  StatusOr<Function> LookupFunction(const char* full_name) const;
  StatusOr<Function> LookupFunction(const char* module_name, const char* function_name) const;

  // Calls |function| with |args| and stores its results in |results|.
  // |args| must match the signature in count and types (INVALID_ARGUMENT
  // otherwise, naming the argument); |results| must have exactly as many
  // entries and is overwritten. Errors raised while running are annotated
  // with a backtrace: "at module.function+0xOFFSET (source location)".
  // Stack overflow is RESOURCE_EXHAUSTED. No heap allocation unless the
  // program allocates (lists, buffers) or fails.
  Status Invoke(const Function& function, std::span<const Value> args, std::span<Value> results);

  Instance* instance() const { return instance_; }
  Allocator* allocator() const { return allocator_; }
  // The state |module| has in this context, or null if it is not linked
  // here (or has none). Borrowed; valid while the context lives.
  ModuleState* GetModuleState(const Module* module) const;

  // Bytes of stack in use (0 between invocations); for tests and tools.
  size_t stack_bytes_in_use() const { return stack_top_; }

  // Use Create(); public only for MakeRef.
  Context(Instance* instance, const ContextOptions& options, Allocator* allocator);
  ~Context() override;

 private:
  friend class Interpreter;
  friend class InterpreterState;
  Status Link(std::span<Module* const> modules);
  Status InvokeNative(ModuleInstance* instance, uint32_t ordinal, const BytecodeModule* caller,
                      const Value* args, size_t arg_count, Value* results, size_t result_count);

  Instance* instance_;
  ContextOptions options_;
  Allocator* allocator_;
  ModuleInstance* modules_ = nullptr;
  uint32_t module_count_ = 0;
  uint8_t* stack_ = nullptr;
  size_t stack_top_ = 0;
  uint32_t depth_ = 0;
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_CONTEXT_H_
