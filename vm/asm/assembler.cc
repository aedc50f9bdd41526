// The assembly parser.
#include "vm/asm/assembler.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <optional>

#include "vm/opcodes.h"

namespace osprey::vm {

namespace {

enum class TokenKind { kIdent, kSymbol, kRegister, kLabel, kNumber, kString, kPunct };

struct Token {
  TokenKind kind;
  std::string text;  // Without the sigil; strings unescaped.
  Bank bank = Bank::kI32;
  uint32_t reg = 0;
};

template <typename... Args>
Status LineError(int line, const char* format, Args... args) {
  char detail[512];
  snprintf(detail, sizeof(detail), format, args...);
  return InvalidArgumentError("line %d: %s", line, detail);
}

bool IsWordChar(char c) { return isalnum(uint8_t(c)) || c == '_' || c == '.'; }

bool BankFromRegisterLetter(char c, Bank* bank) {
  switch (c) {
    case 'i': *bank = Bank::kI32; return true;
    case 'l': *bank = Bank::kI64; return true;
    case 'f': *bank = Bank::kF32; return true;
    case 'd': *bank = Bank::kF64; return true;
    case 'r': *bank = Bank::kRef; return true;
    default: return false;
  }
}

Status Tokenize(std::string_view line, int line_number, std::vector<Token>* out) {
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    if (isspace(uint8_t(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < line.size() && line[i + 1] == '/') break;
    Token t;
    if (c == '"') {
      t.kind = TokenKind::kString;
      ++i;
      bool closed = false;
      while (i < line.size()) {
        char s = line[i++];
        if (s == '"') {
          closed = true;
          break;
        }
        if (s != '\\') {
          t.text.push_back(s);
          continue;
        }
        if (i >= line.size()) break;
        char e = line[i++];
        switch (e) {
          case 'n': t.text.push_back('\n'); break;
          case 't': t.text.push_back('\t'); break;
          case '\\': t.text.push_back('\\'); break;
          case '"': t.text.push_back('"'); break;
          case 'x': {
            if (i + 2 > line.size() || !isxdigit(uint8_t(line[i])) ||
                !isxdigit(uint8_t(line[i + 1]))) {
              return LineError(line_number, "bad \\x escape in string");
            }
            t.text.push_back(char(strtol(std::string(line.substr(i, 2)).c_str(), nullptr, 16)));
            i += 2;
            break;
          }
          default: return LineError(line_number, "unknown escape '\\%c' in string", e);
        }
      }
      if (!closed) return LineError(line_number, "unterminated string");
    } else if (c == '@' || c == '^' || c == '%') {
      size_t start = ++i;
      while (i < line.size() && IsWordChar(line[i])) ++i;
      std::string word(line.substr(start, i - start));
      if (word.empty()) return LineError(line_number, "expected a name after '%c'", c);
      if (c == '@') {
        t.kind = TokenKind::kSymbol;
      } else if (c == '^') {
        t.kind = TokenKind::kLabel;
      } else {
        t.kind = TokenKind::kRegister;
        char* end = nullptr;
        unsigned long index = word.size() > 1 ? strtoul(word.c_str() + 1, &end, 10) : 0;
        if (!BankFromRegisterLetter(word[0], &t.bank) || word.size() < 2 || *end != 0 ||
            !isdigit(uint8_t(word[1])) || index > 65535) {
          return LineError(line_number,
                           "bad register '%%%s' (expected %%i/%%l/%%f/%%d/%%r and an index "
                           "below 65536)",
                           word.c_str());
        }
        t.reg = uint32_t(index);
      }
      t.text = std::move(word);
    } else if (isdigit(uint8_t(c)) ||
               ((c == '-' || c == '+') && i + 1 < line.size() &&
                (isdigit(uint8_t(line[i + 1])) || line[i + 1] == 'i' || line[i + 1] == 'n'))) {
      t.kind = TokenKind::kNumber;
      size_t start = i++;
      while (i < line.size() &&
             (isalnum(uint8_t(line[i])) || line[i] == '.' ||
              ((line[i] == '-' || line[i] == '+') && (line[i - 1] == 'e' || line[i - 1] == 'E') &&
               !(line[start] == '0' && start + 1 < line.size() &&
                 (line[start + 1] == 'x' || line[start + 1] == 'X'))))) {
        ++i;
      }
      t.text = std::string(line.substr(start, i - start));
    } else if (isalpha(uint8_t(c)) || c == '_' || c == '.') {
      t.kind = TokenKind::kIdent;
      size_t start = i;
      while (i < line.size() && IsWordChar(line[i])) ++i;
      t.text = std::string(line.substr(start, i - start));
    } else if (c == '-' && i + 1 < line.size() && line[i + 1] == '>') {
      t.kind = TokenKind::kPunct;
      t.text = "->";
      i += 2;
    } else if (strchr("(),={}:", c)) {
      t.kind = TokenKind::kPunct;
      t.text = std::string(1, c);
      ++i;
    } else {
      return LineError(line_number, "unexpected character '%c'", c);
    }
    out->push_back(std::move(t));
  }
  return OkStatus();
}

// A cursor over one line's tokens.
class Cursor {
 public:
  Cursor(const std::vector<Token>& tokens, int line) : tokens_(tokens), line_(line) {}
  bool done() const { return pos_ >= tokens_.size(); }
  const Token* peek() const { return done() ? nullptr : &tokens_[pos_]; }
  bool PeekPunct(const char* p) const {
    return !done() && tokens_[pos_].kind == TokenKind::kPunct && tokens_[pos_].text == p;
  }
  bool PeekIdent(const char* p) const {
    return !done() && tokens_[pos_].kind == TokenKind::kIdent && tokens_[pos_].text == p;
  }
  bool ConsumePunct(const char* p) {
    if (!PeekPunct(p)) return false;
    ++pos_;
    return true;
  }
  bool ConsumeIdent(const char* p) {
    if (!PeekIdent(p)) return false;
    ++pos_;
    return true;
  }
  Status Expect(TokenKind kind, const char* what, const Token** out) {
    if (done() || tokens_[pos_].kind != kind) {
      return Error("expected %s%s%s", what, done() ? " at end of line" : ", got '",
                   done() ? "" : (tokens_[pos_].text + "'").c_str());
    }
    *out = &tokens_[pos_++];
    return OkStatus();
  }
  Status ExpectPunct(const char* p) {
    if (!ConsumePunct(p)) {
      return Error("expected '%s'%s%s", p, done() ? " at end of line" : " before '",
                   done() ? "" : (tokens_[pos_].text + "'").c_str());
    }
    return OkStatus();
  }
  Status ExpectEnd() {
    if (!done()) return Error("unexpected '%s'", tokens_[pos_].text.c_str());
    return OkStatus();
  }
  template <typename... Args>
  Status Error(const char* format, Args... args) const {
    return LineError(line_, format, args...);
  }
  int line() const { return line_; }

 private:
  const std::vector<Token>& tokens_;
  int line_;
  size_t pos_ = 0;
};

Status ParseInteger(const Cursor& cur, const std::string& text, int64_t min, uint64_t max,
                    int64_t* out) {
  errno = 0;
  char* end = nullptr;
  bool negative = !text.empty() && text[0] == '-';
  if (negative) {
    long long v = strtoll(text.c_str(), &end, 0);
    if (errno || *end || v < min) return cur.Error("bad or out-of-range integer '%s'", text.c_str());
    *out = v;
  } else {
    unsigned long long v = strtoull(text.c_str(), &end, 0);
    if (errno || *end || v > max) return cur.Error("bad or out-of-range integer '%s'", text.c_str());
    *out = int64_t(v);
  }
  return OkStatus();
}

Status ParseNumberToken(Cursor& cur, int64_t min, uint64_t max, int64_t* out) {
  const Token* t;
  OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kNumber, "an integer", &t));
  return ParseInteger(cur, t->text, min, max, out);
}

Status ParseFloat(Cursor& cur, double* out) {
  const Token* t = cur.peek();
  if (!t || (t->kind != TokenKind::kNumber && t->kind != TokenKind::kIdent)) {
    return cur.Error("expected a floating-point number");
  }
  cur.Expect(t->kind, "", &t).IgnoreError();
  char* end = nullptr;
  *out = strtod(t->text.c_str(), &end);
  if (*end) return cur.Error("bad floating-point number '%s'", t->text.c_str());
  return OkStatus();
}

bool TypeFromName(const std::string& name, char* out) {
  if (name == "i32") *out = 'i';
  else if (name == "i64") *out = 'I';
  else if (name == "f32") *out = 'f';
  else if (name == "f64") *out = 'F';
  else if (name == "ref") *out = 'r';
  else return false;
  return true;
}

// "(t, t) -> (t)" into a signature string.
Status ParseSignatureTypes(Cursor& cur, std::string* out) {
  std::string sig;
  auto list = [&]() -> Status {
    OSPREY_RETURN_IF_ERROR(cur.ExpectPunct("("));
    if (cur.ConsumePunct(")")) return OkStatus();
    while (true) {
      const Token* t;
      OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kIdent, "a type (i32, i64, f32, f64, ref)", &t));
      char c;
      if (!TypeFromName(t->text, &c)) return cur.Error("unknown type '%s'", t->text.c_str());
      sig.push_back(c);
      if (cur.ConsumePunct(")")) return OkStatus();
      OSPREY_RETURN_IF_ERROR(cur.ExpectPunct(","));
    }
  };
  OSPREY_RETURN_IF_ERROR(list());
  sig.push_back(':');
  if (cur.ConsumePunct("->")) OSPREY_RETURN_IF_ERROR(list());
  *out = sig;
  return OkStatus();
}

