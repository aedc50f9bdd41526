// Parses the textual graph IR produced by printer.cpp.
#include <cctype>
#include <cstdlib>
#include <unordered_map>

#include "compiler/graph/ir_text.h"
#include "compiler/graph/op_registry.h"
#include "compiler/graph/status.h"

namespace osprey::compiler::graph {
namespace {

// A dense literal before its element type is known.
struct DenseLiteral {
  bool hex = false;
  std::vector<uint8_t> bytes;
  std::vector<double> values;
  std::vector<int64_t> ints;  // exact integer spelling, parallel to |values|
  std::vector<bool> isInt;
};

class Parser {
public:
  Parser(llvm::StringRef text, llvm::StringRef bufferName)
      : text_(text), bufferName_(bufferName) {}

  absl::StatusOr<std::unique_ptr<Graph>> parse() {
    auto graph = std::make_unique<Graph>();
    skipSpace();
    COMPILER_RETURN_IF_ERROR(expectKeyword("graph"));
    COMPILER_RETURN_IF_ERROR(expect('@'));
    graph->setName(parseIdent());
    COMPILER_RETURN_IF_ERROR(expect('('));
    if (!consume(')')) {
      do {
        std::string name;
        COMPILER_RETURN_IF_ERROR(parseValueName(name));
        std::string modelName = name;
        COMPILER_RETURN_IF_ERROR(parseModelName(modelName));
        COMPILER_RETURN_IF_ERROR(expect(':'));
        TensorType type;
        COMPILER_RETURN_IF_ERROR(parseType(type));
        if (values_.count(name)) {
          return error("value %" + name + " is defined twice");
        }
        values_[name] = graph->addInput(modelName, type);
      } while (consume(','));
      COMPILER_RETURN_IF_ERROR(expect(')'));
    }
    COMPILER_RETURN_IF_ERROR(expect('{'));
    while (true) {
      skipSpace();
      if (peekKeyword("return")) {
        COMPILER_RETURN_IF_ERROR(expectKeyword("return"));
        std::vector<Value *> outputs;
        std::vector<std::string> outputNames;
        skipSpace();
        if (peek() == '%') {
          do {
            Value *v;
            skipSpace();
            size_t start = pos_;
            COMPILER_RETURN_IF_ERROR(parseUse(v));
            // The default output name is the identifier as written.
            std::string outputName(text_.slice(start + 1, pos_));
            COMPILER_RETURN_IF_ERROR(parseModelName(outputName));
            outputs.push_back(v);
            outputNames.push_back(std::move(outputName));
          } while (consume(','));
        }
        graph->setOutputs(std::move(outputs), std::move(outputNames));
        break;
      }
      COMPILER_RETURN_IF_ERROR(parseOp(*graph));
    }
    COMPILER_RETURN_IF_ERROR(expect('}'));
    skipSpace();
    if (pos_ != text_.size()) {
      return error("unexpected text after the graph");
    }
    return graph;
  }

private:
  absl::Status parseOp(Graph &graph) {
    std::vector<std::string> resultNames;
    do {
      std::string name;
      COMPILER_RETURN_IF_ERROR(parseValueName(name));
      resultNames.push_back(name);
    } while (consume(','));
    COMPILER_RETURN_IF_ERROR(expect('='));
    skipSpace();
    size_t kindPos = pos_;
    std::string kind = parseIdent();
    if (kind.empty()) {
      return error("expected an op kind");
    }
    const OpInfo *info = lookupOp(kind);
    if (!info) {
      pos_ = kindPos;
      return error("unknown op kind '" + kind + "'");
    }
    bool isConstant = info->kind == OpKind::Constant;
    COMPILER_RETURN_IF_ERROR(expect('('));
    std::vector<Value *> operands;
    if (!consume(')')) {
      do {
        skipSpace();
        if (peekKeyword("none")) {
          COMPILER_RETURN_IF_ERROR(expectKeyword("none"));
          operands.push_back(nullptr);
          continue;
        }
        Value *v;
        COMPILER_RETURN_IF_ERROR(parseUse(v));
        operands.push_back(v);
      } while (consume(','));
      COMPILER_RETURN_IF_ERROR(expect(')'));
    }
    std::map<std::string, Attribute> attrs;
    std::optional<DenseLiteral> dense;
    if (consume('{')) {
      if (!consume('}')) {
        do {
          skipSpace();
          std::string name = parseIdent();
          if (name.empty()) {
            return error("expected an attribute name");
          }
          COMPILER_RETURN_IF_ERROR(expect('='));
          skipSpace();
          if (peekKeyword("dense")) {
            if (!isConstant || name != "value") {
              return error("dense literals are only valid as Constant value");
            }
            DenseLiteral lit;
            COMPILER_RETURN_IF_ERROR(parseDense(lit));
            dense = std::move(lit);
            continue;
          }
          Attribute attr;
          COMPILER_RETURN_IF_ERROR(parseAttr(attr));
          attrs[name] = std::move(attr);
        } while (consume(','));
        COMPILER_RETURN_IF_ERROR(expect('}'));
      }
    }
    COMPILER_RETURN_IF_ERROR(expect(':'));
    std::vector<TensorType> types;
    do {
      TensorType t;
      COMPILER_RETURN_IF_ERROR(parseType(t));
      types.push_back(t);
    } while (consume(','));
    if (types.size() != resultNames.size()) {
      return error(std::to_string(resultNames.size()) + " results but " +
                   std::to_string(types.size()) + " types");
    }
    std::string loc;
    skipSpace();
    if (peekKeyword("loc")) {
      COMPILER_RETURN_IF_ERROR(expectKeyword("loc"));
      COMPILER_RETURN_IF_ERROR(expect('('));
      COMPILER_RETURN_IF_ERROR(parseString(loc));
      COMPILER_RETURN_IF_ERROR(expect(')'));
    }
    Op *op = graph.createOp(kind, std::move(operands), types, std::move(attrs),
                            nullptr, resultNames);
    op->setNodeName(loc);
    if (isConstant) {
      if (!dense) {
        return error("Constant needs a value = dense<...> attribute");
      }
      DenseData data;
      COMPILER_RETURN_IF_ERROR(materialize(*dense, types[0], data));
      op->setValue(std::move(data));
    }
    for (unsigned i = 0; i < op->numResults(); ++i) {
      if (values_.count(resultNames[i])) {
        return error("value %" + resultNames[i] + " is defined twice");
      }
      values_[resultNames[i]] = op->result(i);
    }
    return absl::OkStatus();
  }

