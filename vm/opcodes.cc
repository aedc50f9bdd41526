// The opcode table and bank helpers.
#include "vm/opcodes.h"

namespace osprey::vm {

// Never defined, and not constexpr: a call stops the compilation of the
// table (outside the anonymous namespace, where an undefined function is
// not a warning).
void OpcodeTableEntryIsInvalid(const char* why);

namespace {
// The operand kinds; an entry stores 1 + the index of each of its kinds in
// 5 bits (0 ends the list), the first kind lowest, and its flags in the top
// 2 bits.
constexpr char kOperandKinds[] = "iIfFr48xXBSabcdeCMRE";
constexpr int kKindBits = 5;
constexpr int kMaxOperands = int(sizeof(OpcodeInfo::operands)) - 1;
static_assert(sizeof(kOperandKinds) - 1 < (1u << kKindBits));
static_assert(kMaxOperands * kKindBits <= 30);

// The packed entry of |operands| and |flags|; the table fails to compile
// for an unknown kind, too many operands or flags that do not fit.
consteval uint32_t Pack(const char* operands, uint8_t flags) {
  if (flags > 3) OpcodeTableEntryIsInvalid("flags do not fit in 2 bits");
  uint32_t packed = uint32_t(flags) << 30;
  int count = 0;
  for (const char* k = operands; *k; ++k, ++count) {
    if (count == kMaxOperands) OpcodeTableEntryIsInvalid("too many operands");
    uint32_t index = 0;
    while (kOperandKinds[index] && kOperandKinds[index] != *k) ++index;
    if (!kOperandKinds[index]) OpcodeTableEntryIsInvalid("unknown operand kind");
    packed |= (index + 1) << (count * kKindBits);
  }
  return packed;
}

constexpr uint32_t kOpcodeTable[] = {
#define OSPREY_VM_OPCODE_INFO_(name, mnemonic, operands, flags) Pack(operands, flags),
    OSPREY_VM_OPCODES(OSPREY_VM_OPCODE_INFO_)
#undef OSPREY_VM_OPCODE_INFO_
};
static_assert(sizeof(kOpcodeTable) / sizeof(kOpcodeTable[0]) == size_t(Opcode::kCount));
static_assert(size_t(Opcode::kCount) <= 256, "opcodes are one byte");
}  // namespace

const OpcodeInfo* GetOpcodeInfo(uint8_t opcode, OpcodeInfo* out_info) {
  if (opcode >= uint8_t(Opcode::kCount)) return nullptr;
  uint32_t packed = kOpcodeTable[opcode];
  int count = 0;
  for (; count < kMaxOperands; ++count) {
    uint32_t kind = (packed >> (count * kKindBits)) & ((1u << kKindBits) - 1);
    if (kind == 0) break;
    out_info->operands[count] = kOperandKinds[kind - 1];
  }
  out_info->operands[count] = '\0';
  out_info->flags = uint8_t(packed >> 30);
  return out_info;
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
