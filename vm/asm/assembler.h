// Textual VM assembly: parse (Assemble) and print (Disassemble) modules.
// Host-side only. The syntax is described in docs/vm.md ("Assembly").
#ifndef OSPREY_VM_ASM_ASSEMBLER_H_
#define OSPREY_VM_ASM_ASSEMBLER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"
#include "vm/builder/module_builder.h"

namespace osprey::vm {

// Parses assembly |text| into |builder| (which should be empty).
// INVALID_ARGUMENT with "line N: ..." for syntax errors, unknown mnemonics
// or symbols, register banks that do not match an operand or signature,
// and unbound labels. The result is not verified: load it to verify.
Status Assemble(std::string_view text, ModuleBuilder* builder);

// Parses |text| and serializes the module.
StatusOr<std::vector<uint8_t>> AssembleModule(std::string_view text,
                                              const BuildOptions& options = {});

// Loads (and so verifies) the module file |file| and prints it as assembly
// that Assemble accepts; printing and re-assembling reproduces the module.
// |file| must be aligned as BytecodeModule::Load requires.
StatusOr<std::string> Disassemble(std::span<const uint8_t> file);

}  // namespace osprey::vm

#endif  // OSPREY_VM_ASM_ASSEMBLER_H_
