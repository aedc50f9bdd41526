// The VM instruction set: one table drives the verifier, interpreter,
// printer and parser so the four never disagree.
//
// Encoding: one opcode byte followed by the operands in table order, little
// endian, unaligned. Operand kinds (one character each in the spec string):
//   i I f F r   register of bank i32 / i64 / f32 / f64 / ref (uint16 index)
//   4 8         int32 / int64 immediate
//   x X         f32 / f64 immediate (IEEE bits, 4 / 8 bytes)
//   B           branch target: uint32 byte offset from the function start
//   S           rodata segment index (uint32)
//   a b c d e   global index (uint32) in bank i32 / i64 / f32 / f64 / ref
//   C           internal call: uint32 function index, argument list,
//               result list
//   M           import call: uint32 import index, argument list, result list
//   R           return list
//   E           failure payload: uint8 status code, uint16 message length,
//               message bytes, uint8 argument count, then per argument a
//               uint8 bank (0=i32 1=i64 2=f32 3=f64 4=ref) and uint16 register
// A register list is a uint8 count followed by uint16 register indices; the
// bank of each entry comes from the callee's (or returning function's)
// signature. Destination operands come first. docs/vm.md describes every
// opcode's semantics.
#ifndef OSPREY_VM_OPCODES_H_
#define OSPREY_VM_OPCODES_H_

#include <cstddef>
#include <cstdint>