  absl::Status materialize(const DenseLiteral &lit, const TensorType &type,
                           DenseData &out) {
    if (!type.hasStaticShape()) {
      return error("constant type " + type.str() + " is not static");
    }
    size_t n = static_cast<size_t>(type.numElements());
    ElementType et = type.elementType();
    if (lit.hex) {
      if (lit.bytes.size() != n * elementByteSize(et)) {
        return error("constant payload has " + std::to_string(lit.bytes.size()) +
                     " bytes, " + type.str() + " needs " +
                     std::to_string(n * elementByteSize(et)));
      }
      out = DenseData::fromBytes(lit.bytes);
      return absl::OkStatus();
    }
    if (lit.values.size() != n) {
      return error("constant lists " + std::to_string(lit.values.size()) +
                   " elements, " + type.str() + " needs " + std::to_string(n));
    }
    if (isFloatType(et)) {
      out = DenseData::fromDoubles(et, lit.values);
      return absl::OkStatus();
    }
    for (bool isInt : lit.isInt) {
      if (!isInt) {
        return error("float literal in an integer constant");
      }
    }
    out = DenseData::fromInt64s(et, lit.ints);
    return absl::OkStatus();
  }

  absl::Status parseDense(DenseLiteral &lit) {
    COMPILER_RETURN_IF_ERROR(expectKeyword("dense"));
    COMPILER_RETURN_IF_ERROR(expect('<'));
    skipSpace();
    if (peek() == '"') {
      std::string hex;
      COMPILER_RETURN_IF_ERROR(parseString(hex));
      if (hex.size() < 2 || hex[0] != '0' || hex[1] != 'x' || hex.size() % 2) {
        return error("hex payload must be \"0x\" followed by byte pairs");
      }
      lit.hex = true;
      for (size_t i = 2; i < hex.size(); i += 2) {
        int hi = hexDigit(hex[i]), lo = hexDigit(hex[i + 1]);
        if (hi < 0 || lo < 0) {
          return error("invalid hex digit in constant payload");
        }
        lit.bytes.push_back(static_cast<uint8_t>(hi * 16 + lo));
      }
    } else {
      COMPILER_RETURN_IF_ERROR(expect('['));
      if (!consume(']')) {
        do {
          double v;
          int64_t i;
          bool isInt;
          COMPILER_RETURN_IF_ERROR(parseNumber(v, i, isInt));
          lit.values.push_back(v);
          lit.ints.push_back(i);
          lit.isInt.push_back(isInt);
        } while (consume(','));
        COMPILER_RETURN_IF_ERROR(expect(']'));
      }
    }
    return expect('>');
  }

