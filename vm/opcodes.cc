// The opcode table and bank helpers.
#include "vm/opcodes.h"

namespace osprey::vm {

namespace {
constexpr OpcodeInfo kOpcodeTable[] = {
#define OSPREY_VM_OPCODE_INFO_(name, mnemonic, operands, flags) {operands, flags},
    OSPREY_VM_OPCODES(OSPREY_VM_OPCODE_INFO_)
#undef OSPREY_VM_OPCODE_INFO_
};
static_assert(sizeof(kOpcodeTable) / sizeof(kOpcodeTable[0]) == size_t(Opcode::kCount));
static_assert(size_t(Opcode::kCount) <= 256, "opcodes are one byte");
}  // namespace

const OpcodeInfo* GetOpcodeInfo(uint8_t opcode) {
  if (opcode >= uint8_t(Opcode::kCount)) return nullptr;
  return &kOpcodeTable[opcode];
}


bool BankFromChar(char c, Bank* out_bank) {
  switch (c) {
    case 'i': *out_bank = Bank::kI32; return true;
    case 'I': *out_bank = Bank::kI64; return true;
    case 'f': *out_bank = Bank::kF32; return true;
    case 'F': *out_bank = Bank::kF64; return true;
    case 'r': *out_bank = Bank::kRef; return true;
    default: return false;
  }
}

char BankChar(Bank bank) {
  static constexpr char kChars[kBankCount] = {'i', 'I', 'f', 'F', 'r'};
  return kChars[int(bank)];
}

const char* BankName(Bank bank) {
  static constexpr const char* kNames[kBankCount] = {"i32", "i64", "f32", "f64", "ref"};
  return kNames[int(bank)];
}

}  // namespace osprey::vm
