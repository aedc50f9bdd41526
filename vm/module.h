// Module: the unit a Context links together. Two kinds exist: bytecode
// modules loaded from .osp files and native modules implemented in C++.
#ifndef OSPREY_VM_MODULE_H_
#define OSPREY_VM_MODULE_H_

#include <cstddef>
#include <cstdint>

#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"

namespace osprey::vm {

// Per-context state of a module (globals of a bytecode module; the device
// and caches of a native module). Destroyed with the context.
class ModuleState {
 public:
  virtual ~ModuleState() = default;
};

enum class ModuleKind : uint8_t { kBytecode = 0, kNative = 1 };

// An exported function. Strings are borrowed from the module.
struct ExportInfo {
  const char* name = "";        // Local name, e.g. "main" or "buffer.allocate".
  const char* signature = "";   // Calling convention, see vm/signature.h.
  uint32_t function_ordinal = 0;  // Module-internal function index.
};

// Immutable after creation and safe to share between contexts and threads;
// per-context mutable data lives in ModuleState.
class Module : public RefObject {
 public:
  ModuleKind kind() const { return kind_; }

  // The module's name: identifier characters, no '.'. Imports name functions
  // as "<module name>.<export name>".
  virtual const char* name() const = 0;
  virtual uint32_t export_count() const = 0;
  // |ordinal| < export_count().
  virtual ExportInfo export_info(uint32_t ordinal) const = 0;

  // Creates the state for one context with |allocator| (the context's).
  // A module without state returns null. Errors abort context creation.
  virtual StatusOr<ModuleState*> CreateState(Allocator* allocator) {
    return static_cast<ModuleState*>(nullptr);
  }
  // Destroys a state from CreateState (never null).
  virtual void DestroyState(ModuleState* state, Allocator* allocator) {
    allocator->Delete(state);
  }

 protected:
  explicit Module(ModuleKind kind) : kind_(kind) {}

 private:
  ModuleKind kind_;
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_MODULE_H_
