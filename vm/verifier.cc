// The bytecode verifier.
#include "vm/verifier.h"

#include <stdio.h>

#include <cstring>

#include "vm/bytecode.h"
#include "vm/bytecode_module.h"
#include "vm/opcodes.h"

namespace osprey::vm {

namespace {

// Decodes one function with bounds checks. Pass 1 marks instruction starts;
// pass 2 (check_targets) also requires branch targets to be marked.
class FunctionVerifier {
 public:
  FunctionVerifier(const BytecodeModule& module, uint32_t function_index, uint8_t* starts)
      : module_(module),
        fn_(module.function(function_index)),
        code_(fn_.code),
        length_(fn_.code_length),
        starts_(starts) {}

  Status Run(bool check_targets) {
    check_targets_ = check_targets;
    pos_ = 0;
    uint8_t last_flags = 0;
    while (pos_ < length_) {
      inst_ = pos_;
      if (!check_targets_) starts_[pos_ / 8] |= uint8_t(1u << (pos_ % 8));
      uint8_t opcode = code_[pos_++];
      OpcodeInfo entry;
      const OpcodeInfo* info = GetOpcodeInfo(opcode, &entry);
      if (!info) return Error("unknown opcode 0x%02x", unsigned(opcode));
      opcode_ = opcode;
      for (const char* k = info->operands; *k; ++k) {
        OSPREY_RETURN_IF_ERROR(Operand(*k));
      }
      last_flags = info->flags;
    }
    if (length_ == 0) {
      inst_ = 0;
      opcode_ = -1;
      return Error("function has no code");
    }
    if (!(last_flags & kOpTerminator)) {
      return Error("control falls off the end of the function (last instruction is not br, "
                   "return or fail)");
    }
    return OkStatus();
  }

 private:
  // The error at the current instruction. Codes-only builds skip the text,
  // so neither the messages nor the opcode names are linked.
  template <typename... Args>
  Status Error(const char* format, Args... args) {
#if OSPREY_STATUS_MESSAGES
    char detail[192];
    snprintf(detail, sizeof(detail), format, args...);
    const char* mnemonic = opcode_ >= 0 ? GetOpcodeMnemonic(uint8_t(opcode_)) : "";
    return InvalidArgumentError("function '%s' at offset 0x%x%s%s%s: %s", fn_.name,
                                unsigned(inst_), *mnemonic ? " (" : "", mnemonic,
                                *mnemonic ? ")" : "", detail);
#else
    (void)format;
    ((void)args, ...);
    return Status(StatusCode::kInvalidArgument);
#endif
  }

  Status Need(uint32_t bytes) {
    if (length_ - pos_ < bytes) {
      return Error("instruction is truncated by the end of the function");
    }
    return OkStatus();
  }

  Status Register(Bank bank) {
    OSPREY_RETURN_IF_ERROR(Need(2));
    uint16_t reg = ReadU16(code_ + pos_);
    pos_ += 2;
    uint16_t count = fn_.register_counts[int(bank)];
    if (reg >= count) {
      return Error("%s register %u out of range (function has %u)", BankName(bank),
                   unsigned(reg), unsigned(count));
    }
    return OkStatus();
  }

  Status U32(uint32_t* out) {
    OSPREY_RETURN_IF_ERROR(Need(4));
    *out = ReadU32(code_ + pos_);
    pos_ += 4;
    return OkStatus();
  }

  // A register list typed by |types| (|count| signature characters).
  Status RegisterList(const char* types, uint8_t count, const char* what) {
    OSPREY_RETURN_IF_ERROR(Need(1));
    uint8_t n = code_[pos_++];
    if (n != count) {
      return Error("%s list has %u registers but the signature has %u", what, unsigned(n),
                   unsigned(count));
    }
    for (uint8_t k = 0; k < n; ++k) {
      Bank bank;
      BankFromChar(types[k], &bank);
      OSPREY_RETURN_IF_ERROR(Register(bank));
    }
    return OkStatus();
  }

  Status Global(Bank bank) {
    uint32_t index = 0;
    OSPREY_RETURN_IF_ERROR(U32(&index));
    uint32_t count = module_.global_count(bank);
    if (index >= count) {
      return Error("%s global %u out of range (module has %u)", BankName(bank), index, count);
    }
    return OkStatus();
  }

