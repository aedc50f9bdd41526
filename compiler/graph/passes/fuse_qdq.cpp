// Recognizes quantized computation, written as QDQ patterns or as ONNX's
// quantized operators, and rewrites it into the canonical quantized ops.
//
// The canonical ops compute in the integer domain with docs/npu.md's
// arithmetic. Activations are i8 (u8 tensors are shifted by -128, with their
// zero points, where they enter or leave: exact), per-tensor quantized;
// results are clamp(y_zero_point + Requantize(acc, M, s), act_min, act_max).
//
//   QConv(x:i8, w:i8|i16, bias:i32[M] [, multiplier:i32[M|1], shift])
//       a convolution (Conv's attributes) of x - x_zero_point by w (weight
//       zero points already subtracted; i16 when that leaves int8) plus
//       bias, requantized per output channel into i8, or the i32
//       accumulator itself without the multiplier and shift operands.
//   QMatMul(a:i8, b:i8|i16, bias:i32[N] [, multiplier, shift])
//       MatMul of a - a_zero_point by b - b_zero_point (b_zero_point is 0
//       for constant b), plus bias, per-column requantization.
//   QAdd(a:i8, b:i8)  npu E_ADD: both inputs minus their zero points,
//       shifted left by left_shift and rescaled by (a_multiplier, a_shift)
//       and (b_multiplier, b_shift), summed with saturation, then rescaled
//       by (multiplier, shift).
//   QMul(a:i8, b:i8)  (a - a_zero_point) * (b - b_zero_point) rescaled.
//   QRescale(x:i8|u8) y = clamp(y_zero_point + Requantize(x - x_zero_point,
//       multiplier, shift)) into i8 or u8 (attribute to): requantization to
//       other parameters, and the u8 <-> i8 conversions.
//   QAveragePool(x:i8)  average of the in-bounds window values (padding
//       excluded), rounded half away from zero as npu POOL.
// MaxPool and the layout ops (Reshape, Flatten, Transpose, Squeeze,
// Unsqueeze) run on the integer values directly.
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/passes/evaluator.h"
#include "compiler/graph/passes/passes.h"
#include "compiler/graph/quantization.h"
#include "compiler/graph/status.h"

namespace osprey::compiler::graph {
namespace {

using ET = ElementType;

// An integer tensor and its quantization.
struct QValue {
  Value *value = nullptr;
  QuantParams params;
};

// Constant integer contents with their dims.
struct IntTensor {
  std::vector<int64_t> dims;
  std::vector<int64_t> values;
};

// Where a rewritten op's result goes: |last|'s result is replaced (a
// QuantizeLinear ending a QDQ pattern, or an operator-form op itself), |erase|
// lists the ops that die with it (in reverse order of erasure), |y| is the
// output quantization and [lo, hi] the real range a fused Relu or Clip keeps.
struct Output {
  Op *last = nullptr;
  std::vector<Op *> erase;
  QuantParams y;
  float lo = -INFINITY, hi = INFINITY;
};

bool isLayoutOp(const Op &op) {
  return op.is(OpKind::Reshape) || op.is(OpKind::Flatten) ||
         op.is(OpKind::Transpose) || op.is(OpKind::Squeeze) ||
         op.is(OpKind::Unsqueeze) || op.is(OpKind::MaxPool);
}

std::optional<IntTensor> constantInts(const Value *v) {
  auto values = getConstantInts(v);
  if (!values || !v->type().hasStaticShape()) {
    return std::nullopt;
  }
  return IntTensor{v->type().dims().vec(), *values};
}

// The parameters of QuantizeLinear or DequantizeLinear |op| (constant ones).
std::optional<QuantParams> paramsOf(const Op *op) {
  bool q = op->is(OpKind::QuantizeLinear);
  if (!q && !op->is(OpKind::DequantizeLinear)) {
    return std::nullopt;
  }
  ET type = q ? op->result()->type().elementType()
              : op->operand(0)->type().elementType();
  auto p = readQuantParams(op->operand(1), op->operand(2), op->getInt("axis", 1),
                           op->operand(0)->type(), type);
  if (!p.ok()) {
    return std::nullopt;
  }
  return *p;
}

// Parameters built from an operator form's (scale, zero point) operands.
absl::StatusOr<QuantParams> operandParams(const Op &op, unsigned scale,
                                          unsigned zeroPoint, int64_t axis,
                                          const Value *tensor) {
  auto p = readQuantParams(op.operand(scale), op.operand(zeroPoint), axis,
                           tensor->type(), tensor->type().elementType());
  if (absl::IsUnimplemented(p.status())) {
    return absl::UnimplementedError(op.describe() + ": " +
                                    std::string(p.status().message()) +
                                    "; run-time quantization parameters are "
                                    "not supported");
  }
  if (!p.ok()) {
    return op.emitError(std::string(p.status().message()));
  }
  return *p;
}

// Parameters of a zero point alone (ConvInteger, MatMulInteger): scale 1.
absl::StatusOr<QuantParams> zeroPointParams(const Op &op, unsigned zeroPoint,
                                            int64_t axis, const Value *tensor) {
  QuantParams p;
  p.type = tensor->type().elementType();
  const Value *zp = op.operand(zeroPoint);
  if (!zp) {
    p.scales = {1.0f};
    p.zeroPoints = {0};
    return p;
  }
  auto values = getConstantInts(zp);
  if (!values) {
    return absl::UnimplementedError(op.describe() +
                                    ": run-time zero points are not supported");
  }
  p.zeroPoints = *values;
  p.scales.assign(values->size(), 1.0f);
  if (values->size() > 1) {
    p.axis = axis;
  }
  return p;
}

IntTensor transpose2D(const IntTensor &t) {
  IntTensor out{{t.dims[1], t.dims[0]}, std::vector<int64_t>(t.values.size())};
  for (int64_t i = 0; i < t.dims[0]; ++i) {
    for (int64_t j = 0; j < t.dims[1]; ++j) {
      out.values[j * t.dims[0] + i] = t.values[i * t.dims[1] + j];
    }
  }
  return out;
}

// |t| minus its zero points (per tensor or along |p|'s axis).
IntTensor subtractZeroPoints(IntTensor t, const QuantParams &p) {
  int64_t inner = 1, extent = 1;
  if (!p.perTensor()) {
    extent = t.dims[p.axis];
    for (size_t d = p.axis + 1; d < t.dims.size(); ++d) {
      inner *= t.dims[d];
    }
  }
  for (size_t i = 0; i < t.values.size(); ++i) {
    t.values[i] -= p.zeroPoint((int64_t(i) / inner) % extent);
  }
  return t;
}

// i8 when every value fits, else i16 (weights minus a zero point always fit).
ET narrowestType(const IntTensor &t) {
  for (int64_t v : t.values) {
    if (v < -128 || v > 127) {
      return ET::I16;
    }
  }
  return ET::I8;
}

class Rewriter {
public:
  explicit Rewriter(Graph &graph) : g_(graph) {}

