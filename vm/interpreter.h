// The bytecode interpreter (internal; use Context::Invoke).
#ifndef OSPREY_VM_INTERPRETER_H_
#define OSPREY_VM_INTERPRETER_H_

#include <cstdint>

#include "runtime/base/status.h"
#include "vm/value.h"

namespace osprey::vm {

class Context;
struct ModuleInstance;

class Interpreter {
 public:
  // Runs bytecode function |function_index| of |instance| on |context|'s
  // stack. |args| (typed per the signature, already checked) may be null
  // for functions without arguments; |results| receives the results.
  static Status Run(Context* context, ModuleInstance* instance, uint32_t function_index,
                    const Value* args, Value* results);
};

}  // namespace osprey::vm

#endif  // OSPREY_VM_INTERPRETER_H_
