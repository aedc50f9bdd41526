// The assembly printer (disassembler).
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "runtime/base/allocator.h"
#include "vm/asm/assembler.h"
#include "vm/bytecode.h"
#include "vm/bytecode_module.h"
#include "vm/opcodes.h"

namespace osprey::vm {

namespace {

const char* TypeName(char c) {
  switch (c) {
    case 'i': return "i32";
    case 'I': return "i64";
    case 'f': return "f32";
    case 'F': return "f64";
    default: return "ref";
  }
}

char RegisterLetter(Bank bank) {
  static constexpr char kLetters[kBankCount] = {'i', 'l', 'f', 'd', 'r'};
  return kLetters[int(bank)];
}

void AppendF(std::string* out, const char* format, ...) OSPREY_PRINTF_FORMAT(2, 3);
void AppendF(std::string* out, const char* format, ...) {
  char buffer[256];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  if (n < 0) return;
  if (size_t(n) < sizeof(buffer)) {
    out->append(buffer, size_t(n));
    return;
  }
  std::string big(size_t(n) + 1, '\0');
  va_start(args, format);
  vsnprintf(big.data(), big.size(), format, args);
  va_end(args);
  big.resize(size_t(n));
  out->append(big);
}

void AppendQuoted(std::string* out, const char* data, size_t length) {
  out->push_back('"');
  for (size_t i = 0; i < length; ++i) {
    uint8_t c = uint8_t(data[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(char(c));
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c < 0x20 || c >= 0x7f) {
      AppendF(out, "\\x%02x", c);
    } else {
      out->push_back(char(c));
    }
  }
  out->push_back('"');
}

void AppendSignature(std::string* out, const Signature& sig) {
  out->push_back('(');
  for (uint8_t k = 0; k < sig.arg_count; ++k) {
    if (k) out->append(", ");
    out->append(TypeName(sig.args[k]));
  }
  out->push_back(')');
  if (sig.result_count) {
    out->append(" -> (");
    for (uint8_t k = 0; k < sig.result_count; ++k) {
      if (k) out->append(", ");
      out->append(TypeName(sig.results[k]));
    }
    out->push_back(')');
  }
}

void AppendHex(std::string* out, const uint8_t* data, size_t length) {
  out->append("hex \"");
  for (size_t i = 0; i < length; ++i) AppendF(out, "%02x", data[i]);
  out->push_back('"');
}

void AppendFloat(std::string* out, double v, bool is_f32) {
  if (std::isnan(v)) {
    out->append("nan");
  } else if (std::isinf(v)) {
    out->append(v < 0 ? "-inf" : "inf");
  } else {
    AppendF(out, is_f32 ? "%.9g" : "%.17g", v);
  }
}

class Printer {
 public:
  explicit Printer(const BytecodeModule& m) : m_(m) {}

  std::string Run() {
    AppendF(&out_, "module @%s version %u\n", m_.name(), m_.version());
    for (uint32_t i = 0; i < m_.import_count(); ++i) {
      const ImportInfo& imp = m_.import(i);
      AppendF(&out_, "import @%s", imp.full_name);
      AppendSignature(&out_, imp.signature);
      out_.push_back('\n');
    }
    bool any_globals = false;
    for (int b = 0; b < kBankCount; ++b) any_globals |= m_.global_count(Bank(b)) != 0;
    if (any_globals) {
      out_.append("globals");
      for (int b = 0; b < kBankCount; ++b) {
        if (m_.global_count(Bank(b))) {
          AppendF(&out_, " %s=%u", BankName(Bank(b)), m_.global_count(Bank(b)));
        }
      }
      out_.push_back('\n');
    }
    for (uint32_t i = 0; i < m_.rodata_count(); ++i) {
      const SegmentInfo& s = m_.rodata(i);
      out_.append("rodata");
      if (*s.name) AppendF(&out_, " @%s", s.name);
      AppendF(&out_, " align %u ", s.alignment);
      AppendHex(&out_, s.data, s.length);
      out_.push_back('\n');
    }
    for (uint32_t i = 0; i < m_.executable_count(); ++i) {
      const ExecutableInfo& e = m_.executable(i);
      out_.append("executable ");
      AppendQuoted(&out_, e.format, strlen(e.format));
      if (*e.name) AppendF(&out_, " @%s", e.name);
      AppendF(&out_, " align %u ", e.alignment);
      AppendHex(&out_, e.data, e.length);
      out_.push_back('\n');
    }
    for (uint32_t i = 0; i < m_.function_count(); ++i) Function(i);
    for (uint32_t i = 0; i < m_.export_count(); ++i) {
      ExportInfo e = m_.export_info(i);
      AppendF(&out_, "export @%s = @%s\n", e.name, m_.function(e.function_ordinal).name);
    }
    if (m_.initializer() >= 0) {
      AppendF(&out_, "initializer @%s\n", m_.function(uint32_t(m_.initializer())).name);
    }
    for (uint32_t i = 0; i < m_.attribute_count(); ++i) {
      const AttributeInfo attribute = m_.attribute(i);
      out_.append("attribute ");
      AppendQuoted(&out_, attribute.key, strlen(attribute.key));
      out_.push_back(' ');
      AppendQuoted(&out_, attribute.value, strlen(attribute.value));
      out_.push_back('\n');
    }
    return std::move(out_);
  }

 private:
  // Byte size of the instruction at |pc| (code already verified).
  static uint32_t InstructionSize(const uint8_t* pc, const BytecodeModule& m) {
    OpcodeInfo entry;
    const OpcodeInfo* info = GetOpcodeInfo(*pc, &entry);
    uint32_t n = 1;
    for (const char* k = info->operands; *k; ++k) {
      switch (*k) {
        case 'i': case 'I': case 'f': case 'F': case 'r': n += 2; break;
        case '4': case 'x': case 'B': case 'S': case 'a': case 'b': case 'c': case 'd': case 'e':
          n += 4;
          break;
        case '8': case 'X': n += 8; break;
        case 'C': case 'M': {
          n += 4;
          n += 1 + 2 * pc[n];
          n += 1 + 2 * pc[n];
          break;
        }
        case 'R': n += 1 + 2 * pc[n]; break;
        case 'E': {
          uint16_t length = ReadU16(pc + n + 1);
          n += 3 + length;
          n += 1 + 3 * pc[n];
          break;
        }
      }
    }
    return n;
  }

  void RegisterList(const uint8_t* list, const char* types) {
    for (uint8_t k = 0; k < list[0]; ++k) {
      if (k) out_.append(", ");
      Bank bank;
      BankFromChar(types[k], &bank);
      AppendF(&out_, "%%%c%u", RegisterLetter(bank), ReadU16(list + 1 + 2 * k));
    }
  }

  void Function(uint32_t index) {
    const FunctionInfo& fn = m_.function(index);
    AppendF(&out_, "func @%s", fn.name);
    AppendSignature(&out_, fn.signature);
    out_.append(" regs(");
    for (int b = 0; b < kBankCount; ++b) {
      AppendF(&out_, "%s%c=%u", b ? ", " : "", RegisterLetter(Bank(b)), fn.register_counts[b]);
    }
    out_.append(") {\n");
    // Labels at every branch target.
    std::set<uint32_t> targets;
    for (uint32_t pos = 0; pos < fn.code_length;) {
      const uint8_t* pc = fn.code + pos;
      OpcodeInfo entry;
      const OpcodeInfo* info = GetOpcodeInfo(*pc, &entry);
      uint32_t at = 1;
      for (const char* k = info->operands; *k; ++k) {
        if (*k == 'B') targets.insert(ReadU32(pc + at));
        at += (*k == 'B' || *k == '4' || *k == 'x' || *k == 'S' ||
               (*k >= 'a' && *k <= 'e'))
                  ? 4
                  : (*k == '8' || *k == 'X') ? 8 : 2;
      }
      pos += InstructionSize(pc, m_);
    }
    const char* location = nullptr;
    current_results_ = fn.signature.results;
    for (uint32_t pos = 0; pos < fn.code_length;) {
      const uint8_t* pc = fn.code + pos;
      if (targets.count(pos)) AppendF(&out_, "^L%u:\n", pos);
      const char* here = m_.SourceLocation(index, pos);
      if (here && (!location || strcmp(here, location) != 0)) {
        out_.append("  .loc ");
        AppendQuoted(&out_, here, strlen(here));
        out_.push_back('\n');
      }
      location = here;
      Instruction(pc);
      out_.push_back('\n');
      pos += InstructionSize(pc, m_);
    }
    out_.append("}\n");
  }

  void Instruction(const uint8_t* pc) {
    OpcodeInfo entry;
    const OpcodeInfo* info = GetOpcodeInfo(*pc, &entry);
    AppendF(&out_, "  %s", GetOpcodeMnemonic(*pc));
    const uint8_t* p = pc + 1;
    bool first = true;
    for (const char* k = info->operands; *k; ++k) {
      out_.append(first ? " " : ", ");
      first = false;
      Bank bank;
      switch (*k) {
        case 'i': case 'I': case 'f': case 'F': case 'r':
          BankFromChar(*k, &bank);
          AppendF(&out_, "%%%c%u", RegisterLetter(bank), ReadU16(p));
          p += 2;
          break;
        case '4':
          AppendF(&out_, "%d", int32_t(ReadU32(p)));
          p += 4;
          break;
        case '8':
          AppendF(&out_, "%" PRId64, int64_t(ReadU64(p)));
          p += 8;
          break;
        case 'x':
          AppendFloat(&out_, ReadF32(p), true);
          p += 4;
          break;
        case 'X':
          AppendFloat(&out_, ReadF64(p), false);
          p += 8;
          break;
        case 'B':
          AppendF(&out_, "^L%u", ReadU32(p));
          p += 4;
          break;
        case 'S': {
          uint32_t index = ReadU32(p);
          const char* name = m_.rodata(index).name;
          if (*name) {
            AppendF(&out_, "@%s", name);
          } else {
            AppendF(&out_, "%u", index);
          }
          p += 4;
          break;
        }
        case 'a': case 'b': case 'c': case 'd': case 'e':
          AppendF(&out_, "%u", ReadU32(p));
          p += 4;
          break;
        case 'C':
        case 'M': {
          uint32_t index = ReadU32(p);
          const Signature& sig =
              *k == 'C' ? m_.function(index).signature : m_.import(index).signature;
          AppendF(&out_, "@%s(", *k == 'C' ? m_.function(index).name : m_.import(index).full_name);
          p += 4;
          RegisterList(p, sig.args);
          p += 1 + 2 * p[0];
          out_.push_back(')');
          if (sig.result_count) {
            out_.append(" -> (");
            RegisterList(p, sig.results);
            out_.push_back(')');
          }
          p += 1 + 2 * p[0];
          break;
        }
        case 'R': {
          out_.pop_back();  // No separator before an empty list.
          if (p[0]) out_.push_back(' ');
          RegisterList(p, current_results_);
          p += 1 + 2 * p[0];
          break;
        }
        case 'E': {
          out_.append(StatusCodeName(StatusCode(p[0])));
          uint16_t length = ReadU16(p + 1);
          out_.append(", ");
          AppendQuoted(&out_, reinterpret_cast<const char*>(p + 3), length);
          p += 3 + length;
          uint8_t argc = p[0];
          for (uint8_t a = 0; a < argc; ++a) {
            AppendF(&out_, ", %%%c%u", RegisterLetter(Bank(p[1 + 3 * a])),
                    ReadU16(p + 2 + 3 * a));
          }
          p += 1 + 3 * argc;
          break;
        }
      }
    }
  }

  const BytecodeModule& m_;
  const char* current_results_ = "";
  std::string out_;
};

}  // namespace

StatusOr<std::string> Disassemble(std::span<const uint8_t> file) {
  OSPREY_ASSIGN_OR_RETURN(ref_ptr<BytecodeModule> module,
                          BytecodeModule::Load(file, nullptr, Allocator::Default(),
                                               // Prints what is there; checking digests is
                                               // up to whoever runs the module.
                                               LoadOptions{IntegrityCheck::kNone}));
  Printer printer(*module);
  return printer.Run();
}

}  // namespace osprey::vm