  absl::Status run() {
    bool quantized = false;
    for (const auto &op : g_.ops()) {
      quantized |=
          op->is(OpKind::QuantizeLinear) || op->is(OpKind::DequantizeLinear) ||
          op->is(OpKind::QLinearConv) || op->is(OpKind::QLinearMatMul) ||
          op->is(OpKind::ConvInteger) || op->is(OpKind::MatMulInteger);
    }
    if (!quantized) {
      return absl::OkStatus();
    }
    foldConstantQuantize();
    canonicalizeUint8();
    sinkDequantize();
    for (Op *op : snapshot()) {
      if (alive(op)) {
        COMPILER_RETURN_IF_ERROR(rewriteOperatorForm(op));
      }
    }
    for (Op *op : snapshot()) {
      if (alive(op)) {
        COMPILER_RETURN_IF_ERROR(rewritePattern(op));
      }
    }
    for (Op *op : snapshot()) {
      if (alive(op) && op->is(OpKind::QuantizeLinear)) {
        COMPILER_RETURN_IF_ERROR(rewriteRequantize(op));
      }
    }
    DeadCodeEliminationPass().run(g_).IgnoreError();
    foldConversions();
    DeadCodeEliminationPass().run(g_).IgnoreError();
    noteLeftovers();
    return absl::OkStatus();
  }

private:
  // The op list, taken as the live set of one phase: ops erased during the
  // phase leave it (their addresses may be reused by ops created later).
  std::vector<Op *> snapshot() {
    std::vector<Op *> ops = g_.opList();
    live_ = std::set<Op *>(ops.begin(), ops.end());
    conversions_.clear();
    return ops;
  }
  bool alive(Op *op) const { return live_.count(op) != 0; }

  // Erases |op| (an op of the current snapshot) when nothing uses it.
  void erase(Op *op) {
    if (!alive(op)) {
      return;
    }
    for (Value *r : op->results()) {
      if (g_.hasUses(r)) {
        return;
      }
    }
    live_.erase(op);
    g_.eraseOp(op);
  }

  // The op right after the definition of |v| (the first op for graph
  // inputs), where ops computed from |v| alone can go.
  Op *afterDefinition(Value *v) {
    Op *def = v->definingOp();
    const auto &ops = g_.ops();
    if (!def) {
      return ops.empty() ? nullptr : ops.front().get();
    }
    for (size_t i = 0; i + 1 < ops.size(); ++i) {
      if (ops[i].get() == def) {
        return ops[i + 1].get();
      }
    }
    return nullptr;
  }

  // The one op using |v|, which must not be a graph output; else null.
  Op *soleUser(Value *v) const {
    if (g_.isOutput(v)) {
      return nullptr;
    }
    std::vector<Op *> users = g_.users(v);
    return users.size() == 1 ? users[0] : nullptr;
  }

  // |v| as the result of a DequantizeLinear with constant parameters.
  std::optional<QValue> dequantized(Value *v) const {
    Op *op = v ? v->definingOp() : nullptr;
    if (!op || !op->is(OpKind::DequantizeLinear)) {
      return std::nullopt;
    }
    auto p = paramsOf(op);
    if (!p || !isQuantizedType(p->type)) {
      return std::nullopt;
    }
    return QValue{op->operand(0), *p};
  }

  // The chain |f| -> [Relu | Clip]* -> QuantizeLinear (per tensor), each
  // value used once.
  std::optional<Output> outputChain(Op *f, float lo = -INFINITY,
                                    float hi = INFINITY) const {
    Output out;
    out.lo = lo;
    out.hi = hi;
    out.erase = {f};
    Value *v = f->result();
    for (;;) {
      Op *u = soleUser(v);
      if (!u || u->operand(0) != v) {
        return std::nullopt;
      }
      if (u->is(OpKind::QuantizeLinear)) {
        auto p = paramsOf(u);
        if (!p || !p->perTensor()) {
          return std::nullopt;
        }
        out.last = u;
        out.y = *p;
        out.erase.push_back(u);
        return out;
      }
      float clo = -INFINITY, chi = INFINITY;
      if (u->is(OpKind::Relu)) {
        clo = 0;
      } else if (u->is(OpKind::Clip)) {
        for (unsigned i = 1; i < 3; ++i) {
          if (!u->operand(i)) {
            continue;
          }
          auto bound = getConstantFloats(u->operand(i));
          if (!bound || bound->size() != 1) {
            return std::nullopt;
          }
          (i == 1 ? clo : chi) = static_cast<float>((*bound)[0]);
        }
      } else {
        return std::nullopt;
      }
      out.lo = std::max(out.lo, clo);
      out.hi = std::min(out.hi, chi);
      out.erase.push_back(u);
      v = u->result();
    }
  }

