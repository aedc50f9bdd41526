// Native modules: functions implemented in C++ that bytecode imports by
// name, e.g. the HAL module ("hal.buffer.allocate") or test helpers.
//
// A native module is a name plus a static table of {name, signature,
// function pointer}. Bytecode calls one through an import; the interpreter
// marshals the arguments into Values (typed by the signature, so scalars are
// already the right bank), calls the function, and moves the results back
// into registers. Functions receive a NativeCall describing the call.
#ifndef OSPREY_VM_NATIVE_MODULE_H_
#define OSPREY_VM_NATIVE_MODULE_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/base/status.h"
#include "vm/module.h"
#include "vm/ref.h"
#include "vm/value.h"

namespace osprey::vm {

class BytecodeModule;
class Context;

// The view a native function gets of one call. Arguments are typed by the
// function's signature (checked at context creation and by the
// interpreter), so i32(k) etc. only need the index to be right; ref
// arguments may be null or of any type, so check them with GetRef. Results
// start as zero / null of the declared type.
class NativeCall {
 public:
  NativeCall(Context* context, ModuleState* state, const BytecodeModule* caller,
             const Value* args, size_t arg_count, Value* results, size_t result_count)
      : context_(context), state_(state), caller_(caller), args_(args),
        results_(results), arg_count_(arg_count), result_count_(result_count) {}

  // The calling context; borrowed for the call.
  Context* context() const { return context_; }
  // This module's state in that context (null if it has none).
  ModuleState* state() const { return state_; }
  // The bytecode module whose code made the call (null when the function is
  // invoked directly through Context::Invoke). Lets native modules read the
  // caller's executables and rodata by index.
  const BytecodeModule* caller() const { return caller_; }
  // The context's host allocator, for objects returned as results.
  Allocator* allocator() const;

  size_t arg_count() const { return arg_count_; }
  size_t result_count() const { return result_count_; }
  int32_t i32(size_t k) const { return args_[k].i32; }
  int64_t i64(size_t k) const { return args_[k].i64; }
  float f32(size_t k) const { return args_[k].f32; }
  double f64(size_t k) const { return args_[k].f64; }
  const Ref& ref(size_t k) const { return args_[k].ref; }
  // Argument |k| as a T of ref type |type|; INVALID_ARGUMENT naming the
  // argument when it is null or has another type.
  // The name is formatted only on failure: calls check every argument.
  template <typename T>
  Status GetRef(size_t k, const RefType* type, T** out) const {
    const Ref& ref = args_[k].ref;
    if (OSPREY_LIKELY(!ref.is_null() && ref.type() == type)) {
      *out = static_cast<T*>(ref.get());
      return OkStatus();
    }
    char what[24];
    FormatArgName(k, what, sizeof(what));
    return CheckRefType(ref, type, what, out);
  }

  void set_i32(size_t k, int32_t v) { results_[k].i32 = v; }
  void set_i64(size_t k, int64_t v) { results_[k].i64 = v; }
  void set_f32(size_t k, float v) { results_[k].f32 = v; }
  void set_f64(size_t k, double v) { results_[k].f64 = v; }
  void set_ref(size_t k, Ref v) { results_[k].ref = static_cast<Ref&&>(v); }

 private:
  static void FormatArgName(size_t k, char* buffer, size_t capacity);

  Context* context_;
  ModuleState* state_;
  const BytecodeModule* caller_;
  const Value* args_;
  Value* results_;
  size_t arg_count_;
  size_t result_count_;
};

// Returns OK or an error, which the interpreter annotates with the call
// site and propagates.
using NativeFunctionPtr = Status (*)(NativeCall& call);

struct NativeFunction {
  const char* name;       // Local name; imported as "<module>.<name>".
  const char* signature;  // "args:results", see vm/signature.h.
  NativeFunctionPtr function;
};

// Subclass to add per-context state (override CreateState/DestroyState) or
// use directly for stateless modules. The name and table are borrowed and
// must outlive the module (normally static constants). The table is
// validated by Validate(), which Context::Create calls.
class NativeModule : public Module {
 public:
  NativeModule(const char* name, std::span<const NativeFunction> functions)
      : Module(ModuleKind::kNative), name_(name), functions_(functions) {}

  // Creates a stateless native module from |allocator|.
  static StatusOr<ref_ptr<NativeModule>> Create(const char* name,
                                                std::span<const NativeFunction> functions,
                                                Allocator* allocator);

  const char* name() const override { return name_; }
  uint32_t export_count() const override { return uint32_t(functions_.size()); }
  ExportInfo export_info(uint32_t ordinal) const override;

  const NativeFunction& function(uint32_t ordinal) const { return functions_[ordinal]; }

  // INVALID_ARGUMENT for a bad module name, an unnamed, duplicate or
  // null function, or an invalid signature.
  Status Validate() const;

 private:
  const char* name_;
  std::span<const NativeFunction> functions_;
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_NATIVE_MODULE_H_
