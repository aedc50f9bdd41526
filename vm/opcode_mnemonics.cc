// Opcode mnemonics, apart from the opcode table: their strings are linked
// only by code that prints, parses or describes bytecode.
#include "vm/opcodes.h"

namespace osprey::vm {

namespace {
constexpr const char* kOpcodeMnemonics[] = {
#define OSPREY_VM_OPCODE_MNEMONIC_(name, mnemonic, operands, flags) mnemonic,
    OSPREY_VM_OPCODES(OSPREY_VM_OPCODE_MNEMONIC_)
#undef OSPREY_VM_OPCODE_MNEMONIC_
};
static_assert(sizeof(kOpcodeMnemonics) / sizeof(kOpcodeMnemonics[0]) == size_t(Opcode::kCount));
}  // namespace

const char* GetOpcodeMnemonic(uint8_t opcode) {
  if (opcode >= uint8_t(Opcode::kCount)) return nullptr;
  return kOpcodeMnemonics[opcode];
}

}  // namespace osprey::vm