  Value *intConstant(const IntTensor &t, ET type, Op *before,
                     const std::string &name, const std::string &node) {
    Op *c = g_.createConstant(TensorType::ranked(type, t.dims),
                              DenseData::fromInt64s(type, t.values), before,
                              name);
    c->setNodeName(node);
    return c->result();
  }

  Value *i32Vector(const std::vector<int64_t> &values, Op *before,
                   const std::string &name, const std::string &node) {
    return intConstant({{int64_t(values.size())}, values}, ET::I32, before,
                       name, node);
  }

  // A QRescale that only converts between u8 and i8 (y = x -/+ 128).
  Value *convert(Value *v, ET to, Op *before, const std::string &node) {
    std::map<std::string, Attribute> attrs = {
        {"x_zero_point", Attribute(int64_t{0})},
        {"y_zero_point", Attribute(int64_t{to == ET::I8 ? -128 : 128})},
        {"to", Attribute(elementTypeName(to).str())}};
    Op *op = g_.createOp("QRescale", {v}, {v->type().withElementType(to)},
                         std::move(attrs), before);
    op->setNodeName(node);
    return op->result();
  }

  // |in| (per tensor) as an i8 value, its parameters moved to the i8 domain.
  QValue toInt8(QValue in, Op *before, const std::string &node) {
    if (in.params.type == ET::I8) {
      return in;
    }
    QValue out = in;
    out.params.type = ET::I8;
    for (int64_t &z : out.params.zeroPoints) {
      z -= 128;
    }
    if (auto c = constantInts(in.value)) {
      for (int64_t &v : c->values) {
        v -= 128;
      }
      out.value = intConstant(*c, ET::I8, before, in.value->name() + "_i8", node);
      return out;
    }
    // One conversion per value, right after its definition, so every
    // consumer rewritten later can read it.
    Value *&converted = conversions_[in.value];
    if (!converted) {
      converted = convert(in.value, ET::I8, afterDefinition(in.value), node);
    }
    out.value = converted;
    return out;
  }

  static QuantParams toInt8Params(QuantParams p) {
    if (p.type == ET::U8) {
      p.type = ET::I8;
      for (int64_t &z : p.zeroPoints) {
        z -= 128;
      }
    }
    return p;
  }

  // (M, s) of |real| for the op |f|.
  absl::StatusOr<FixedPointMultiplier> multiplier(const Op &f, double real) {
    auto m = quantizeMultiplier(real);
    if (!m.ok()) {
      return f.emitError(std::string(m.status().message()));
    }
    return *m;
  }

  // Multiplier and shift operands for per-channel factors |reals| (one
  // entry when all are equal).
  absl::Status requantOperands(const Op &f, const std::vector<double> &reals,
                               Op *before, std::vector<Value *> &operands) {
    std::vector<int64_t> ms, ss;
    for (double r : reals) {
      COMPILER_ASSIGN_OR_RETURN(FixedPointMultiplier m, multiplier(f, r));
      ms.push_back(m.multiplier);
      ss.push_back(m.shift);
    }
    bool uniform = std::all_of(ms.begin(), ms.end(),
                               [&](int64_t m) { return m == ms[0]; }) &&
                   std::all_of(ss.begin(), ss.end(),
                               [&](int64_t s) { return s == ss[0]; });
    if (uniform) {
      ms.resize(1);
      ss.resize(1);
    }
    std::string base = f.result()->name();
    operands.push_back(i32Vector(ms, before, base + "_multiplier", f.nodeName()));
    operands.push_back(i32Vector(ss, before, base + "_shift", f.nodeName()));
    return absl::OkStatus();
  }

  // Adds y_zero_point, act_min and act_max for output |out| (i8 domain).
  static void outputAttrs(const Output &out,
                          std::map<std::string, Attribute> &attrs) {
    QuantParams y = toInt8Params(out.y);
    int64_t lo = -128, hi = 127;
    if (out.lo > -INFINITY) {
      lo = quantizeValue(out.lo, y.scale(), y.zeroPoint(), ET::I8);
    }
    if (out.hi < INFINITY) {
      hi = quantizeValue(out.hi, y.scale(), y.zeroPoint(), ET::I8);
    }
    attrs["y_zero_point"] = Attribute(y.zeroPoint());
    attrs["act_min"] = Attribute(lo);
    attrs["act_max"] = Attribute(std::max(lo, hi));
  }

  // Replaces |out|'s result by |result| (i8 in the output's i8 domain,
  // converted back to u8 when the output is u8) and erases the dead ops.
  void finish(const Output &out, Value *result) {
    if (out.y.type == ET::U8) {
      result = convert(result, ET::U8, out.last, out.last->nodeName());
    }
    g_.replaceAllUsesWith(out.last->result(), result);
    for (auto it = out.erase.rbegin(); it != out.erase.rend(); ++it) {
      erase(*it);
    }
  }

  Op *create(llvm::StringRef kind, const Op &f, std::vector<Value *> operands,
             TensorType type, std::map<std::string, Attribute> attrs,
             Op *before) {
    Op *op = g_.createOp(kind, std::move(operands), {type}, std::move(attrs),
                         before, {f.result()->name() + "_q"});
    op->setNodeName(f.nodeName());
    return op;
  }

