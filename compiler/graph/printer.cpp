// Prints the graph IR in its textual form.
#include <charconv>
#include <cmath>
#include <set>
#include <unordered_map>

#include "compiler/graph/ir_text.h"
#include "compiler/graph/op_registry.h"

namespace osprey::compiler::graph {
namespace {

bool isIdentChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

// Shortest decimal text that reads back as the same double, always with a
// '.' or exponent so it parses as a float.
std::string formatDouble(double v) {
  if (std::isnan(v)) {
    return "nan";
  }
  if (std::isinf(v)) {
    return v < 0 ? "-inf" : "inf";
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) {
    s += ".0";
  }
  return s;
}

std::string formatFloat(float v) {
  if (std::isnan(v) || std::isinf(v)) {
    return formatDouble(v);
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) {
    s += ".0";
  }
  return s;
}

std::string quote(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

class Printer {
public:
  Printer(llvm::raw_ostream &os, const PrintOptions &options)
      : os_(os), options_(options) {}

  void print(const Graph &graph) {
    os_ << "graph @" << graph.name() << "(";
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      Value *v = graph.inputs()[i];
      os_ << (i ? ", " : "") << "%" << nameOf(v);
      printModelName(v->name(), nameOf(v));
      os_ << ": " << v->type().str();
    }
    os_ << ") {\n";
    for (const auto &op : graph.ops()) {
      printOp(*op);
    }
    os_ << "  return";
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      os_ << (i ? ", " : " ") << "%" << nameOf(graph.outputs()[i]);
      if (i < graph.outputNames().size()) {
        printModelName(graph.outputNames()[i], nameOf(graph.outputs()[i]));
      }
    }
    os_ << "\n}\n";
  }

private:
  // Graph inputs and outputs keep the model's names; one that the identifier
  // does not spell is printed as `as "name"`.
  void printModelName(const std::string &modelName,
                      const std::string &identifier) {
    if (!modelName.empty() && modelName != identifier) {
      os_ << " as " << quote(modelName);
    }
  }

  const std::string &nameOf(const Value *v) {
    auto it = names_.find(v);
    if (it != names_.end()) {
      return it->second;
    }
    std::string base;
    for (char c : v->name()) {
      base += isIdentChar(c) ? c : '_';
    }
    std::string name = base;
    if (name.empty()) {
      name = std::to_string(next_++);
      while (used_.count(name)) {
        name = std::to_string(next_++);
      }
    }
    for (int suffix = 1; used_.count(name); ++suffix) {
      name = base + "_" + std::to_string(suffix);
    }
    used_.insert(name);
    return names_[v] = name;
  }

  void printAttr(const Attribute &a) {
    if (a.isInt()) {
      os_ << a.getInt();
    } else if (a.isFloat()) {
      os_ << formatDouble(a.getFloat());
    } else if (a.isString()) {
      os_ << quote(a.getString());
    } else if (a.isIntList()) {
      os_ << "[";
      for (size_t i = 0; i < a.getIntList().size(); ++i) {
        os_ << (i ? ", " : "") << a.getIntList()[i];
      }
      os_ << "]";
    } else {
      os_ << "[";
      for (size_t i = 0; i < a.getFloatList().size(); ++i) {
        os_ << (i ? ", " : "") << formatDouble(a.getFloatList()[i]);
      }
      os_ << "]";
    }
  }

  void printDense(const Op &op) {
    const TensorType &t = op.result(0)->type();
    ElementType et = t.elementType();
    size_t n = op.value().size() / std::max<size_t>(1, elementByteSize(et));
    if (n <= options_.maxListElements) {
      os_ << "dense<[";
      for (size_t i = 0; i < n; ++i) {
        os_ << (i ? ", " : "");
        if (et == ElementType::F32 || et == ElementType::F16 ||
            et == ElementType::BF16) {
          os_ << formatFloat(static_cast<float>(op.value().getDouble(et, i)));
        } else if (et == ElementType::F64) {
          os_ << formatDouble(op.value().getDouble(et, i));
        } else if (et == ElementType::U64) {
          os_ << static_cast<uint64_t>(op.value().getInt64(et, i));
        } else {
          os_ << op.value().getInt64(et, i);
        }
      }
      os_ << "]>";
      return;
    }
    if (options_.elideLargeConstants) {
      os_ << "dense<elided>";
      return;
    }
    static const char kHex[] = "0123456789ABCDEF";
    os_ << "dense<\"0x";
    for (uint8_t b : op.value().bytes()) {
      os_ << kHex[b >> 4] << kHex[b & 15];
    }
    os_ << "\">";
  }

  void printOp(const Op &op) {
    os_ << "  ";
    for (unsigned i = 0; i < op.numResults(); ++i) {
      os_ << (i ? ", " : "") << "%" << nameOf(op.result(i));
    }
    os_ << " = " << op.kind() << "(";
    for (unsigned i = 0; i < op.numOperands(); ++i) {
      os_ << (i ? ", " : "");
      if (op.operand(i)) {
        os_ << "%" << nameOf(op.operand(i));
      } else {
        os_ << "none";
      }
    }
    os_ << ")";
    bool isConstant = op.is(OpKind::Constant);
    if (isConstant || !op.attributes().empty()) {
      os_ << " {";
      bool first = true;
      if (isConstant) {
        os_ << "value = ";
        printDense(op);
        first = false;
      }
      for (const auto &[name, attr] : op.attributes()) {
        os_ << (first ? "" : ", ") << name << " = ";
        printAttr(attr);
        first = false;
      }
      os_ << "}";
    }
    os_ << " : ";
    for (unsigned i = 0; i < op.numResults(); ++i) {
      os_ << (i ? ", " : "") << op.result(i)->type().str();
    }
    if (!op.nodeName().empty()) {
      os_ << " loc(" << quote(op.nodeName()) << ")";
    }
    os_ << "\n";
  }

  llvm::raw_ostream &os_;
  const PrintOptions &options_;
  std::unordered_map<const Value *, std::string> names_;
  std::set<std::string> used_;
  int next_ = 0;
};

} // namespace

void printGraph(const Graph &graph, llvm::raw_ostream &os,
                const PrintOptions &options) {
  Printer(os, options).print(graph);
}

std::string printGraphToString(const Graph &graph,
                               const PrintOptions &options) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printGraph(graph, os, options);
  os.flush();
  return s;
}

} // namespace osprey::compiler::graph