  static int hexDigit(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    return -1;
  }

  absl::Status parseAttr(Attribute &out) {
    skipSpace();
    if (peek() == '"') {
      std::string s;
      COMPILER_RETURN_IF_ERROR(parseString(s));
      out = Attribute(std::move(s));
      return absl::OkStatus();
    }
    if (consume('[')) {
      std::vector<double> values;
      std::vector<int64_t> ints;
      bool allInt = true;
      if (!consume(']')) {
        do {
          double v;
          int64_t i;
          bool isInt;
          COMPILER_RETURN_IF_ERROR(parseNumber(v, i, isInt));
          values.push_back(v);
          ints.push_back(i);
          allInt &= isInt;
        } while (consume(','));
        COMPILER_RETURN_IF_ERROR(expect(']'));
      }
      out = allInt ? Attribute(ints) : Attribute(values);
      return absl::OkStatus();
    }
    double v;
    int64_t i;
    bool isInt;
    COMPILER_RETURN_IF_ERROR(parseNumber(v, i, isInt));
    out = isInt ? Attribute(i) : Attribute(v);
    return absl::OkStatus();
  }

  absl::Status parseNumber(double &value, int64_t &intValue, bool &isInt) {
    skipSpace();
    size_t start = pos_;
    if (peek() == '-' || peek() == '+') {
      ++pos_;
    }
    if (text_.substr(pos_).starts_with("inf") ||
        text_.substr(pos_).starts_with("nan")) {
      bool nan = text_[pos_] == 'n';
      pos_ += 3;
      isInt = false;
      value = nan ? std::nan("") : (text_[start] == '-' ? -HUGE_VAL : HUGE_VAL);
      intValue = 0;
      return absl::OkStatus();
    }
    isInt = true;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E' ||
                 ((c == '-' || c == '+') &&
                  (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E'))) {
        isInt = false;
        ++pos_;
      } else {
        break;
      }
    }
    std::string token = text_.substr(start, pos_ - start).str();
    if (token.empty() || token == "-" || token == "+") {
      pos_ = start;
      return error("expected a number");
    }
    char *end = nullptr;
    if (isInt) {
      errno = 0;
      intValue = std::strtoll(token.c_str(), &end, 10);
      if (errno == ERANGE) {
        pos_ = start;
        return error("integer out of range");
      }
      value = static_cast<double>(intValue);
    } else {
      value = std::strtod(token.c_str(), &end);
      intValue = 0;
    }
    if (end != token.c_str() + token.size()) {
      pos_ = start;
      return error("malformed number '" + token + "'");
    }
    return absl::OkStatus();
  }

