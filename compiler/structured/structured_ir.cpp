// Structured ops: affine maps, scalar bodies, classification and printing.
#include "compiler/structured/structured_ir.h"

#include <set>

namespace osprey::compiler::structured {

//===----------------------------------------------------------------------===//
// AffineExpr / AffineMap
//===----------------------------------------------------------------------===//

AffineExpr AffineExpr::dim(unsigned numDims, unsigned d, int64_t coeff) {
  AffineExpr e;
  e.coeffs.assign(numDims, 0);
  e.coeffs[d] = coeff;
  return e;
}

AffineExpr AffineExpr::constantExpr(unsigned numDims, int64_t value) {
  AffineExpr e;
  e.coeffs.assign(numDims, 0);
  e.constant = value;
  return e;
}

std::optional<unsigned> AffineExpr::asDim() const {
  if (constant != 0) {
    return std::nullopt;
  }
  std::optional<unsigned> found;
  for (unsigned i = 0; i < coeffs.size(); ++i) {
    if (coeffs[i] == 0) {
      continue;
    }
    if (coeffs[i] != 1 || found) {
      return std::nullopt;
    }
    found = i;
  }
  return found;
}

bool AffineExpr::isConstant() const {
  for (int64_t c : coeffs) {
    if (c != 0) {
      return false;
    }
  }
  return true;
}

std::string AffineExpr::str() const {
  std::string s;
  for (unsigned i = 0; i < coeffs.size(); ++i) {
    int64_t c = coeffs[i];
    if (c == 0) {
      continue;
    }
    if (!s.empty()) {
      s += c < 0 ? " - " : " + ";
    } else if (c < 0) {
      s += "-";
    }
    s += "d" + std::to_string(i);
    if (std::abs(c) != 1) {
      s += " * " + std::to_string(std::abs(c));
    }
  }
  if (s.empty()) {
    return std::to_string(constant);
  }
  if (constant != 0) {
    s += (constant < 0 ? " - " : " + ") + std::to_string(std::abs(constant));
  }
  return s;
}

AffineMap AffineMap::identity(unsigned numDims) {
  AffineMap m;
  m.numDims = numDims;
  for (unsigned d = 0; d < numDims; ++d) {
    m.results.push_back(AffineExpr::dim(numDims, d));
  }
  return m;
}

bool AffineMap::isProjectedPermutationOrBroadcast() const {
  std::set<unsigned> seen;
  for (const AffineExpr &e : results) {
    if (e.isConstant() && e.constant == 0) {
      continue;
    }
    auto d = e.asDim();
    if (!d || !seen.insert(*d).second) {
      return false;
    }
  }
  return true;
}

bool AffineMap::isProjectedPermutation() const {
  std::set<unsigned> seen;
  for (const AffineExpr &e : results) {
    auto d = e.asDim();
    if (!d || !seen.insert(*d).second) {
      return false;
    }
  }
  return true;
}

bool AffineMap::isIdentity() const {
  if (results.size() != numDims) {
    return false;
  }
  for (unsigned i = 0; i < numDims; ++i) {
    if (results[i].asDim() != i) {
      return false;
    }
  }
  return true;
}

AffineMap AffineMap::compose(const AffineMap &inner) const {
  AffineMap out;
  out.numDims = inner.numDims;
  for (const AffineExpr &e : results) {
    AffineExpr r = AffineExpr::constantExpr(inner.numDims, e.constant);
    for (unsigned d = 0; d < e.coeffs.size(); ++d) {
      if (e.coeffs[d] == 0) {
        continue;
      }
      const AffineExpr &sub = inner.results[d];
      for (unsigned k = 0; k < inner.numDims; ++k) {
        r.coeffs[k] += e.coeffs[d] * sub.coeffs[k];
      }
      r.constant += e.coeffs[d] * sub.constant;
    }
    out.results.push_back(r);
  }
  return out;
}

std::string AffineMap::str() const {
  std::string s = "[";
  for (size_t i = 0; i < results.size(); ++i) {
    s += (i ? ", " : "") + results[i].str();
  }
  return s + "]";
}

//===----------------------------------------------------------------------===//
// ScalarBody
//===----------------------------------------------------------------------===//

unsigned ScalarBody::input(unsigned i) {
  nodes_.push_back({ScalarKind::Input, {}, i});
  return nodes_.size() - 1;
}

unsigned ScalarBody::output() {
  nodes_.push_back({ScalarKind::Output, {}});
  return nodes_.size() - 1;
}

unsigned ScalarBody::constant(double v) {
  ScalarNode n{ScalarKind::Const, {}};
  n.value = v;
  nodes_.push_back(n);
  return nodes_.size() - 1;
}

unsigned ScalarBody::unary(ScalarKind kind, unsigned a) {
  nodes_.push_back({kind, {a}});
  return nodes_.size() - 1;
}

unsigned ScalarBody::binary(ScalarKind kind, unsigned a, unsigned b) {
  nodes_.push_back({kind, {a, b}});
  return nodes_.size() - 1;
}

unsigned ScalarBody::select(unsigned cond, unsigned a, unsigned b) {
  nodes_.push_back({ScalarKind::Select, {cond, a, b}});
  return nodes_.size() - 1;
}

unsigned ScalarBody::cast(unsigned a, ElementType to) {
  ScalarNode n{ScalarKind::Cast, {a}};
  n.castTo = to;
  nodes_.push_back(n);
  return nodes_.size() - 1;
}

unsigned ScalarBody::requantize(unsigned x, unsigned multiplier,
                                unsigned shift) {
  nodes_.push_back({ScalarKind::Requantize, {x, multiplier, shift}});
  return nodes_.size() - 1;
}

bool ScalarBody::isCopy() const {
  const ScalarNode &n = nodes_[result_];
  return n.kind == ScalarKind::Input && n.index == 0;
}

bool ScalarBody::isMultiplyAccumulate() const {
  if (result_ >= nodes_.size()) {
    return false; // no body (external ops)
  }
  const ScalarNode &add = nodes_[result_];
  if (add.kind != ScalarKind::Add) {
    return false;
  }
  for (int side = 0; side < 2; ++side) {
    const ScalarNode &acc = nodes_[add.operands[side]];
    const ScalarNode &mul = nodes_[add.operands[1 - side]];
    if (acc.kind != ScalarKind::Output || mul.kind != ScalarKind::Mul) {
      continue;
    }
    const ScalarNode &a = nodes_[mul.operands[0]];
    const ScalarNode &b = nodes_[mul.operands[1]];
    if (a.kind == ScalarKind::Input && b.kind == ScalarKind::Input &&
        a.index != b.index) {
      return true;
    }
  }
  return false;
}

bool ScalarBody::isWideningMultiplyAccumulate() const {
  if (result_ >= nodes_.size()) {
    return false; // no body (external ops)
  }
  const ScalarNode &add = nodes_[result_];
  if (add.kind != ScalarKind::Add) {
    return false;
  }
  auto castInput = [&](unsigned node) -> std::optional<unsigned> {
    const ScalarNode &c = nodes_[node];
    if (c.kind != ScalarKind::Cast ||
        nodes_[c.operands[0]].kind != ScalarKind::Input) {
      return std::nullopt;
    }
    return nodes_[c.operands[0]].index;
  };
  for (int side = 0; side < 2; ++side) {
    const ScalarNode &acc = nodes_[add.operands[side]];
    const ScalarNode &mul = nodes_[add.operands[1 - side]];
    if (acc.kind != ScalarKind::Output || mul.kind != ScalarKind::Mul) {
      continue;
    }
    auto a = castInput(mul.operands[0]), b = castInput(mul.operands[1]);
    if (a && b && *a != *b &&
        nodes_[mul.operands[0]].castTo == nodes_[mul.operands[1]].castTo) {
      return true;
    }
  }
  return false;
}

namespace {
const char *scalarName(ScalarKind k) {
  switch (k) {
  case ScalarKind::Neg: return "neg";
  case ScalarKind::Abs: return "abs";
  case ScalarKind::Exp: return "exp";
  case ScalarKind::Log: return "log";
  case ScalarKind::Sqrt: return "sqrt";
  case ScalarKind::Rsqrt: return "rsqrt";
  case ScalarKind::Tanh: return "tanh";
  case ScalarKind::Erf: return "erf";
  case ScalarKind::Sin: return "sin";
  case ScalarKind::Cos: return "cos";
  case ScalarKind::Tan: return "tan";
  case ScalarKind::Atan: return "atan";
  case ScalarKind::Sinh: return "sinh";
  case ScalarKind::Cosh: return "cosh";
  case ScalarKind::Asinh: return "asinh";
  case ScalarKind::Acosh: return "acosh";
  case ScalarKind::Atanh: return "atanh";
  case ScalarKind::Sigmoid: return "sigmoid";
  case ScalarKind::Recip: return "recip";
  case ScalarKind::Cast: return "cast";
  case ScalarKind::Add: return "add";
  case ScalarKind::Sub: return "sub";
  case ScalarKind::Mul: return "mul";
  case ScalarKind::Div: return "div";
  case ScalarKind::Max: return "max";
  case ScalarKind::Min: return "min";
  case ScalarKind::Pow: return "pow";
  case ScalarKind::CmpEq: return "cmpeq";
  case ScalarKind::CmpLt: return "cmplt";
  case ScalarKind::CmpGt: return "cmpgt";
  case ScalarKind::CmpLe: return "cmple";
  case ScalarKind::CmpGe: return "cmpge";
  case ScalarKind::Select: return "select";
  case ScalarKind::RoundEven: return "roundeven";
  case ScalarKind::AddSat: return "addsat";
  case ScalarKind::ShiftLeft: return "shl";
  case ScalarKind::ShiftRight: return "shr";
  case ScalarKind::Requantize: return "requantize";
  default: return "?";
  }
}

std::string formatNumber(double v) {
  if (std::isinf(v)) {
    return v < 0 ? "-inf" : "inf";
  }
  char buf[32];
  snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}
} // namespace

std::string ScalarBody::str(unsigned node) const {
  const ScalarNode &n = nodes_[node];
  switch (n.kind) {
  case ScalarKind::Input: return "in" + std::to_string(n.index);
  case ScalarKind::Output: return "out";
  case ScalarKind::Const: return formatNumber(n.value);
  default: break;
  }
  std::string s = scalarName(n.kind);
  if (n.kind == ScalarKind::Cast) {
    s += "<" + graph::elementTypeName(n.castTo).str() + ">";
  }
  s += "(";
  for (size_t i = 0; i < n.operands.size(); ++i) {
    s += (i ? ", " : "") + str(n.operands[i]);
  }
  return s + ")";
}

std::string ScalarBody::str() const {
  return nodes_.empty() ? "" : str(result_);
}

//===----------------------------------------------------------------------===//
// StructuredOp / Program
//===----------------------------------------------------------------------===//

bool StructuredOp::hasReduction() const {
  for (IteratorType t : iterators) {
    if (t == IteratorType::Reduction) {
      return true;
    }
  }
  return false;
}

ExternalKernel::~ExternalKernel() = default;

OpClass StructuredOp::classify() const {
  if (external) {
    return OpClass::External;
  }
  if (isView) {
    return OpClass::View;
  }
  bool plainReads = true;
  for (const OperandAccess &in : inputs) {
    plainReads &= !in.padValue && !in.indirect &&
                  in.map.isProjectedPermutationOrBroadcast();
  }
  if (!hasReduction()) {
    return plainReads ? OpClass::Elementwise : OpClass::Gather;
  }
  if (body.isMultiplyAccumulate() || body.isWideningMultiplyAccumulate()) {
    bool permutationReads = true;
    for (const OperandAccess &in : inputs) {
      permutationReads &= !in.padValue && in.map.isProjectedPermutation();
    }
    return permutationReads ? OpClass::Contraction : OpClass::Convolution;
  }
  return OpClass::Reduction;
}

llvm::StringRef opClassName(OpClass c) {
  switch (c) {
  case OpClass::View: return "view";
  case OpClass::Elementwise: return "elementwise";
  case OpClass::Contraction: return "contraction";
  case OpClass::Convolution: return "convolution";
  case OpClass::Reduction: return "reduction";
  case OpClass::Gather: return "gather";
  case OpClass::External: return "external";
  }
  return "?";
}

std::vector<unsigned> StructuredProgram::consumers(unsigned tensor) const {
  std::vector<unsigned> out;
  for (unsigned i = 0; i < ops.size(); ++i) {
    for (const OperandAccess &in : ops[i].inputs) {
      if (in.tensor == tensor) {
        out.push_back(i);
        break;
      }
    }
  }
  return out;
}

int StructuredProgram::producer(unsigned tensor) const {
  for (unsigned i = 0; i < ops.size(); ++i) {
    if (ops[i].output.tensor == tensor) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

namespace {
std::string listStr(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(v[i]);
  }
  return s + "]";
}

const char *roleName(FusionInfo::Role r) {
  switch (r) {
  case FusionInfo::Role::Root: return "root";
  case FusionInfo::Role::Epilogue: return "epilogue";
  case FusionInfo::Role::Fused: return "fused";
  case FusionInfo::Role::Prologue: return "prologue";
  }
  return "?";
}
} // namespace

void printProgram(const StructuredProgram &p, llvm::raw_ostream &os) {
  auto name = [&](unsigned t) { return "%" + p.tensors[t].name; };
  os << "structured @" << p.name << "(";
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    os << (i ? ", " : "") << name(p.inputs[i]) << ": "
       << p.tensors[p.inputs[i]].type.str();
  }
  os << ") {\n";
  for (const StructuredOp &op : p.ops) {
    os << "  " << name(op.output.tensor) << " = "
       << (op.isView ? "view" : "generic") << " "
       << opClassName(op.classify()) << " loc(\"" << op.nodeName << "\")\n";
    if (op.isView) {
      os << "    in " << name(op.inputs[0].tensor) << "\n";
    } else if (op.external) {
      os << "    " << op.external->format() << " " << op.external->str()
         << "\n";
      for (const OperandAccess &in : op.inputs) {
        os << "    in " << name(in.tensor) << "\n";
      }
    } else {
      os << "    bounds " << listStr(op.bounds) << "\n    iterators [";
      for (size_t i = 0; i < op.iterators.size(); ++i) {
        os << (i ? ", " : "")
           << (op.iterators[i] == IteratorType::Parallel ? "parallel"
                                                         : "reduction");
      }
      os << "]\n";
      for (const OperandAccess &in : op.inputs) {
        os << "    in " << name(in.tensor) << " ";
        if (in.indirect) {
          // The indirect dimension prints as the operand it reads, "in1".
          os << "[";
          for (size_t k = 0; k < in.map.results.size(); ++k) {
            os << (k ? ", " : "")
               << (k == in.indirect->dim
                       ? "in" + std::to_string(in.indirect->operand)
                       : in.map.results[k].str());
          }
          os << "]";
        } else {
          os << in.map.str();
        }
        if (in.padValue) {
          os << " pad " << formatNumber(*in.padValue);
        }
        os << "\n";
      }
      os << "    out " << op.output.map.str();
      if (op.init) {
        os << " init " << formatNumber(*op.init);
      }
      os << "\n    body " << op.body.str() << "\n";
      if (op.winograd) {
        const WinogradRoot &w = *op.winograd;
        os << "    winograd F(" << w.m << "x" << w.m << ", 3x3) weights "
           << name(op.inputs[w.weights].tensor) << ": "
           << p.tensors[op.inputs[w.weights].tensor].type.str()
           << (w.transposed ? " transposed" : "") << "\n";
      }
    }
    os << "    : " << p.tensors[op.output.tensor].type.str() << "\n";
    if (op.fusion.group >= 0) {
      os << "    group " << op.fusion.group << " " << roleName(op.fusion.role)
         << "\n";
    }
  }
  for (size_t g = 0; g < p.groups.size(); ++g) {
    const FusionGroup &group = p.groups[g];
    os << "  group " << g << " root " << name(p.ops[group.root].output.tensor)
       << " ops [";
    for (size_t i = 0; i < group.ops.size(); ++i) {
      os << (i ? ", " : "") << name(p.ops[group.ops[i]].output.tensor);
    }
    if (!group.prologue.empty()) {
      os << "] prologue [";
      for (size_t i = 0; i < group.prologue.size(); ++i) {
        os << (i ? ", " : "") << name(p.ops[group.prologue[i]].output.tensor);
      }
    }
    os << "] tiles " << listStr(group.tileSizes) << " workgroups "
       << listStr(group.workgroups)
       << (group.microkernel ? " microkernel" : "") << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    os << (i ? ", " : " ") << name(p.outputs[i]);
  }
  os << "\n}\n";
}

} // namespace osprey::compiler::structured