  // Bias per channel in the accumulator scale |accScale| (times |factor|):
  // none (zeros), DequantizeLinear of constant i32 (kept when its scale is
  // the accumulator's) or a float constant. Nullopt when |b| is none of
  // these.
  std::optional<std::vector<int64_t>>
  biasValues(Value *b, const std::vector<double> &accScale, double factor) {
    size_t n = accScale.size();
    std::vector<int64_t> out(n, 0);
    if (!b) {
      return out;
    }
    auto fromReal = [](double v) {
      double r = std::round(v);
      return static_cast<int64_t>(std::clamp(r, -2147483648.0, 2147483647.0));
    };
    if (dequantized(b)) {
      return std::nullopt; // i8/u8 bias: not an accumulator-scale bias
    }
    Op *def = b->definingOp();
    if (def && def->is(OpKind::DequantizeLinear) &&
        def->operand(0)->type().elementType() == ET::I32) {
      auto p = paramsOf(def);
      auto values = getConstantInts(def->operand(0));
      if (!p || !values || (values->size() != n && values->size() != 1)) {
        return std::nullopt;
      }
      for (size_t c = 0; c < n; ++c) {
        int64_t q = (*values)[values->size() == 1 ? 0 : c];
        double ratio = double(p->scale(p->perTensor() ? 0 : c)) * factor /
                       accScale[c];
        out[c] = std::fabs(ratio - 1) <= 1e-6 ? q : fromReal(q * ratio);
      }
      return out;
    }
    auto values = getConstantFloats(b);
    if (!values || (values->size() != n && values->size() != 1)) {
      return std::nullopt;
    }
    for (size_t c = 0; c < n; ++c) {
      out[c] = fromReal((*values)[values->size() == 1 ? 0 : c] * factor /
                        accScale[c]);
    }
    return out;
  }

  //===------------------------------------------------------------------===//
  // Convolutions and matrix products
  //===------------------------------------------------------------------===//

  // QConv for |f| reading |x| (per tensor) and constant weights |w| (per
  // tensor or per output channel); |out| null makes the i32 accumulator.
  absl::StatusOr<Value *> emitConv(const Op &f, Op *before, QValue x,
                                   QValue w, std::vector<int64_t> bias,
                                   const Output *out) {
    auto wt = constantInts(w.value);
    std::string node = f.nodeName();
    x = toInt8(x, before, node);
    IntTensor weights = subtractZeroPoints(*wt, w.params);
    int64_t channels = weights.dims[0];
    std::vector<Value *> operands = {
        x.value,
        intConstant(weights, narrowestType(weights), before,
                    f.result()->name() + "_weights", node),
        i32Vector(bias, before, f.result()->name() + "_bias", node)};
    std::map<std::string, Attribute> attrs;
    for (const char *name :
         {"group", "strides", "pads", "dilations", "kernel_shape", "auto_pad"}) {
      if (const Attribute *a = f.getAttr(name)) {
        attrs[name] = *a;
      }
    }
    attrs["x_zero_point"] = Attribute(x.params.zeroPoint());
    ET type = ET::I32;
    if (out) {
      std::vector<double> reals;
      for (int64_t c = 0; c < channels; ++c) {
        reals.push_back(double(x.params.scale()) * double(w.params.scale(c)) /
                        double(out->y.scale()));
      }
      COMPILER_RETURN_IF_ERROR(requantOperands(f, reals, before, operands));
      outputAttrs(*out, attrs);
      type = ET::I8;
    }
    Op *q = create("QConv", f, operands, f.result()->type().withElementType(type),
                   attrs, before);
    return q->result();
  }

  // QMatMul for |f|: |a| per tensor; |b| constant (per tensor or per
  // column, transposed first when |transB|) or a per-tensor run-time value.
  absl::StatusOr<Value *> emitMatMul(const Op &f, Op *before, QValue a,
                                     QValue b, bool transB,
                                     std::vector<int64_t> bias,
                                     const Output *out, double alpha) {
    std::string node = f.nodeName();
    a = toInt8(a, before, node);
    std::vector<Value *> operands = {a.value};
    std::map<std::string, Attribute> attrs;
    attrs["a_zero_point"] = Attribute(a.params.zeroPoint());
    int64_t columns;
    if (auto bt = constantInts(b.value)) {
      IntTensor values = subtractZeroPoints(*bt, b.params);
      if (transB) {
        values = transpose2D(values);
      }
      columns = values.dims.back();
      operands.push_back(intConstant(values, narrowestType(values), before,
                                     f.result()->name() + "_weights", node));
    } else {
      b = toInt8(b, before, node);
      columns = b.value->type().dims().back();
      operands.push_back(b.value);
      attrs["b_zero_point"] = Attribute(b.params.zeroPoint());
    }
    if (bias.empty()) {
      bias.assign(columns, 0);
    }
    operands.push_back(
        i32Vector(bias, before, f.result()->name() + "_bias", node));
    ET type = ET::I32;
    if (out) {
      std::vector<double> reals;
      for (int64_t c = 0; c < columns; ++c) {
        reals.push_back(alpha * double(a.params.scale()) *
                        double(b.params.scale(c)) / double(out->y.scale()));
      }
      COMPILER_RETURN_IF_ERROR(requantOperands(f, reals, before, operands));
      outputAttrs(*out, attrs);
      type = ET::I8;
    }
    Op *q = create("QMatMul", f, operands,
                   f.result()->type().withElementType(type), attrs, before);
    return q->result();
  }

  //===------------------------------------------------------------------===//
  // Operator forms
  //===------------------------------------------------------------------===//

