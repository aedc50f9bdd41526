// Internal layout shared by the context and the interpreter.
#ifndef OSPREY_VM_CONTEXT_INTERNAL_H_
#define OSPREY_VM_CONTEXT_INTERNAL_H_

#include <cstdint>

#include "vm/bytecode_module.h"
#include "vm/module.h"
#include "vm/native_module.h"

namespace osprey::vm {

struct ModuleInstance;

// Where an import of a bytecode module leads.
struct ImportTarget {
  ModuleInstance* instance = nullptr;
  uint32_t ordinal = 0;  // Function index inside the target module.
};

// One module linked into a context.
struct ModuleInstance {
  ref_ptr<Module> module;
  const BytecodeModule* bytecode = nullptr;  // Exactly one of these is set.
  const NativeModule* native = nullptr;
  ModuleState* state = nullptr;
  BytecodeModuleState* globals = nullptr;  // == state for bytecode modules.
  ImportTarget* imports = nullptr;         // bytecode->import_count() entries.
};

// A bytecode call frame on the VM stack, followed by its registers.
struct Frame {
  Frame* caller;
  ModuleInstance* instance;
  const FunctionInfo* fn;
  uint32_t function_index;
  uint32_t size;                // Bytes of stack this frame occupies.
  const uint8_t* pc;            // Current instruction (the call site while suspended).
  const uint8_t* resume_pc;     // Where this frame continues when its callee returns.
  const uint8_t* result_list;   // The caller's result register list; null for entry frames.
};
inline constexpr uint32_t kFrameHeaderSize = (sizeof(Frame) + 15u) & ~15u;

}  // namespace osprey::vm

#endif  // OSPREY_VM_CONTEXT_INTERNAL_H_