bool StatusCodeFromName(const std::string& name, StatusCode* out) {
  for (int c = 1; c <= int(StatusCode::kDataLoss); ++c) {
    if (name == StatusCodeName(StatusCode(c))) {
      *out = StatusCode(c);
      return true;
    }
  }
  return false;
}

std::vector<uint8_t> HexDecode(const std::string& hex, bool* ok) {
  std::vector<uint8_t> bytes;
  std::string digits;
  for (char c : hex) {
    if (isspace(uint8_t(c))) continue;
    digits.push_back(c);
  }
  *ok = digits.size() % 2 == 0;
  for (size_t i = 0; *ok && i < digits.size(); i += 2) {
    if (!isxdigit(uint8_t(digits[i])) || !isxdigit(uint8_t(digits[i + 1]))) {
      *ok = false;
      break;
    }
    bytes.push_back(uint8_t(strtol(digits.substr(i, 2).c_str(), nullptr, 16)));
  }
  return bytes;
}

struct Line {
  int number;
  std::vector<Token> tokens;
};

struct FunctionSource {
  uint32_t index;
  size_t header;       // Index of the header line.
  size_t body_begin;   // First body line.
  size_t body_end;     // The closing '}' line.
  std::array<uint16_t, kBankCount> declared_registers{};
};

