// Reference evaluation of graph ops on constant data.
#include "compiler/graph/passes/evaluator.h"

#include <cmath>
#include <functional>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/quantization.h"
#include "compiler/graph/status.h"

namespace osprey::compiler::graph {
namespace {

// Row-major strides of |dims|.
std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

// Index into an operand of shape |in| broadcast to |out| for the output
// element with linear index |linear|.
int64_t broadcastIndex(int64_t linear, llvm::ArrayRef<int64_t> out,
                       llvm::ArrayRef<int64_t> outStrides,
                       llvm::ArrayRef<int64_t> in,
                       llvm::ArrayRef<int64_t> inStrides) {
  int64_t index = 0;
  size_t offset = out.size() - in.size();
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t coord = (linear / outStrides[d]) % out[d];
    if (d >= offset && in[d - offset] != 1) {
      index += coord * inStrides[d - offset];
    }
  }
  return index;
}

double applyUnary(const Op &op, double x) {
  switch (op.info()->kind) {
  case OpKind::Relu:
    return x > 0 || std::isnan(x) ? x : 0;
  case OpKind::Neg:
    return -x;
  case OpKind::Abs:
    return std::fabs(x);
  case OpKind::Sqrt:
    return std::sqrt(x);
  case OpKind::Reciprocal:
    return 1.0 / x;
  case OpKind::Exp:
    return std::exp(x);
  case OpKind::Log:
    return std::log(x);
  case OpKind::Tanh:
    return std::tanh(x);
  case OpKind::Erf:
    return std::erf(x);
  case OpKind::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case OpKind::LeakyRelu:
    return x >= 0 ? x : x * op.getFloat("alpha", 0.01);
  case OpKind::HardSigmoid:
    return std::clamp(op.getFloat("alpha", 0.2) * x + op.getFloat("beta", 0.5),
                      0.0, 1.0);
  case OpKind::HardSwish:
    return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
  case OpKind::Floor:
    return std::floor(x);
  case OpKind::Ceil:
    return std::ceil(x);
  case OpKind::Round:
    return std::nearbyint(x); // the default mode: to nearest, ties to even
  case OpKind::Sign:
    return x > 0 ? 1.0 : x < 0 ? -1.0 : x - x;
  case OpKind::Sin:
    return std::sin(x);
  case OpKind::Cos:
    return std::cos(x);
  case OpKind::Tan:
    return std::tan(x);
  case OpKind::Asin:
    return std::asin(x);
  case OpKind::Acos:
    return std::acos(x);
  case OpKind::Atan:
    return std::atan(x);
  case OpKind::Sinh:
    return std::sinh(x);
  case OpKind::Cosh:
    return std::cosh(x);
  case OpKind::Asinh:
    return std::asinh(x);
  case OpKind::Acosh:
    return std::acosh(x);
  case OpKind::Atanh:
    return std::atanh(x);
  case OpKind::Not:
    return x == 0;
  case OpKind::Cast:
    // To bool, any nonzero (and NaN) is true; to integers, fromValues
    // truncates toward zero.
    return op.result()->type().elementType() == ElementType::Bool ? x != 0
                                                                  : x;
  default:
    return x; // Identity
  }
}

bool isUnary(OpKind k) {
  switch (k) {
  case OpKind::Relu:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Sqrt:
  case OpKind::Reciprocal:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Tanh:
  case OpKind::Erf:
  case OpKind::Sigmoid:
  case OpKind::LeakyRelu:
  case OpKind::HardSigmoid:
  case OpKind::HardSwish:
  case OpKind::Floor:
  case OpKind::Ceil:
  case OpKind::Round:
  case OpKind::Sign:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Tan:
  case OpKind::Asin:
  case OpKind::Acos:
  case OpKind::Atan:
  case OpKind::Sinh:
  case OpKind::Cosh:
  case OpKind::Asinh:
  case OpKind::Acosh:
  case OpKind::Atanh:
  case OpKind::Identity:
  case OpKind::Cast:
  case OpKind::Not:
    return true;
  default:
    return false;
  }
}

// Binary elementwise kinds and Where.
bool isBroadcasting(OpKind k) {
  switch (k) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::Equal:
  case OpKind::Less:
  case OpKind::Greater:
  case OpKind::LessOrEqual:
  case OpKind::GreaterOrEqual:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Where:
    return true;
  default:
    return false;
  }
}

double applyBinary(OpKind k, double a, double b, bool isInt) {
  switch (k) {
  case OpKind::Add:
    return a + b;
  case OpKind::Sub:
    return a - b;
  case OpKind::Mul:
    return a * b;
  case OpKind::Div:
    if (isInt) {
      return b == 0 ? 0 : std::trunc(a / b);
    }
    return a / b;
  case OpKind::Pow:
    return std::pow(a, b);
  case OpKind::Equal:
    return a == b;
  case OpKind::Less:
    return a < b;
  case OpKind::LessOrEqual:
    return a <= b;
  case OpKind::GreaterOrEqual:
    return a >= b;
  case OpKind::And:
    return a != 0 && b != 0;
  case OpKind::Or:
    return a != 0 || b != 0;
  case OpKind::Xor:
    return (a != 0) != (b != 0);
  default:
    return a > b; // Greater
  }
}