  absl::Status rewriteOperatorForm(Op *f) {
    if (!f->is(OpKind::QLinearConv) && !f->is(OpKind::QLinearMatMul) &&
        !f->is(OpKind::ConvInteger) && !f->is(OpKind::MatMulInteger)) {
      return absl::OkStatus();
    }
    bool conv = f->is(OpKind::QLinearConv) || f->is(OpKind::ConvInteger);
    bool linear = f->is(OpKind::QLinearConv) || f->is(OpKind::QLinearMatMul);
    unsigned wIndex = linear ? 3 : 1;
    Value *x = f->operand(0), *w = f->operand(wIndex);
    QValue xq{x}, wq{w};
    if (linear) {
      COMPILER_ASSIGN_OR_RETURN(xq.params, operandParams(*f, 1, 2, -1, x));
      int64_t axis = conv ? 0 : std::max<int64_t>(0, w->type().rank() - 1);
      COMPILER_ASSIGN_OR_RETURN(wq.params, operandParams(*f, 4, 5, axis, w));
    } else {
      COMPILER_ASSIGN_OR_RETURN(xq.params, zeroPointParams(*f, 2, -1, x));
      int64_t axis = conv ? 0 : std::max<int64_t>(0, w->type().rank() - 1);
      COMPILER_ASSIGN_OR_RETURN(wq.params, zeroPointParams(*f, 3, axis, w));
    }
    if (!xq.params.perTensor()) {
      return absl::UnimplementedError(
          f->describe() + ": per-row quantization of the first operand is "
                          "not supported");
    }
    bool constantW = constantInts(w).has_value();
    if (!constantW && (conv || !wq.params.perTensor())) {
      return absl::UnimplementedError(
          f->describe() + ": " +
          (conv ? std::string("run-time convolution weights")
                : std::string("per-column quantization of a run-time B")) +
          " are not supported");
    }
    Output out;
    out.last = f;
    out.erase = {f};
    const Output *outPtr = nullptr;
    std::vector<int64_t> bias;
    if (linear) {
      COMPILER_ASSIGN_OR_RETURN(out.y,
                                operandParams(*f, 6, 7, -1, f->result()));
      outPtr = &out;
      if (conv && f->operand(8)) {
        auto b = getConstantInts(f->operand(8));
        if (!b) {
          return absl::UnimplementedError(f->describe() +
                                          ": a run-time bias is not supported");
        }
        bias = *b;
      }
    }
    Value *result;
    if (conv) {
      if (bias.empty()) {
        bias.assign(w->type().dim(0), 0);
      }
      COMPILER_ASSIGN_OR_RETURN(result,
                                emitConv(*f, f, xq, wq, bias, outPtr));
    } else {
      COMPILER_ASSIGN_OR_RETURN(
          result, emitMatMul(*f, f, xq, wq, false, {}, outPtr, 1.0));
    }
    if (linear) {
      finish(out, result);
    } else {
      g_.replaceAllUsesWith(f->result(), result);
      erase(f);
    }
    return absl::OkStatus();
  }

  //===------------------------------------------------------------------===//
  // QDQ patterns
  //===------------------------------------------------------------------===//

  void note(Op *f, const std::string &why) { notes_[f] = why; }

  absl::Status rewritePattern(Op *f) {
    if (f->is(OpKind::Conv)) {
      return rewriteConv(f);
    }
    if (f->is(OpKind::MatMul) || f->is(OpKind::Gemm)) {
      return rewriteMatMul(f);
    }
    if (f->is(OpKind::Add) || f->is(OpKind::Mul)) {
      return rewriteBinary(f);
    }
    if (f->is(OpKind::AveragePool) || f->is(OpKind::GlobalAveragePool)) {
      return rewriteAveragePool(f);
    }
    if (f->is(OpKind::Concat)) {
      return rewriteConcat(f);
    }
    if (f->is(OpKind::Relu) || f->is(OpKind::Clip)) {
      return rewriteActivation(f);
    }
    return absl::OkStatus();
  }

  // The per-tensor quantized input |i| of |f|, or a note why not.
  std::optional<QValue> activation(Op *f, unsigned i) {
    auto q = dequantized(f->operand(i));
    if (!q) {
      return std::nullopt;
    }
    if (!q->params.perTensor()) {
      note(f, "per-axis quantized activation");
      return std::nullopt;
    }
    return q;
  }

  absl::Status rewriteConv(Op *f) {
    auto x = activation(f, 0);
    auto w = dequantized(f->operand(1));
    if (!x || !w) {
      return absl::OkStatus();
    }
    if (!constantInts(w->value) ||
        (!w->params.perTensor() && w->params.axis != 0)) {
      note(f, "weights are not constant or not quantized per output channel");
      return absl::OkStatus();
    }
    auto out = outputChain(f);
    if (!out) {
      note(f, "the result is not quantized");
      return absl::OkStatus();
    }
    int64_t channels = w->value->type().dim(0);
    std::vector<double> accScale;
    for (int64_t c = 0; c < channels; ++c) {
      accScale.push_back(double(x->params.scale()) * double(w->params.scale(c)));
    }
    auto bias = biasValues(f->operand(2), accScale, 1.0);
    if (!bias) {
      note(f, "the bias is not a constant");
      return absl::OkStatus();
    }
    COMPILER_ASSIGN_OR_RETURN(Value * result,
                              emitConv(*f, out->last, *x, *w, *bias, &*out));
    finish(*out, result);
    return absl::OkStatus();
  }

  absl::Status rewriteMatMul(Op *f) {
    bool gemm = f->is(OpKind::Gemm);
    auto a = activation(f, 0);
    auto b = dequantized(f->operand(1));
    if (!a || !b) {
      return absl::OkStatus();
    }
    const TensorType &at = f->operand(0)->type(), &bt = f->operand(1)->type();
    if (!at.hasStaticShape() || !bt.hasStaticShape() || at.rank() < 2 ||
        bt.rank() < 2) {
      note(f, "matrix-vector products have no quantized form");
      return absl::OkStatus();
    }
    bool transB = gemm && f->getInt("transB", 0) != 0;
    if (gemm && f->getInt("transA", 0) != 0) {
      note(f, "Gemm with transA has no quantized form");
      return absl::OkStatus();
    }
    bool constantB = constantInts(b->value).has_value();
    int64_t columnAxis = transB ? 0 : bt.rank() - 1;
    if (!b->params.perTensor() &&
        (!constantB || bt.rank() != 2 || b->params.axis != columnAxis)) {
      note(f, "B is not quantized per tensor or per output column");
      return absl::OkStatus();
    }
    double alpha = gemm ? f->getFloat("alpha", 1.0) : 1.0;
    double beta = gemm ? f->getFloat("beta", 1.0) : 1.0;
    if (!(alpha > 0)) {
      note(f, "Gemm with a non-positive alpha has no quantized form");
      return absl::OkStatus();
    }
    auto out = outputChain(f);
    if (!out) {
      note(f, "the result is not quantized");
      return absl::OkStatus();
    }
    int64_t columns = transB ? bt.dim(0) : bt.dims().back();
    std::vector<double> accScale;
    for (int64_t c = 0; c < columns; ++c) {
      accScale.push_back(alpha * double(a->params.scale()) *
                         double(b->params.scale(c)));
    }
    auto bias = biasValues(gemm ? f->operand(2) : nullptr, accScale, beta);
    if (!bias) {
      note(f, "C is not a constant vector");
      return absl::OkStatus();
    }
    COMPILER_ASSIGN_OR_RETURN(
        Value * result,
        emitMatMul(*f, out->last, *a, *b, transB, *bias, &*out, alpha));
    finish(*out, result);
    return absl::OkStatus();
  }