namespace osprey::vm {

// Flags in the table.
inline constexpr uint8_t kOpNone = 0;
// Control never reaches the next instruction.
inline constexpr uint8_t kOpTerminator = 1;

// X(Name, "mnemonic", "operands", flags)
#define OSPREY_VM_OPCODES(X)                                                   \
  X(Nop, "nop", "", kOpNone)                                                   \
  /* Constants */                                                              \
  X(ConstI32, "const.i32", "i4", kOpNone)                                      \
  X(ConstI64, "const.i64", "I8", kOpNone)                                      \
  X(ConstF32, "const.f32", "fx", kOpNone)                                      \
  X(ConstF64, "const.f64", "FX", kOpNone)                                      \
  X(ConstRefNull, "const.ref.null", "r", kOpNone)                              \
  X(ConstRefRodata, "const.ref.rodata", "rS", kOpNone)                         \
  /* Moves and selects */                                                      \
  X(MovI32, "mov.i32", "ii", kOpNone)                                          \
  X(MovI64, "mov.i64", "II", kOpNone)                                          \
  X(MovF32, "mov.f32", "ff", kOpNone)                                          \
  X(MovF64, "mov.f64", "FF", kOpNone)                                          \
  X(MovRef, "mov.ref", "rr", kOpNone)                                          \
  X(SelectI32, "select.i32", "iiii", kOpNone)                                  \
  X(SelectI64, "select.i64", "IiII", kOpNone)                                  \
  X(SelectF32, "select.f32", "fiff", kOpNone)                                  \
  X(SelectF64, "select.f64", "FiFF", kOpNone)                                  \
  X(SelectRef, "select.ref", "rirr", kOpNone)                                  \
  /* i32 arithmetic */                                                         \
  X(AddI32, "add.i32", "iii", kOpNone)                                         \
  X(AddImmI32, "add.imm.i32", "ii4", kOpNone)                                  \
  X(SubI32, "sub.i32", "iii", kOpNone)                                         \
  X(MulI32, "mul.i32", "iii", kOpNone)                                         \
  X(DivI32S, "div.i32.s", "iii", kOpNone)                                      \
  X(DivI32U, "div.i32.u", "iii", kOpNone)                                      \
  X(RemI32S, "rem.i32.s", "iii", kOpNone)                                      \
  X(RemI32U, "rem.i32.u", "iii", kOpNone)                                      \
  X(AndI32, "and.i32", "iii", kOpNone)                                         \
  X(OrI32, "or.i32", "iii", kOpNone)                                           \
  X(XorI32, "xor.i32", "iii", kOpNone)                                         \
  X(ShlI32, "shl.i32", "iii", kOpNone)                                         \
  X(ShrI32S, "shr.i32.s", "iii", kOpNone)                                      \
  X(ShrI32U, "shr.i32.u", "iii", kOpNone)                                      \
  X(MinI32S, "min.i32.s", "iii", kOpNone)                                      \
  X(MaxI32S, "max.i32.s", "iii", kOpNone)                                      \
  X(MinI32U, "min.i32.u", "iii", kOpNone)                                      \
  X(MaxI32U, "max.i32.u", "iii", kOpNone)                                      \
  X(NegI32, "neg.i32", "ii", kOpNone)                                          \
  X(NotI32, "not.i32", "ii", kOpNone)                                          \
  X(AbsI32, "abs.i32", "ii", kOpNone)                                          \
  /* i64 arithmetic */                                                         \
  X(AddI64, "add.i64", "III", kOpNone)                                         \
  X(AddImmI64, "add.imm.i64", "II8", kOpNone)                                  \
  X(SubI64, "sub.i64", "III", kOpNone)                                         \
  X(MulI64, "mul.i64", "III", kOpNone)                                         \
  X(DivI64S, "div.i64.s", "III", kOpNone)                                      \
  X(DivI64U, "div.i64.u", "III", kOpNone)                                      \
  X(RemI64S, "rem.i64.s", "III", kOpNone)                                      \
  X(RemI64U, "rem.i64.u", "III", kOpNone)                                      \
  X(AndI64, "and.i64", "III", kOpNone)                                         \
  X(OrI64, "or.i64", "III", kOpNone)                                           \
  X(XorI64, "xor.i64", "III", kOpNone)                                         \
  X(ShlI64, "shl.i64", "III", kOpNone)                                         \
  X(ShrI64S, "shr.i64.s", "III", kOpNone)                                      \
  X(ShrI64U, "shr.i64.u", "III", kOpNone)                                      \
  X(MinI64S, "min.i64.s", "III", kOpNone)                                      \
  X(MaxI64S, "max.i64.s", "III", kOpNone)                                      \
  X(MinI64U, "min.i64.u", "III", kOpNone)                                      \
  X(MaxI64U, "max.i64.u", "III", kOpNone)                                      \
  X(NegI64, "neg.i64", "II", kOpNone)                                          \
  X(NotI64, "not.i64", "II", kOpNone)                                          \
  X(AbsI64, "abs.i64", "II", kOpNone)                                          \
  /* f32 arithmetic */                                                         \
  X(AddF32, "add.f32", "fff", kOpNone)                                         \
  X(SubF32, "sub.f32", "fff", kOpNone)                                         \
  X(MulF32, "mul.f32", "fff", kOpNone)                                         \
  X(DivF32, "div.f32", "fff", kOpNone)                                         \
  X(MinF32, "min.f32", "fff", kOpNone)                                         \
  X(MaxF32, "max.f32", "fff", kOpNone)                                         \
  X(NegF32, "neg.f32", "ff", kOpNone)                                          \
  X(AbsF32, "abs.f32", "ff", kOpNone)                                          \
  X(SqrtF32, "sqrt.f32", "ff", kOpNone)                                        \
  X(FloorF32, "floor.f32", "ff", kOpNone)                                      \
  X(CeilF32, "ceil.f32", "ff", kOpNone)                                        \
  /* f64 arithmetic */                                                         \
  X(AddF64, "add.f64", "FFF", kOpNone)                                         \
  X(SubF64, "sub.f64", "FFF", kOpNone)                                         \
  X(MulF64, "mul.f64", "FFF", kOpNone)                                         \
  X(DivF64, "div.f64", "FFF", kOpNone)                                         \
  X(MinF64, "min.f64", "FFF", kOpNone)                                         \
  X(MaxF64, "max.f64", "FFF", kOpNone)                                         \
  X(NegF64, "neg.f64", "FF", kOpNone)                                          \
  X(AbsF64, "abs.f64", "FF", kOpNone)                                          \
  X(SqrtF64, "sqrt.f64", "FF", kOpNone)                                        \
  X(FloorF64, "floor.f64", "FF", kOpNone)                                      \
  X(CeilF64, "ceil.f64", "FF", kOpNone)                                        \
  /* Comparisons: the result is 1 or 0 in an i32 register */                   \
  X(CmpEqI32, "cmp.eq.i32", "iii", kOpNone)                                    \
  X(CmpNeI32, "cmp.ne.i32", "iii", kOpNone)                                    \
  X(CmpLtI32S, "cmp.lt.i32.s", "iii", kOpNone)                                 \
  X(CmpLeI32S, "cmp.le.i32.s", "iii", kOpNone)                                 \
  X(CmpGtI32S, "cmp.gt.i32.s", "iii", kOpNone)                                 \
  X(CmpGeI32S, "cmp.ge.i32.s", "iii", kOpNone)                                 \
  X(CmpLtI32U, "cmp.lt.i32.u", "iii", kOpNone)                                 \
  X(CmpLeI32U, "cmp.le.i32.u", "iii", kOpNone)                                 \
  X(CmpGtI32U, "cmp.gt.i32.u", "iii", kOpNone)                                 \
  X(CmpGeI32U, "cmp.ge.i32.u", "iii", kOpNone)                                 \
  X(CmpEqI64, "cmp.eq.i64", "iII", kOpNone)                                    \
  X(CmpNeI64, "cmp.ne.i64", "iII", kOpNone)                                    \
  X(CmpLtI64S, "cmp.lt.i64.s", "iII", kOpNone)                                 \
  X(CmpLeI64S, "cmp.le.i64.s", "iII", kOpNone)                                 \
  X(CmpGtI64S, "cmp.gt.i64.s", "iII", kOpNone)                                 \
  X(CmpGeI64S, "cmp.ge.i64.s", "iII", kOpNone)                                 \
  X(CmpLtI64U, "cmp.lt.i64.u", "iII", kOpNone)                                 \
  X(CmpLeI64U, "cmp.le.i64.u", "iII", kOpNone)                                 \
  X(CmpGtI64U, "cmp.gt.i64.u", "iII", kOpNone)                                 \
  X(CmpGeI64U, "cmp.ge.i64.u", "iII", kOpNone)                                 \
  X(CmpEqF32, "cmp.eq.f32", "iff", kOpNone)                                    \
  X(CmpNeF32, "cmp.ne.f32", "iff", kOpNone)                                    \
  X(CmpLtF32, "cmp.lt.f32", "iff", kOpNone)                                    \
  X(CmpLeF32, "cmp.le.f32", "iff", kOpNone)                                    \
  X(CmpGtF32, "cmp.gt.f32", "iff", kOpNone)                                    \
  X(CmpGeF32, "cmp.ge.f32", "iff", kOpNone)                                    \
  X(CmpEqF64, "cmp.eq.f64", "iFF", kOpNone)                                    \
  X(CmpNeF64, "cmp.ne.f64", "iFF", kOpNone)                                    \
  X(CmpLtF64, "cmp.lt.f64", "iFF", kOpNone)                                    \
  X(CmpLeF64, "cmp.le.f64", "iFF", kOpNone)                                    \
  X(CmpGtF64, "cmp.gt.f64", "iFF", kOpNone)                                    \
  X(CmpGeF64, "cmp.ge.f64", "iFF", kOpNone)                                    \
  X(CmpEqRef, "cmp.eq.ref", "irr", kOpNone)                                    \
  X(CmpNzRef, "cmp.nz.ref", "ir", kOpNone)                                     \
  /* Casts */                                                                  \
  X(TruncI64I32, "trunc.i64.i32", "iI", kOpNone)                               \
  X(ExtI32I64S, "ext.i32.i64.s", "Ii", kOpNone)                                \
  X(ExtI32I64U, "ext.i32.i64.u", "Ii", kOpNone)                                \
  X(CastSI32F32, "cast.si32.f32", "fi", kOpNone)                               \
  X(CastUI32F32, "cast.ui32.f32", "fi", kOpNone)                               \
  X(CastF32SI32, "cast.f32.si32", "if", kOpNone)                               \
  X(CastF32UI32, "cast.f32.ui32", "if", kOpNone)                               \
  X(CastSI64F32, "cast.si64.f32", "fI", kOpNone)                               \
  X(CastF32SI64, "cast.f32.si64", "If", kOpNone)                               \
  X(CastSI32F64, "cast.si32.f64", "Fi", kOpNone)                               \
  X(CastF64SI32, "cast.f64.si32", "iF", kOpNone)                               \
  X(CastSI64F64, "cast.si64.f64", "FI", kOpNone)                               \
  X(CastF64SI64, "cast.f64.si64", "IF", kOpNone)                               \
  X(ExtF32F64, "ext.f32.f64", "Ff", kOpNone)                                   \
  X(TruncF64F32, "trunc.f64.f32", "fF", kOpNone)                               \
  X(BitcastI32F32, "bitcast.i32.f32", "fi", kOpNone)                           \
  X(BitcastF32I32, "bitcast.f32.i32", "if", kOpNone)                           \
  X(BitcastI64F64, "bitcast.i64.f64", "FI", kOpNone)                           \
  X(BitcastF64I64, "bitcast.f64.i64", "IF", kOpNone)                           \
  /* Control flow */                                                           \
  X(Br, "br", "B", kOpTerminator)                                              \
  X(BrIf, "br_if", "iB", kOpNone)                                              \
  X(BrUnless, "br_unless", "iB", kOpNone)                                      \
  X(Call, "call", "C", kOpNone)                                                \
  X(CallImport, "call.import", "M", kOpNone)                                   \
  X(Return, "return", "R", kOpTerminator)                                      \
  X(Fail, "fail", "E", kOpTerminator)                                          \
  X(CheckNz, "check.nz", "iE", kOpNone)                                        \
  X(CheckEqI32, "check.eq.i32", "iiE", kOpNone)                                \
  X(CheckEqI64, "check.eq.i64", "IIE", kOpNone)                                \
  /* Module globals */                                                         \
  X(GlobalLoadI32, "global.load.i32", "ia", kOpNone)                           \
  X(GlobalStoreI32, "global.store.i32", "ia", kOpNone)                         \
  X(GlobalLoadI64, "global.load.i64", "Ib", kOpNone)                           \
  X(GlobalStoreI64, "global.store.i64", "Ib", kOpNone)                         \
  X(GlobalLoadF32, "global.load.f32", "fc", kOpNone)                           \
  X(GlobalStoreF32, "global.store.f32", "fc", kOpNone)                         \
  X(GlobalLoadF64, "global.load.f64", "Fd", kOpNone)                           \
  X(GlobalStoreF64, "global.store.f64", "Fd", kOpNone)                         \
  X(GlobalLoadRef, "global.load.ref", "re", kOpNone)                           \
  X(GlobalStoreRef, "global.store.ref", "re", kOpNone)                         \
  /* Lists (vm.list) */                                                        \
  X(ListAlloc, "list.alloc", "ri", kOpNone)                                    \
  X(ListSize, "list.size", "ir", kOpNone)                                      \
  X(ListResize, "list.resize", "ri", kOpNone)                                  \
  X(ListGetI32, "list.get.i32", "iri", kOpNone)                                \
  X(ListSetI32, "list.set.i32", "rii", kOpNone)                                \
  X(ListGetI64, "list.get.i64", "Iri", kOpNone)                                \
  X(ListSetI64, "list.set.i64", "riI", kOpNone)                                \
  X(ListGetF32, "list.get.f32", "fri", kOpNone)                                \
  X(ListSetF32, "list.set.f32", "rif", kOpNone)                                \
  X(ListGetF64, "list.get.f64", "Fri", kOpNone)                                \
  X(ListSetF64, "list.set.f64", "riF", kOpNone)                                \
  X(ListGetRef, "list.get.ref", "rri", kOpNone)                                \
  X(ListSetRef, "list.set.ref", "rir", kOpNone)                                \
  /* Byte buffers (vm.buffer) */                                               \
  X(BufferAlloc, "buffer.alloc", "rI", kOpNone)                                \
  X(BufferLength, "buffer.length", "Ir", kOpNone)                              \
  X(BufferFill, "buffer.fill", "rIIi", kOpNone)                                \
  X(BufferCopy, "buffer.copy", "rIrII", kOpNone)                               \
  X(BufferLoadI8S, "buffer.load.i8.s", "irI", kOpNone)                         \
  X(BufferLoadI8U, "buffer.load.i8.u", "irI", kOpNone)                         \
  X(BufferLoadI16S, "buffer.load.i16.s", "irI", kOpNone)                       \
  X(BufferLoadI16U, "buffer.load.i16.u", "irI", kOpNone)                       \
  X(BufferLoadI32, "buffer.load.i32", "irI", kOpNone)                          \
  X(BufferLoadI64, "buffer.load.i64", "IrI", kOpNone)                          \
  X(BufferLoadF32, "buffer.load.f32", "frI", kOpNone)                          \
  X(BufferLoadF64, "buffer.load.f64", "FrI", kOpNone)                          \
  X(BufferStoreI8, "buffer.store.i8", "rIi", kOpNone)                          \
  X(BufferStoreI16, "buffer.store.i16", "rIi", kOpNone)                        \
  X(BufferStoreI32, "buffer.store.i32", "rIi", kOpNone)                        \
  X(BufferStoreI64, "buffer.store.i64", "rII", kOpNone)                        \
  X(BufferStoreF32, "buffer.store.f32", "rIf", kOpNone)                        \
  X(BufferStoreF64, "buffer.store.f64", "rIF", kOpNone)

enum class Opcode : uint8_t {
#define OSPREY_VM_OPCODE_ENUM_(name, mnemonic, operands, flags) k##name,
  OSPREY_VM_OPCODES(OSPREY_VM_OPCODE_ENUM_)
#undef OSPREY_VM_OPCODE_ENUM_
      kCount,
};

struct OpcodeInfo {
  // Operand kinds (see the top of this file), NUL-terminated.
  char operands[7];
  uint8_t flags;
};

// Decodes the table entry of |opcode| into |*out_info| and returns it, or
// returns null if |opcode| is not a valid opcode. The table holds each
// entry in 4 bytes (5 bits per operand kind), not as strings, so that
// neither a string section nor 8 bytes per opcode are linked for it.
const OpcodeInfo* GetOpcodeInfo(uint8_t opcode, OpcodeInfo* out_info);
// The mnemonic of |opcode| ("add.i32"), or null if it is not a valid
// opcode. A table and source file of its own (opcode_mnemonics.cc): images
// that never print or parse bytecode, or name it in messages, link
// neither it nor the names.
const char* GetOpcodeMnemonic(uint8_t opcode);

// Register banks, in the order used by failure payloads and frame layouts.
enum class Bank : uint8_t { kI32 = 0, kI64 = 1, kF32 = 2, kF64 = 3, kRef = 4 };
inline constexpr int kBankCount = 5;

// Maps a signature/operand character ('i','I','f','F','r') to its bank;
// returns false for anything else.
bool BankFromChar(char c, Bank* out_bank);
// The signature character of |bank|.
char BankChar(Bank bank);
// "i32", "i64", "f32", "f64", "ref".
const char* BankName(Bank bank);

// Upper bounds enforced by the loader.
inline constexpr size_t kMaxSignatureValues = 32;  // Per side of a signature.
inline constexpr size_t kMaxFailArguments = 16;

}  // namespace osprey::vm

#endif  // OSPREY_VM_OPCODES_H_
