// Context: a set of modules linked together (imports resolved across
// modules), their per-context state, and a preallocated VM stack on which
// exported functions are invoked.
#ifndef OSPREY_VM_CONTEXT_H_
#define OSPREY_VM_CONTEXT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"
#include "vm/instance.h"
#include "vm/memory_budget.h"
#include "vm/module.h"
#include "vm/signature.h"
#include "vm/value.h"

namespace osprey::vm {

class BytecodeModule;
class Interpreter;
class InterpreterState;
struct ModuleInstance;

// Limits are per invocation: a call of Context::Invoke (or an initializer)
// with everything it calls. A limit that is hit fails the invocation with
// the VM backtrace; the context stays usable for the next call.
struct ContextOptions {
  // Bytes of VM stack for call frames (registers) and native-call argument
  // marshalling (at least 1024). Allocated once at creation; invocations
  // never allocate.
  size_t stack_size = 64 * 1024;
  // Deepest allowed call nesting (bytecode and native frames).
  uint32_t max_call_depth = 256;
  // Bytes that lists and buffers allocated by bytecode (list.alloc,
  // list.resize, buffer.alloc) may hold at once in this context, whether
  // they live in registers, globals or other lists. An allocation past it
  // fails with RESOURCE_EXHAUSTED. 0: no limit.
  size_t max_memory = 0;
  // Bytecode instructions one invocation may execute; past it
  // RESOURCE_EXHAUSTED. 0: no limit.
  uint64_t max_instructions = 0;
  // Nanoseconds of wall-clock time one invocation may run; past it
  // DEADLINE_EXCEEDED. Checked between instructions (every few thousand)
  // and after each native call; a native call (e.g. a dispatch) is not cut
  // short. 0: no limit. Needs a monotonic clock (bare metal:
  // platform::SetMonotonicClock).
  int64_t timeout_ns = 0;
  // The interrupt flag the context polls (see Context::Interrupt), shared
  // with its owner, e.g. several contexts of one session. Borrowed; must
  // outlive the context. Null: the context has a flag of its own.
  std::atomic<bool>* interrupt = nullptr;
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
  // Stack overflow and the limits of ContextOptions are RESOURCE_EXHAUSTED
  // or DEADLINE_EXCEEDED, an interrupt CANCELLED. No heap allocation unless
  // the program allocates (lists, buffers) or fails.
  Status Invoke(const Function& function, std::span<const Value> args, std::span<Value> results);

  // Stops the invocation running on this context (or, when none is
  // running, the next one) with CANCELLED and its backtrace at the next
  // instruction boundary or native-call return; a native call in progress
  // finishes first. The invocation it stops consumes the request.
  // Thread-safe: meant to be called from another thread.
  void Interrupt() { interrupt_->store(true, std::memory_order_relaxed); }

  // Bytes held by lists and buffers bytecode allocated (see max_memory).
  size_t vm_memory_in_use() const { return budget_ ? budget_->bytes_in_use() : 0; }

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
  // Starts the per-invocation limits when no invocation is running.
  void BeginInvocation();
  // Where lists and buffers of bytecode come from: the budget, if any.
  Allocator* vm_allocator() const { return budget_ ? static_cast<Allocator*>(budget_.get()) : allocator_; }

  Instance* instance_;
  ContextOptions options_;
  Allocator* allocator_;
  ModuleInstance* modules_ = nullptr;
  uint32_t module_count_ = 0;
  uint8_t* stack_ = nullptr;
  size_t stack_top_ = 0;
  uint32_t depth_ = 0;
  ref_ptr<MemoryBudget> budget_;  // Null without max_memory.
  std::atomic<bool> own_interrupt_{false};
  std::atomic<bool>* interrupt_;  // options_.interrupt or &own_interrupt_.
  // The running invocation: when it started, when it must end
  // (platform::kInfiniteFuture: never) and instructions it has executed
  // (counted in slices by the interpreter).
  int64_t invocation_start_ns_ = 0;
  int64_t deadline_ns_ = 0;
  uint64_t instructions_executed_ = 0;
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_CONTEXT_H_