  absl::Status rewriteBinary(Op *f) {
    auto a = activation(f, 0);
    auto b = activation(f, 1);
    if (!a || !b) {
      return absl::OkStatus();
    }
    auto out = outputChain(f);
    if (!out) {
      note(f, "the result is not quantized");
      return absl::OkStatus();
    }
    Op *before = out->last;
    std::string node = f->nodeName();
    QValue a8 = toInt8(*a, before, node), b8 = toInt8(*b, before, node);
    double sa = a8.params.scale(), sb = b8.params.scale(),
           sy = out->y.scale();
    std::map<std::string, Attribute> attrs = {
        {"a_zero_point", Attribute(a8.params.zeroPoint())},
        {"b_zero_point", Attribute(b8.params.zeroPoint())}};
    auto setMultiplier = [&](const char *m, const char *s,
                             double real) -> absl::Status {
      COMPILER_ASSIGN_OR_RETURN(FixedPointMultiplier fp, multiplier(*f, real));
      attrs[m] = Attribute(int64_t{fp.multiplier});
      attrs[s] = Attribute(int64_t{fp.shift});
      return absl::OkStatus();
    };
    if (f->is(OpKind::Add)) {
      constexpr int64_t kLeftShift = 20;
      double twiceMax = 2 * std::max(sa, sb);
      attrs["left_shift"] = Attribute(kLeftShift);
      COMPILER_RETURN_IF_ERROR(
          setMultiplier("a_multiplier", "a_shift", sa / twiceMax));
      COMPILER_RETURN_IF_ERROR(
          setMultiplier("b_multiplier", "b_shift", sb / twiceMax));
      COMPILER_RETURN_IF_ERROR(setMultiplier(
          "multiplier", "shift",
          twiceMax / (double(int64_t{1} << kLeftShift) * sy)));
    } else {
      COMPILER_RETURN_IF_ERROR(
          setMultiplier("multiplier", "shift", sa * sb / sy));
    }
    outputAttrs(*out, attrs);
    Op *q =
        create(f->is(OpKind::Add) ? "QAdd" : "QMul", *f, {a8.value, b8.value},
               f->result()->type().withElementType(ET::I8), attrs, before);
    finish(*out, q->result());
    return absl::OkStatus();
  }

  // QRescale of |x| (i8) to output parameters |out| with its range.
  absl::StatusOr<Value *> rescale(const Op &f, QValue x, const Output &out,
                                  Op *before) {
    QuantParams y = toInt8Params(out.y);
    std::map<std::string, Attribute> attrs = {
        {"x_zero_point", Attribute(x.params.zeroPoint())}};
    COMPILER_ASSIGN_OR_RETURN(
        FixedPointMultiplier m,
        multiplier(f, double(x.params.scale()) / double(y.scale())));
    attrs["multiplier"] = Attribute(int64_t{m.multiplier});
    attrs["shift"] = Attribute(int64_t{m.shift});
    outputAttrs(out, attrs);
    Op *op = g_.createOp("QRescale", {x.value},
                         {x.value->type().withElementType(ET::I8)},
                         std::move(attrs), before);
    op->setNodeName(f.nodeName());
    return op->result();
  }

  // Whether |x| (i8 domain) and output |out| share scale and zero point.
  static bool sameQuantization(const QValue &x, const Output &out) {
    QuantParams y = toInt8Params(out.y);
    return x.params.scale() == y.scale() &&
           x.params.zeroPoint() == y.zeroPoint();
  }

  absl::Status rewriteAveragePool(Op *f) {
    auto x = activation(f, 0);
    if (!x) {
      return absl::OkStatus();
    }
    const TensorType &xt = f->operand(0)->type();
    if (!xt.hasStaticShape() || xt.rank() < 3) {
      return absl::OkStatus();
    }
    std::map<std::string, Attribute> attrs;
    if (f->is(OpKind::GlobalAveragePool)) {
      attrs["kernel_shape"] =
          Attribute(IntList(xt.dims().begin() + 2, xt.dims().end()));
    } else {
      IntList pads = f->getIntList("pads");
      bool padded = std::any_of(pads.begin(), pads.end(),
                                [](int64_t p) { return p != 0; });
      if (f->hasAttr("auto_pad") &&
          f->getString("auto_pad", "NOTSET") != "NOTSET") {
        note(f, "auto_pad is not resolved");
        return absl::OkStatus();
      }
      if (padded && f->getInt("count_include_pad", 0) != 0) {
        note(f, "count_include_pad with padding has no quantized form");
        return absl::OkStatus();
      }
      for (const char *name : {"kernel_shape", "strides", "pads", "ceil_mode"}) {
        if (const Attribute *a = f->getAttr(name)) {
          attrs[name] = *a;
        }
      }
    }
    auto out = outputChain(f);
    if (!out) {
      note(f, "the result is not quantized");
      return absl::OkStatus();
    }
    Op *before = out->last;
    QValue x8 = toInt8(*x, before, f->nodeName());
    bool same = sameQuantization(x8, *out);
    Output poolOut = *out;
    if (!same) {
      poolOut.lo = -INFINITY;
      poolOut.hi = INFINITY;
      poolOut.y = x8.params;
    }
    outputAttrs(poolOut, attrs);
    attrs.erase("y_zero_point");
    Op *pool = create("QAveragePool", *f, {x8.value},
                      f->result()->type().withElementType(ET::I8), attrs,
                      before);
    Value *result = pool->result();
    if (!same) {
      COMPILER_ASSIGN_OR_RETURN(
          result, rescale(*f, QValue{result, x8.params}, *out, before));
    }
    finish(*out, result);
    return absl::OkStatus();
  }