  Status FailurePayload() {
    OSPREY_RETURN_IF_ERROR(Need(3));
    uint8_t code = code_[pos_];
    uint16_t message_length = ReadU16(code_ + pos_ + 1);
    pos_ += 3;
    if (code == 0 || code > uint8_t(StatusCode::kDataLoss)) {
      return Error("failure status code %u is not a valid error code", unsigned(code));
    }
    OSPREY_RETURN_IF_ERROR(Need(message_length));
    const uint8_t* message = code_ + pos_;
    pos_ += message_length;
    uint32_t placeholders = 0;
    for (uint32_t i = 0; i + 1 < message_length; ++i) {
      if (message[i] == '{' && message[i + 1] == '}') {
        ++placeholders;
        ++i;
      }
    }
    OSPREY_RETURN_IF_ERROR(Need(1));
    uint8_t argc = code_[pos_++];
    if (argc > kMaxFailArguments) {
      return Error("failure message has %u arguments (limit %zu)", unsigned(argc),
                   kMaxFailArguments);
    }
    if (argc != placeholders) {
      return Error("failure message has %u '{}' placeholders but %u arguments",
                   unsigned(placeholders), unsigned(argc));
    }
    for (uint8_t k = 0; k < argc; ++k) {
      OSPREY_RETURN_IF_ERROR(Need(1));
      uint8_t bank = code_[pos_++];
      if (bank >= kBankCount) return Error("failure argument %u has invalid bank %u", k, bank);
      OSPREY_RETURN_IF_ERROR(Register(Bank(bank)));
    }
    return OkStatus();
  }

  Status Operand(char kind) {
    switch (kind) {
      case 'i': return Register(Bank::kI32);
      case 'I': return Register(Bank::kI64);
      case 'f': return Register(Bank::kF32);
      case 'F': return Register(Bank::kF64);
      case 'r': return Register(Bank::kRef);
      case '4':
      case 'x':
        OSPREY_RETURN_IF_ERROR(Need(4));
        pos_ += 4;
        return OkStatus();
      case '8':
      case 'X':
        OSPREY_RETURN_IF_ERROR(Need(8));
        pos_ += 8;
        return OkStatus();
      case 'B': {
        uint32_t target = 0;
        OSPREY_RETURN_IF_ERROR(U32(&target));
        if (target >= length_) {
          return Error("branch target 0x%x is outside the function (length 0x%x)", target,
                       length_);
        }
        if (check_targets_ && !(starts_[target / 8] & (1u << (target % 8)))) {
          return Error("branch target 0x%x is not the start of an instruction", target);
        }
        return OkStatus();
      }
      case 'S': {
        uint32_t index = 0;
        OSPREY_RETURN_IF_ERROR(U32(&index));
        if (index >= module_.rodata_count()) {
          return Error("rodata segment %u out of range (module has %u)", index,
                       module_.rodata_count());
        }
        return OkStatus();
      }
      case 'a': return Global(Bank::kI32);
      case 'b': return Global(Bank::kI64);
      case 'c': return Global(Bank::kF32);
      case 'd': return Global(Bank::kF64);
      case 'e': return Global(Bank::kRef);
      case 'C': {
        uint32_t callee = 0;
        OSPREY_RETURN_IF_ERROR(U32(&callee));
        if (callee >= module_.function_count()) {
          return Error("call to function %u out of range (module has %u)", callee,
                       module_.function_count());
        }
        const Signature& sig = module_.function(callee).signature;
        OSPREY_RETURN_IF_ERROR(RegisterList(sig.args, sig.arg_count, "argument"));
        return RegisterList(sig.results, sig.result_count, "result");
      }
      case 'M': {
        uint32_t import = 0;
        OSPREY_RETURN_IF_ERROR(U32(&import));
        if (import >= module_.import_count()) {
          return Error("call to import %u out of range (module has %u)", import,
                       module_.import_count());
        }
        const Signature& sig = module_.import(import).signature;
        OSPREY_RETURN_IF_ERROR(RegisterList(sig.args, sig.arg_count, "argument"));
        return RegisterList(sig.results, sig.result_count, "result");
      }
      case 'R':
        return RegisterList(fn_.signature.results, fn_.signature.result_count, "return");
      case 'E':
        return FailurePayload();
      default:
        return Error("internal: unknown operand kind '%c'", kind);
    }
  }

  const BytecodeModule& module_;
  const FunctionInfo& fn_;
  const uint8_t* code_;
  uint32_t length_;
  uint8_t* starts_;
  bool check_targets_ = false;
  uint32_t pos_ = 0;
  uint32_t inst_ = 0;
  int opcode_ = -1;  // Of the instruction at inst_; -1 before the first.
};

}  // namespace

Status VerifyFunction(const BytecodeModule& module, uint32_t function_index, uint8_t* scratch) {
  const FunctionInfo& fn = module.function(function_index);
  memset(scratch, 0, (size_t(fn.code_length) + 7) / 8);
  FunctionVerifier verifier(module, function_index, scratch);
  OSPREY_RETURN_IF_ERROR(verifier.Run(/*check_targets=*/false));
  return verifier.Run(/*check_targets=*/true);
}

}  // namespace osprey::vm