DenseData fromValues(ElementType et, const std::vector<double> &values) {
  if (isFloatType(et)) {
    return DenseData::fromDoubles(et, values);
  }
  std::vector<int64_t> ints(values.begin(), values.end());
  return DenseData::fromInt64s(et, ints);
}

// Values of operand |i| as doubles (exact for integers up to 2^53, which
// covers shapes and indices).
std::vector<double> valuesOf(const Op &op, unsigned i) {
  const Value *v = op.operand(i);
  return v->definingOp()->value().toDoubles(v->type().elementType());
}

// Gathers elements of |in| (shape |inDims|) into a new buffer following
// |sourceIndex|, which maps each output linear index to an input one.
DenseData gatherBytes(const DenseData &in, ElementType et, int64_t count,
                      const std::function<int64_t(int64_t)> &sourceIndex) {
  size_t size = elementByteSize(et);
  std::vector<uint8_t> out(count * size);
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(out.data() + i * size,
                in.bytes().data() + sourceIndex(i) * size, size);
  }
  return DenseData::fromBytes(std::move(out));
}

} // namespace

bool isStorageSharingOp(const Op &op) {
  return op.is(OpKind::Reshape) || op.is(OpKind::Flatten) ||
         op.is(OpKind::Squeeze) || op.is(OpKind::Unsqueeze) ||
         op.is(OpKind::Identity);
}