  absl::Status rewriteConcat(Op *f) {
    std::vector<QValue> inputs;
    for (unsigned i = 0; i < f->numOperands(); ++i) {
      auto x = activation(f, i);
      if (!x) {
        return absl::OkStatus();
      }
      inputs.push_back(*x);
    }
    auto out = outputChain(f);
    if (!out || out->erase.size() != 2) {
      note(f, "the result is not quantized");
      return absl::OkStatus();
    }
    Op *before = out->last;
    std::vector<Value *> operands;
    for (QValue &x : inputs) {
      QValue x8 = toInt8(x, before, f->nodeName());
      if (sameQuantization(x8, *out)) {
        operands.push_back(x8.value);
      } else {
        COMPILER_ASSIGN_OR_RETURN(Value * r, rescale(*f, x8, *out, before));
        operands.push_back(r);
      }
    }
    Op *concat = create("Concat", *f, operands,
                        f->result()->type().withElementType(ET::I8),
                        {{"axis", Attribute(f->getInt("axis", 0))}}, before);
    finish(*out, concat->result());
    return absl::OkStatus();
  }

  // DQ -> Relu | Clip -> Q: a rescale clamped to the activation's range.
  absl::Status rewriteActivation(Op *f) {
    auto x = activation(f, 0);
    if (!x) {
      return absl::OkStatus();
    }
    float lo = 0, hi = INFINITY;
    if (f->is(OpKind::Clip)) {
      lo = -INFINITY;
      for (unsigned i = 1; i < 3; ++i) {
        if (!f->operand(i)) {
          continue;
        }
        auto bound = getConstantFloats(f->operand(i));
        if (!bound || bound->size() != 1) {
          note(f, "the bounds are not constants");
          return absl::OkStatus();
        }
        (i == 1 ? lo : hi) = static_cast<float>((*bound)[0]);
      }
    }
    auto out = outputChain(f, lo, hi);
    if (!out) {
      note(f, "the result is not quantized");
      return absl::OkStatus();
    }
    QValue x8 = toInt8(*x, out->last, f->nodeName());
    COMPILER_ASSIGN_OR_RETURN(Value * r, rescale(*f, x8, *out, out->last));
    finish(*out, r);
    return absl::OkStatus();
  }

  //===------------------------------------------------------------------===//
  // Normalizations
  //===------------------------------------------------------------------===//

  // QuantizeLinear of constants becomes constants (weights stored quantized).
  void foldConstantQuantize() {
    for (Op *op : snapshot()) {
      if (!op->is(OpKind::QuantizeLinear) || !isConstant(op->operand(0)) ||
          !op->result()->type().hasStaticShape()) {
        continue;
      }
      auto folded = evaluateOp(*op, {op->result()->type()});
      if (!folded.ok()) {
        continue; // malformed parameters are reported by the verifier
      }
      Op *c = g_.createConstant(op->result()->type(), (*folded)[0], op,
                                op->result()->name());
      c->setNodeName(op->nodeName());
      g_.replaceAllUsesWith(op->result(), c->result());
      erase(op);
    }
  }

  // A u8 QuantizeLinear read only by DequantizeLinear ops becomes an i8 one
  // (values and zero point shifted by -128, exact), so quantized values
  // inside the graph are i8; u8 remains at graph inputs and outputs.
  void canonicalizeUint8() {
    for (Op *q : snapshot()) {
      if (!q->is(OpKind::QuantizeLinear) ||
          q->result()->type().elementType() != ET::U8 || !q->operand(2) ||
          g_.isOutput(q->result())) {
        continue;
      }
      std::vector<Op *> users = g_.users(q->result());
      bool onlyDq = !users.empty();
      for (Op *u : users) {
        onlyDq &= u->is(OpKind::DequantizeLinear) &&
                  u->operand(0) == q->result() && u->operand(2) &&
                  constantInts(u->operand(2)).has_value();
      }
      Value *zp = onlyDq ? shiftedZeroPoint(q->operand(2), -128, q) : nullptr;
      if (!zp) {
        continue;
      }
      Op *q8 = g_.createOp("QuantizeLinear",
                           {q->operand(0), q->operand(1), zp},
                           {q->result()->type().withElementType(ET::I8)},
                           q->attributes(), q, {q->result()->name()});
      q8->setNodeName(q->nodeName());
      for (Op *u : users) {
        Value *uzp = shiftedZeroPoint(u->operand(2), -128, u);
        Op *dq = g_.createOp("DequantizeLinear",
                             {q8->result(), u->operand(1), uzp},
                             {u->result()->type()}, u->attributes(), u,
                             {u->result()->name()});
        dq->setNodeName(u->nodeName());
        g_.replaceAllUsesWith(u->result(), dq->result());
        erase(u);
      }
      erase(q);
    }
  }

