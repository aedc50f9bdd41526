// The bytecode verifier: proves a function safe to interpret without
// per-instruction checks.
#ifndef OSPREY_VM_VERIFIER_H_
#define OSPREY_VM_VERIFIER_H_

#include <cstdint>

#include "runtime/base/status.h"

namespace osprey::vm {

class BytecodeModule;

// Checks function |function_index| of |module|, whose tables (functions,
// imports, rodata, globals) are already validated. |scratch| must hold at
// least (code_length + 7) / 8 bytes. Rules (docs/vm.md, "Verifier"):
// every opcode is known and every instruction fits in the function; each
// register index is below the function's count for its bank; immediates
// name existing rodata segments, globals, functions and imports; call and
// return register lists match the callee's / function's signature; branch
// targets start an instruction; failure payloads have a valid status code,
// in-bounds message and matching placeholders; the last instruction is a
// terminator (br, return, fail), so control never runs off the end.
// Returns INVALID_ARGUMENT naming the function, byte offset and rule.
Status VerifyFunction(const BytecodeModule& module, uint32_t function_index, uint8_t* scratch);

}  // namespace osprey::vm

#endif  // OSPREY_VM_VERIFIER_H_