absl::StatusOr<std::vector<DenseData>>
evaluateOp(const Op &op, const std::vector<TensorType> &resultTypes) {
  if (!op.info()) {
    return absl::UnimplementedError("no constant evaluator for " + op.kind());
  }
  const OpKind k = op.info()->kind;
  const TensorType &outType = resultTypes[0];
  ElementType outEt = outType.elementType();
  int64_t count = outType.numElements();
  if (count < 0) {
    return absl::UnimplementedError("result shape is not static");
  }
  if (k == OpKind::ConstantOfShape) {
    return std::vector<DenseData>{DenseData::fromDoubles(
        outEt, std::vector<double>(count, op.getFloat("value", 0.0)))};
  }
  if (k == OpKind::Shape) {
    const TensorType &t = op.operand(0)->type();
    int64_t r = t.rank();
    int64_t start = op.getInt("start", 0), end = op.getInt("end", r);
    start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r);
    end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
    std::vector<int64_t> dims(t.dims().begin() + start,
                              t.dims().begin() + std::max(start, end));
    return std::vector<DenseData>{DenseData::fromInt64s(outEt, dims)};
  }
  for (Value *operand : op.operands()) {
    if (operand && !isConstant(operand)) {
      return absl::UnimplementedError("operand is not constant");
    }
  }
  const Value *x = op.operand(0);
  if (isStorageSharingOp(op)) {
    return std::vector<DenseData>{x->definingOp()->value()};
  }
  if (outEt == ElementType::F16 || outEt == ElementType::BF16) {
    return absl::UnimplementedError("16-bit float folding is not supported");
  }
  if (k == OpKind::QuantizeLinear || k == OpKind::DequantizeLinear) {
    COMPILER_ASSIGN_OR_RETURN(DenseData data, evaluateQuantizeOp(op, outType));
    return std::vector<DenseData>{std::move(data)};
  }
  if (isUnary(k)) {
    std::vector<double> values = valuesOf(op, 0);
    for (double &v : values) {
      v = applyUnary(op, v);
    }
    return std::vector<DenseData>{fromValues(outEt, values)};
  }
  if (k == OpKind::Clip) {
    std::vector<double> values = valuesOf(op, 0);
    double lo = -INFINITY, hi = INFINITY;
    if (op.operand(1)) {
      lo = valuesOf(op, 1)[0];
    }
    if (op.operand(2)) {
      hi = valuesOf(op, 2)[0];
    }
    for (double &v : values) {
      v = std::clamp(v, lo, hi);
    }
    return std::vector<DenseData>{fromValues(outEt, values)};
  }
  if (isBroadcasting(k)) {
    unsigned n = op.numOperands();
    std::vector<std::vector<double>> ins;
    std::vector<std::vector<int64_t>> strides;
    for (unsigned i = 0; i < n; ++i) {
      ins.push_back(valuesOf(op, i));
      strides.push_back(stridesOf(op.operand(i)->type().dims()));
    }
    std::vector<int64_t> outStrides = stridesOf(outType.dims());
    bool isInt = !isFloatType(
        op.operand(k == OpKind::Where ? 1 : 0)->type().elementType());
    if (isInt && k == OpKind::Div) {
      for (double v : ins[1]) {
        if (v == 0) {
          return op.emitError("integer division by zero in constant data");
        }
      }
    }
    std::vector<double> out(count);
    for (int64_t i = 0; i < count; ++i) {
      double v[3] = {0, 0, 0};
      for (unsigned j = 0; j < n; ++j) {
        v[j] = ins[j][broadcastIndex(i, outType.dims(), outStrides,
                                     op.operand(j)->type().dims(),
                                     strides[j])];
      }
      out[i] = k == OpKind::Where ? (v[0] != 0 ? v[1] : v[2])
                                  : applyBinary(k, v[0], v[1], isInt);
    }
    return std::vector<DenseData>{fromValues(outEt, out)};
  }
  const DenseData &data = x->definingOp()->value();
  llvm::ArrayRef<int64_t> inDims = x->type().dims();
  std::vector<int64_t> inStrides = stridesOf(inDims);
  std::vector<int64_t> outStrides = stridesOf(outType.dims());
  if (k == OpKind::Transpose) {
    std::vector<int64_t> perm = op.getIntList("perm");
    if (perm.empty()) {
      for (int64_t i = x->type().rank() - 1; i >= 0; --i) {
        perm.push_back(i);
      }
    }
    return std::vector<DenseData>{
        gatherBytes(data, outEt, count, [&](int64_t i) {
          int64_t src = 0;
          for (size_t d = 0; d < perm.size(); ++d) {
            src += ((i / outStrides[d]) % outType.dim(d)) * inStrides[perm[d]];
          }
          return src;
        })};
  }
  if (k == OpKind::Expand) {
    return std::vector<DenseData>{
        gatherBytes(data, outEt, count, [&](int64_t i) {
          return broadcastIndex(i, outType.dims(), outStrides, inDims,
                                inStrides);
        })};
  }
  if (k == OpKind::Gather) {
    int64_t axis = op.getInt("axis", 0);
    if (axis < 0) {
      axis += x->type().rank();
    }
    std::vector<double> indices = valuesOf(op, 1);
    int64_t extent = inDims[axis];
    for (double idx : indices) {
      if (idx < -extent || idx >= extent) {
        return op.emitError("index " + std::to_string(int64_t(idx)) +
                            " is out of range for extent " +
                            std::to_string(extent));
      }
    }
    int64_t inner = inStrides[axis];
    int64_t numIdx = static_cast<int64_t>(indices.size());
    return std::vector<DenseData>{
        gatherBytes(data, outEt, count, [&](int64_t i) {
          int64_t innerPos = i % inner;
          int64_t idxPos = (i / inner) % numIdx;
          int64_t outer = i / inner / numIdx;
          int64_t idx = static_cast<int64_t>(indices[idxPos]);
          idx = idx < 0 ? idx + extent : idx;
          return (outer * extent + idx) * inner + innerPos;
        })};
  }
  if (k == OpKind::Concat) {
    int64_t axis = op.getInt("axis", 0);
    if (axis < 0) {
      axis += outType.rank();
    }
    size_t size = elementByteSize(outEt);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) {
      outer *= outType.dim(d);
    }
    std::vector<uint8_t> out;
    out.reserve(count * size);
    for (int64_t o = 0; o < outer; ++o) {
      for (Value *in : op.operands()) {
        int64_t chunk = in->type().numElements() / std::max<int64_t>(outer, 1);
        const uint8_t *src = in->definingOp()->value().bytes().data();
        out.insert(out.end(), src + o * chunk * size,
                   src + (o + 1) * chunk * size);
      }
    }
    return std::vector<DenseData>{DenseData::fromBytes(std::move(out))};
  }
  if (k == OpKind::Slice) {
    std::vector<double> starts = valuesOf(op, 1);
    std::vector<int64_t> begin(inDims.size(), 0), step(inDims.size(), 1);
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t axis = op.operand(3) ? int64_t(valuesOf(op, 3)[i]) : int64_t(i);
      if (axis < 0) {
        axis += x->type().rank();
      }
      int64_t s = op.operand(4) ? int64_t(valuesOf(op, 4)[i]) : 1;
      int64_t d = inDims[axis];
      int64_t b = int64_t(starts[i]);
      b = b < 0 ? b + d : b;
      b = s > 0 ? std::clamp<int64_t>(b, 0, d) : std::clamp<int64_t>(b, 0, d - 1);
      begin[axis] = b;
      step[axis] = s;
    }
    return std::vector<DenseData>{
        gatherBytes(data, outEt, count, [&](int64_t i) {
          int64_t src = 0;
          for (size_t d = 0; d < inDims.size(); ++d) {
            int64_t coord = (i / outStrides[d]) % outType.dim(d);
            src += (begin[d] + coord * step[d]) * inStrides[d];
          }
          return src;
        })};
  }
  return absl::UnimplementedError("no constant evaluator for " + op.kind());
}

} // namespace osprey::compiler::graph