  // L(DQ(x)) -> DQ(L(x)) for layout ops and MaxPool on per-tensor
  // quantized values: they move or select values without computing, and
  // max commutes with the increasing map DequantizeLinear is.
  void sinkDequantize() {
    for (Op *op : snapshot()) {
      if (!isLayoutOp(*op) || op->numResults() != 1) {
        continue;
      }
      auto x = dequantized(op->operand(0));
      if (!x || !x->params.perTensor()) {
        continue;
      }
      Op *dq = op->operand(0)->definingOp();
      std::vector<Value *> operands(op->operands().begin(),
                                    op->operands().end());
      operands[0] = x->value;
      Op *moved = g_.createOp(
          op->kind(), operands,
          {op->result()->type().withElementType(x->params.type)},
          op->attributes(), op, {op->result()->name() + "_q"});
      moved->setNodeName(op->nodeName());
      std::vector<Value *> dqOperands(dq->operands().begin(),
                                      dq->operands().end());
      dqOperands[0] = moved->result();
      Op *newDq = g_.createOp("DequantizeLinear", dqOperands,
                              {op->result()->type()}, dq->attributes(), op);
      newDq->setNodeName(dq->nodeName());
      g_.replaceAllUsesWith(op->result(), newDq->result());
      erase(op);
    }
  }

  // Q(DQ(x)): x itself when the parameters agree, else a QRescale.
  absl::Status rewriteRequantize(Op *q) {
    auto x = dequantized(q->operand(0));
    auto y = paramsOf(q);
    if (!x || !y || !x->params.perTensor() || !y->perTensor()) {
      return absl::OkStatus();
    }
    if (x->params == *y) {
      g_.replaceAllUsesWith(q->result(), x->value);
      erase(q);
      return absl::OkStatus();
    }
    Output out;
    out.last = q;
    out.erase = {q};
    out.y = *y;
    QValue x8 = toInt8(*x, q, q->nodeName());
    COMPILER_ASSIGN_OR_RETURN(Value * r, rescale(*q, x8, out, q));
    finish(out, r);
    return absl::OkStatus();
  }

  // Offset a QRescale adds when it only converts between u8 and i8.
  static std::optional<int64_t> conversionOffset(const Op *op) {
    if (!op || !op->is(OpKind::QRescale) ||
        op->getInt("x_zero_point", 0) != 0 ||
        op->getInt("multiplier", 1 << 30) != (1 << 30) ||
        op->getInt("shift", 1) != 1 || op->hasAttr("act_min") ||
        op->hasAttr("act_max")) {
      return std::nullopt;
    }
    ET from = op->operand(0)->type().elementType();
    ET to = op->result()->type().elementType();
    int64_t zp = op->getInt("y_zero_point", 0);
    if (from == ET::U8 && to == ET::I8 && zp == -128) {
      return -128;
    }
    if (from == ET::I8 && to == ET::U8 && zp == 128) {
      return 128;
    }
    return std::nullopt;
  }

  // A u8 <-> i8 conversion next to a QuantizeLinear or DequantizeLinear
  // moves into its zero point, and back-to-back conversions cancel.
  void foldConversions() {
    for (Op *op : snapshot()) {
      if (!alive(op)) {
        continue;
      }
      auto offset = conversionOffset(op);
      if (!offset) {
        continue;
      }
      Value *in = op->operand(0);
      Op *producer = in->definingOp();
      if (auto inner = conversionOffset(producer); inner) {
        g_.replaceAllUsesWith(op->result(), producer->operand(0));
        erase(op);
        erase(producer);
        continue;
      }
      if (producer && producer->is(OpKind::QuantizeLinear) &&
          soleUser(in) == op && producer->operand(2)) {
        Value *zp = shiftedZeroPoint(producer->operand(2), *offset, op);
        if (!zp) {
          continue;
        }
        Op *q = g_.createOp("QuantizeLinear",
                            {producer->operand(0), producer->operand(1), zp},
                            {op->result()->type()}, producer->attributes(), op,
                            {producer->result()->name()});
        q->setNodeName(producer->nodeName());
        g_.replaceAllUsesWith(op->result(), q->result());
        erase(op);
        erase(producer);
      }
    }
    for (Op *op : snapshot()) {
      if (!alive(op) || !op->is(OpKind::DequantizeLinear) || !op->operand(2)) {
        continue;
      }
      Op *conv = op->operand(0)->definingOp();
      auto offset = conversionOffset(conv);
      if (!offset) {
        continue;
      }
      Value *zp = shiftedZeroPoint(op->operand(2), -*offset, op);
      if (!zp) {
        continue;
      }
      op->setOperand(0, conv->operand(0));
      op->setOperand(2, zp);
      erase(conv);
    }
  }

  // Constant zero point |zp| plus |offset|, retyped to the other of u8/i8.
  Value *shiftedZeroPoint(Value *zp, int64_t offset, Op *before) {
    auto t = constantInts(zp);
    if (!t) {
      return nullptr;
    }
    for (int64_t &v : t->values) {
      v += offset;
    }
    ET type = zp->type().elementType() == ET::U8 ? ET::I8 : ET::U8;
    return intConstant(*t, type, before, zp->name() + "_shifted",
                       zp->definingOp()->nodeName());
  }

  // Float ops still reading dequantized values say why they stayed float.
  void noteLeftovers() {
    for (Op *op : g_.opList()) {
      if (op->is(OpKind::DequantizeLinear) || op->is(OpKind::QuantizeLinear) ||
          op->is(OpKind::Constant)) {
        continue;
      }
      bool readsDq = false;
      for (Value *v : op->operands()) {
        Op *def = v ? v->definingOp() : nullptr;
        readsDq |= def && def->is(OpKind::DequantizeLinear);
      }
      if (!readsDq) {
        continue;
      }
      auto it = notes_.find(op);
      std::string why = it != notes_.end()
                            ? it->second
                            : op->kind() + " has no quantized form";
      op->setAttr("note", Attribute("stays float: " + why));
    }
  }

  Graph &g_;
  std::map<Op *, std::string> notes_;
  std::set<Op *> live_;
  std::map<Value *, Value *> conversions_;
};

} // namespace

absl::Status FuseQdqPass::run(Graph &graph) { return Rewriter(graph).run(); }

} // namespace osprey::compiler::graph