class Parser {
 public:
  explicit Parser(ModuleBuilder* builder) : b_(builder) {}

  Status Run(std::string_view text) {
    int number = 0;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      ++number;
      Line line{number, {}};
      OSPREY_RETURN_IF_ERROR(Tokenize(text.substr(start, end - start), number, &line.tokens));
      if (!line.tokens.empty()) lines_.push_back(std::move(line));
      start = end + 1;
    }
    OSPREY_RETURN_IF_ERROR(Declarations());
    OSPREY_RETURN_IF_ERROR(Definitions());
    return OkStatus();
  }

 private:
  // Pass 1: module header, imports, globals, segments, function headers.
  Status Declarations() {
    bool have_module = false;
    for (size_t i = 0; i < lines_.size(); ++i) {
      Cursor cur(lines_[i].tokens, lines_[i].number);
      const Token* kw;
      OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kIdent, "a declaration", &kw));
      if (kw->text == "module") {
        const Token* name;
        OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kSymbol, "@name", &name));
        b_->set_name(name->text);
        if (cur.ConsumeIdent("version")) {
          int64_t v;
          OSPREY_RETURN_IF_ERROR(ParseNumberToken(cur, 0, UINT32_MAX, &v));
          b_->set_version(uint32_t(v));
        }
        OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
        have_module = true;
      } else if (kw->text == "import") {
        const Token* name;
        OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kSymbol, "@module.function", &name));
        std::string sig;
        OSPREY_RETURN_IF_ERROR(ParseSignatureTypes(cur, &sig));
        OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
        if (b_->FindImport(name->text)) return cur.Error("import @%s declared twice", name->text.c_str());
        b_->AddImport(name->text, sig);
      } else if (kw->text == "globals") {
        while (!cur.done()) {
          const Token* type;
          OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kIdent, "a type", &type));
          char c;
          Bank bank;
          if (!TypeFromName(type->text, &c) || !BankFromChar(c, &bank)) {
            return cur.Error("unknown type '%s'", type->text.c_str());
          }
          OSPREY_RETURN_IF_ERROR(cur.ExpectPunct("="));
          int64_t count;
          OSPREY_RETURN_IF_ERROR(ParseNumberToken(cur, 0, UINT32_MAX, &count));
          b_->SetGlobalCount(bank, uint32_t(count));
        }
      } else if (kw->text == "rodata" || kw->text == "executable") {
        bool executable = kw->text == "executable";
        std::string format, name;
        if (executable) {
          const Token* f;
          OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kString, "a format string", &f));
          format = f->text;
        }
        if (cur.peek() && cur.peek()->kind == TokenKind::kSymbol) {
          const Token* n;
          OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kSymbol, "@name", &n));
          name = n->text;
        }
        int64_t alignment = 16;
        if (cur.ConsumeIdent("align")) {
          OSPREY_RETURN_IF_ERROR(ParseNumberToken(cur, 0, UINT32_MAX, &alignment));
        }
        std::vector<uint8_t> data;
        if (cur.ConsumeIdent("hex")) {
          const Token* s;
          OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kString, "a hex string", &s));
          bool ok;
          data = HexDecode(s->text, &ok);
          if (!ok) return cur.Error("bad hex data");
        } else if (cur.ConsumeIdent("text")) {
          const Token* s;
          OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kString, "a string", &s));
          data.assign(s->text.begin(), s->text.end());
        } else if (cur.ConsumeIdent("zeros")) {
          int64_t n;
          OSPREY_RETURN_IF_ERROR(ParseNumberToken(cur, 0, 1u << 30, &n));
          data.assign(size_t(n), 0);
        } else if (!cur.done()) {
          return cur.Error("expected hex \"..\", text \"..\" or zeros N");
        }
        OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
        if (executable) {
          b_->AddExecutable(format, name, std::move(data), uint32_t(alignment));
        } else {
          if (!name.empty() && b_->FindRodata(name)) {
            return cur.Error("rodata @%s declared twice", name.c_str());
          }
          b_->AddRodata(name, std::move(data), uint32_t(alignment));
        }
      } else if (kw->text == "attribute") {
        const Token* key;
        const Token* value;
        OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kString, "a key string", &key));
        OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kString, "a value string", &value));
        OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
        if (key->text.empty()) return cur.Error("attribute key is empty");
        if (!attribute_keys_.insert(key->text).second) {
          return cur.Error("attribute \"%s\" declared twice", key->text.c_str());
        }
        b_->SetAttribute(key->text, value->text);
      } else if (kw->text == "initializer" || kw->text == "export") {
        continue;  // Pass 2: may name functions declared later.
      } else if (kw->text == "func") {
        OSPREY_RETURN_IF_ERROR(FunctionHeader(i, cur));
        // Skip the body.
        size_t j = i + 1;
        while (j < lines_.size() &&
               !(lines_[j].tokens.size() == 1 && lines_[j].tokens[0].kind == TokenKind::kPunct &&
                 lines_[j].tokens[0].text == "}")) {
          ++j;
        }
        if (j == lines_.size()) return cur.Error("function body has no closing '}'");
        functions_.back().body_begin = i + 1;
        functions_.back().body_end = j;
        i = j;
      } else {
        return cur.Error("unknown declaration '%s'", kw->text.c_str());
      }
    }
    if (!have_module) return InvalidArgumentError("line 1: missing 'module @name' declaration");
    return OkStatus();
  }

  Status FunctionHeader(size_t line_index, Cursor& cur) {
    const Token* name;
    OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kSymbol, "@name", &name));
    if (b_->FindFunction(name->text)) return cur.Error("function @%s defined twice", name->text.c_str());
    std::string sig;
    OSPREY_RETURN_IF_ERROR(ParseSignatureTypes(cur, &sig));
    FunctionSource f;
    f.header = line_index;
    if (cur.ConsumeIdent("regs")) {
      OSPREY_RETURN_IF_ERROR(cur.ExpectPunct("("));
      while (!cur.ConsumePunct(")")) {
        const Token* bank_name;
        OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kIdent, "a bank letter (i, l, f, d, r)", &bank_name));
        Bank bank;
        if (bank_name->text.size() != 1 || !BankFromRegisterLetter(bank_name->text[0], &bank)) {
          return cur.Error("unknown register bank '%s'", bank_name->text.c_str());
        }
        OSPREY_RETURN_IF_ERROR(cur.ExpectPunct("="));
        int64_t count;
        OSPREY_RETURN_IF_ERROR(ParseNumberToken(cur, 0, 65535, &count));
        f.declared_registers[int(bank)] = uint16_t(count);
        cur.ConsumePunct(",");
      }
    }
    cur.ConsumeIdent("export");
    OSPREY_RETURN_IF_ERROR(cur.ExpectPunct("{"));
    OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
    f.index = b_->DeclareFunction(name->text, sig);
    functions_.push_back(f);
    return OkStatus();
  }

  // Pass 2: exports, initializer and function bodies, in textual order.
  Status Definitions() {
    size_t next_function = 0;
    for (size_t i = 0; i < lines_.size(); ++i) {
      Cursor cur(lines_[i].tokens, lines_[i].number);
      const Token* kw;
      OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kIdent, "a declaration", &kw));
      if (kw->text == "export") {
        const Token* name;
        const Token* fn;
        OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kSymbol, "@export_name", &name));
        OSPREY_RETURN_IF_ERROR(cur.ExpectPunct("="));
        OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kSymbol, "@function", &fn));
        OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
        auto index = b_->FindFunction(fn->text);
        if (!index) return cur.Error("unknown function @%s", fn->text.c_str());
        b_->AddExport(name->text, *index);
      } else if (kw->text == "initializer") {
        const Token* fn;
        OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kSymbol, "@function", &fn));
        OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
        auto index = b_->FindFunction(fn->text);
        if (!index) return cur.Error("unknown function @%s", fn->text.c_str());
        b_->SetInitializer(int32_t(*index));
      } else if (kw->text == "func") {
        const FunctionSource& f = functions_[next_function++];
        // "export" in the header exports under the function's own name.
        for (const Token& t : lines_[i].tokens) {
          if (t.kind == TokenKind::kIdent && t.text == "export") {
            b_->AddExport(lines_[i].tokens[1].text, f.index);
          }
        }
        OSPREY_RETURN_IF_ERROR(FunctionBody(f));
        i = f.body_end;
      }
    }
    return OkStatus();
  }

  struct BodyState {
    BytecodeWriter writer;
    std::map<std::string, BytecodeWriter::Label> labels;
    std::map<std::string, int> label_lines;
    std::array<uint32_t, kBankCount> used{};  // Max index + 1.
    std::string signature;
  };

  BytecodeWriter::Label GetLabel(BodyState& s, const std::string& name) {
    auto it = s.labels.find(name);
    if (it != s.labels.end()) return it->second;
    BytecodeWriter::Label label = s.writer.NewLabel();
    s.labels[name] = label;
    return label;
  }

  Status Register(Cursor& cur, BodyState& s, Bank bank, uint16_t* out, const char* context) {
    const Token* t;
    OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kRegister, "a register", &t));
    if (t->bank != bank) {
      return cur.Error("%s: expected a %s register, got %%%s", context, BankName(bank),
                       t->text.c_str());
    }
    if (t->reg + 1 > s.used[int(bank)]) s.used[int(bank)] = t->reg + 1;
    *out = uint16_t(t->reg);
    return OkStatus();
  }

  Status RegisterList(Cursor& cur, BodyState& s, const char* types, size_t count,
                      bool parenthesized, const char* what, std::vector<uint16_t>* out) {
    if (parenthesized) OSPREY_RETURN_IF_ERROR(cur.ExpectPunct("("));
    std::vector<uint16_t> regs;
    bool first = true;
    while (parenthesized ? !cur.PeekPunct(")") : !cur.done()) {
      if (!first) OSPREY_RETURN_IF_ERROR(cur.ExpectPunct(","));
      first = false;
      if (regs.size() >= count) return cur.Error("too many %s registers (signature has %zu)", what, count);
      Bank bank;
      BankFromChar(types[regs.size()], &bank);
      char context[64];
      snprintf(context, sizeof(context), "%s %zu", what, regs.size());
      uint16_t r;
      OSPREY_RETURN_IF_ERROR(Register(cur, s, bank, &r, context));
      regs.push_back(r);
    }
    if (parenthesized) OSPREY_RETURN_IF_ERROR(cur.ExpectPunct(")"));
    if (regs.size() != count) {
      return cur.Error("%s list has %zu registers, signature has %zu", what, regs.size(), count);
    }
    *out = std::move(regs);
    return OkStatus();
  }

  Status Call(Cursor& cur, BodyState& s, bool import_only, Opcode* out_opcode,
              BytecodeWriter* scratch) {
    const Token* name;
    OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kSymbol, "@callee", &name));
    std::string sig;
    uint32_t index;
    if (auto f = b_->FindFunction(name->text); f && !import_only) {
      *out_opcode = Opcode::kCall;
      index = *f;
      sig = b_->function_signature(index);
    } else if (auto imp = b_->FindImport(name->text)) {
      *out_opcode = Opcode::kCallImport;
      index = *imp;
      sig = b_->import_signature(index);
    } else {
      return cur.Error("unknown %s @%s", import_only ? "import" : "function", name->text.c_str());
    }
    size_t colon = sig.find(':');
    std::vector<uint16_t> args, results;
    OSPREY_RETURN_IF_ERROR(RegisterList(cur, s, sig.c_str(), colon, true, "argument", &args));
    if (cur.ConsumePunct("->")) {
      OSPREY_RETURN_IF_ERROR(RegisterList(cur, s, sig.c_str() + colon + 1, sig.size() - colon - 1,
                                          true, "result", &results));
    } else if (sig.size() - colon - 1 != 0) {
      return cur.Error("call to @%s needs '-> (...)' for its %zu results", name->text.c_str(),
                       sig.size() - colon - 1);
    }
    scratch->U32(index);
    scratch->RegList(args);
    scratch->RegList(results);
    return OkStatus();
  }

  Status Failure(Cursor& cur, BodyState& s, BytecodeWriter* w) {
    const Token* code_token = cur.peek();
    StatusCode code;
    if (!code_token || code_token->kind != TokenKind::kIdent ||
        !StatusCodeFromName(code_token->text, &code)) {
      return cur.Error("expected a status code name such as INVALID_ARGUMENT");
    }
    cur.Expect(TokenKind::kIdent, "", &code_token).IgnoreError();
    OSPREY_RETURN_IF_ERROR(cur.ExpectPunct(","));
    const Token* message;
    OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kString, "a message string", &message));
    if (message->text.size() > 65535) return cur.Error("message too long");
    std::vector<std::pair<Bank, uint16_t>> args;
    while (cur.ConsumePunct(",")) {
      const Token* t;
      OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kRegister, "a register", &t));
      if (t->reg + 1 > s.used[int(t->bank)]) s.used[int(t->bank)] = t->reg + 1;
      args.push_back({t->bank, uint16_t(t->reg)});
    }
    w->FailurePayload(code, message->text, args);
    return OkStatus();
  }

  Status Instruction(Cursor& cur, BodyState& s) {
    const Token* mnemonic;
    OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kIdent, "a mnemonic", &mnemonic));
    std::optional<Opcode> opcode;
    for (int op = 0; op < int(Opcode::kCount); ++op) {
      if (mnemonic->text == GetOpcodeMnemonic(uint8_t(op))) opcode = Opcode(op);
    }
    if (!opcode) return cur.Error("unknown mnemonic '%s'", mnemonic->text.c_str());
    OpcodeInfo entry;
    const OpcodeInfo* info = GetOpcodeInfo(uint8_t(*opcode), &entry);
    BytecodeWriter operands;  // Operand bytes; branch targets go straight to s.writer.
    std::vector<std::pair<size_t, BytecodeWriter::Label>> targets;
    bool first = true;
    for (const char* k = info->operands; *k; ++k) {
      if (!first && *k != 'C' && *k != 'M') OSPREY_RETURN_IF_ERROR(cur.ExpectPunct(","));
      first = false;
      char context[64];
      snprintf(context, sizeof(context), "operand %d of %s", int(k - info->operands),
               GetOpcodeMnemonic(uint8_t(*opcode)));
      Bank bank;
      switch (*k) {
        case 'i': case 'I': case 'f': case 'F': case 'r': {
          BankFromChar(*k, &bank);
          uint16_t r;
          OSPREY_RETURN_IF_ERROR(Register(cur, s, bank, &r, context));
          operands.Reg(r);
          break;
        }
        case '4': {
          int64_t v;
          OSPREY_RETURN_IF_ERROR(ParseNumberToken(cur, INT32_MIN, UINT32_MAX, &v));
          operands.I32(int32_t(uint32_t(v)));
          break;
        }
        case '8': {
          int64_t v;
          OSPREY_RETURN_IF_ERROR(ParseNumberToken(cur, INT64_MIN, UINT64_MAX, &v));
          operands.I64(v);
          break;
        }
        case 'x': {
          double v;
          OSPREY_RETURN_IF_ERROR(ParseFloat(cur, &v));
          operands.F32(float(v));
          break;
        }
        case 'X': {
          double v;
          OSPREY_RETURN_IF_ERROR(ParseFloat(cur, &v));
          operands.F64(v);
          break;
        }
        case 'B': {
          const Token* label;
          OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kLabel, "a ^label", &label));
          targets.push_back({operands.offset(), GetLabel(s, label->text)});
          operands.U32(0);
          break;
        }
        case 'S': {
          const Token* t = cur.peek();
          if (t && t->kind == TokenKind::kSymbol) {
            cur.Expect(TokenKind::kSymbol, "", &t).IgnoreError();
            auto index = b_->FindRodata(t->text);
            if (!index) return cur.Error("unknown rodata segment @%s", t->text.c_str());
            operands.U32(*index);
          } else {
            int64_t v;
            OSPREY_RETURN_IF_ERROR(ParseNumberToken(cur, 0, UINT32_MAX, &v));
            operands.U32(uint32_t(v));
          }
          break;
        }
        case 'a': case 'b': case 'c': case 'd': case 'e': {
          int64_t v;
          OSPREY_RETURN_IF_ERROR(ParseNumberToken(cur, 0, UINT32_MAX, &v));
          operands.U32(uint32_t(v));
          break;
        }
        case 'C':
        case 'M': {
          Opcode resolved;
          OSPREY_RETURN_IF_ERROR(Call(cur, s, *k == 'M', &resolved, &operands));
          opcode = resolved;
          break;
        }
        case 'R': {
          const char* results = strchr(s.signature.c_str(), ':') + 1;
          std::vector<uint16_t> regs;
          OSPREY_RETURN_IF_ERROR(
              RegisterList(cur, s, results, strlen(results), false, "return", &regs));
          operands.RegList(regs);
          break;
        }
        case 'E':
          OSPREY_RETURN_IF_ERROR(Failure(cur, s, &operands));
          break;
        default:
          return cur.Error("internal: unknown operand kind '%c'", *k);
      }
    }
    OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
    // Emit: opcode, then operand bytes with branch targets as fixups.
    s.writer.Op(*opcode);
    OSPREY_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, operands.Finish());
    size_t written = 0;
    for (const auto& [at, label] : targets) {
      s.writer.Bytes(bytes.data() + written, at - written);
      s.writer.Target(label);
      written = at + 4;
    }
    s.writer.Bytes(bytes.data() + written, bytes.size() - written);
    return OkStatus();
  }

  Status FunctionBody(const FunctionSource& f) {
    BodyState s;
    s.signature = b_->function_signature(f.index);
    for (size_t i = f.body_begin; i < f.body_end; ++i) {
      Cursor cur(lines_[i].tokens, lines_[i].number);
      const Token* first = cur.peek();
      if (first->kind == TokenKind::kLabel) {
        const Token* label;
        cur.Expect(TokenKind::kLabel, "", &label).IgnoreError();
        OSPREY_RETURN_IF_ERROR(cur.ExpectPunct(":"));
        OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
        if (s.label_lines.count(label->text)) {
          return cur.Error("label ^%s defined twice", label->text.c_str());
        }
        s.label_lines[label->text] = cur.line();
        OSPREY_RETURN_IF_ERROR(s.writer.Bind(GetLabel(s, label->text)));
        continue;
      }
      if (first->kind == TokenKind::kIdent && first->text == ".loc") {
        const Token* t;
        cur.Expect(TokenKind::kIdent, "", &t).IgnoreError();
        OSPREY_RETURN_IF_ERROR(cur.Expect(TokenKind::kString, "a location string", &t));
        OSPREY_RETURN_IF_ERROR(cur.ExpectEnd());
        s.writer.SetLocation(t->text);
        continue;
      }
      OSPREY_RETURN_IF_ERROR(Instruction(cur, s));
    }
    for (const auto& [name, label] : s.labels) {
      if (!s.label_lines.count(name)) {
        return LineError(lines_[f.header].number, "label ^%s is used but never defined",
                         name.c_str());
      }
    }
    std::vector<std::pair<uint32_t, std::string>> locations = s.writer.locations();
    OSPREY_ASSIGN_OR_RETURN(std::vector<uint8_t> code, s.writer.Finish());
    locations = s.writer.locations();
    std::array<uint16_t, kBankCount> counts{};
    size_t colon = s.signature.find(':');
    for (int b = 0; b < kBankCount; ++b) {
      uint32_t n = std::max<uint32_t>(s.used[b], f.declared_registers[b]);
      uint32_t args = 0;
      for (size_t k = 0; k < colon; ++k) args += s.signature[k] == BankChar(Bank(b));
      counts[b] = uint16_t(std::max(n, args));
    }
    b_->DefineFunction(f.index, std::move(code), counts, std::move(locations));
    return OkStatus();
  }

  ModuleBuilder* b_;
  std::vector<Line> lines_;
  std::vector<FunctionSource> functions_;
  std::set<std::string> attribute_keys_;
};

}  // namespace

Status Assemble(std::string_view text, ModuleBuilder* builder) {
  Parser parser(builder);
  return parser.Run(text);
}

StatusOr<std::vector<uint8_t>> AssembleModule(std::string_view text, const BuildOptions& options) {
  ModuleBuilder builder;
  OSPREY_RETURN_IF_ERROR(Assemble(text, &builder));
  return builder.Build(options);
}

}  // namespace osprey::vm