  absl::Status parseType(TensorType &out) {
    COMPILER_RETURN_IF_ERROR(expectKeyword("tensor"));
    COMPILER_RETURN_IF_ERROR(expect('<'));
    size_t close = text_.find('>', pos_);
    if (close == llvm::StringRef::npos) {
      return error("unterminated tensor type");
    }
    llvm::StringRef body = text_.slice(pos_, close);
    llvm::SmallVector<llvm::StringRef> parts;
    body.split(parts, 'x');
    std::optional<ElementType> et = parseElementType(parts.back().trim());
    if (!et) {
      return error("unknown element type '" + parts.back().str() + "'");
    }
    parts.pop_back();
    if (parts.size() == 1 && parts[0] == "*") {
      out = TensorType::unranked(*et);
    } else {
      std::vector<int64_t> dims;
      for (llvm::StringRef p : parts) {
        int64_t d;
        if (p == "?") {
          dims.push_back(kDynamic);
        } else if (!p.getAsInteger(10, d) && d >= 0) {
          dims.push_back(d);
        } else {
          return error("malformed dimension '" + p.str() + "'");
        }
      }
      out = TensorType::ranked(*et, std::move(dims));
    }
    pos_ = close + 1;
    return absl::OkStatus();
  }

  absl::Status parseString(std::string &out) {
    skipSpace();
    if (peek() != '"') {
      return error("expected a string");
    }
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size()) {
        char e = text_[pos_++];
        out += e == 'n' ? '\n' : e;
      } else {
        out += c;
      }
    }
    if (pos_ >= text_.size()) {
      return error("unterminated string");
    }
    ++pos_;
    return absl::OkStatus();
  }

  absl::Status parseValueName(std::string &name) {
    COMPILER_RETURN_IF_ERROR(expect('%'));
    name = parseIdent();
    if (name.empty()) {
      return error("expected a value name after '%'");
    }
    return absl::OkStatus();
  }

  // Parses an optional `as "name"` (a graph input's or output's model name
  // when it differs from its identifier) into |name|.
  absl::Status parseModelName(std::string &name) {
    skipSpace();
    if (!peekKeyword("as")) {
      return absl::OkStatus();
    }
    COMPILER_RETURN_IF_ERROR(expectKeyword("as"));
    skipSpace();
    std::string parsed;
    COMPILER_RETURN_IF_ERROR(parseString(parsed));
    name = std::move(parsed);
    return absl::OkStatus();
  }

  absl::Status parseUse(Value *&value) {
    skipSpace();
    size_t start = pos_;
    std::string name;
    COMPILER_RETURN_IF_ERROR(parseValueName(name));
    auto it = values_.find(name);
    if (it == values_.end()) {
      pos_ = start;
      return error("use of undefined value %" + name);
    }
    value = it->second;
    return absl::OkStatus();
  }

  std::string parseIdent() {
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
            text_[pos_] == '_' || text_[pos_] == '.')) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start).str();
  }

  void skipSpace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (text_.substr(pos_).starts_with("//")) {
        while (pos_ < text_.size() && text_[pos_] != '\n') {
          ++pos_;
        }
      } else {
        break;
      }
    }
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  bool peekKeyword(llvm::StringRef word) const {
    if (!text_.substr(pos_).starts_with(word)) {
      return false;
    }
    size_t end = pos_ + word.size();
    return end >= text_.size() ||
           !(std::isalnum(static_cast<unsigned char>(text_[end])) ||
             text_[end] == '_');
  }

  bool consume(char c) {
    skipSpace();
    if (peek() == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  absl::Status expect(char c) {
    if (!consume(c)) {
      return error(std::string("expected '") + c + "'");
    }
    return absl::OkStatus();
  }

  absl::Status expectKeyword(llvm::StringRef word) {
    skipSpace();
    if (!peekKeyword(word)) {
      return error("expected '" + word.str() + "'");
    }
    pos_ += word.size();
    return absl::OkStatus();
  }

  absl::Status error(const std::string &message) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return absl::InvalidArgumentError(bufferName_.str() + ":" +
                                      std::to_string(line) + ":" +
                                      std::to_string(col) + ": " + message);
  }

  llvm::StringRef text_;
  llvm::StringRef bufferName_;
  size_t pos_ = 0;
  std::unordered_map<std::string, Value *> values_;
};

} // namespace

absl::StatusOr<std::unique_ptr<Graph>> parseGraph(llvm::StringRef text,
                                                  llvm::StringRef bufferName) {
  return Parser(text, bufferName).parse();
}

} // namespace osprey::compiler::graph
