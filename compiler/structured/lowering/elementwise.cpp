// Elementwise ops: activations, math functions, Cast, broadcasting arithmetic
// and comparisons, Where, Clip and Expand, each one all-parallel op whose
// operands are read broadcast against the result.
#include <cmath>

#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {
namespace {

// The body of a unary elementwise op of kind |op|.
ScalarBody unaryBody(const Op &op) {
  ScalarBody b;
  unsigned x = b.input(0);
  auto c = [&](double v) { return b.constant(v); };
  auto hardSigmoid = [&](double alpha, double beta) {
    unsigned lin = b.binary(SK::Add, b.binary(SK::Mul, x, c(alpha)), c(beta));
    return b.binary(SK::Max, b.binary(SK::Min, lin, c(1)), c(0));
  };
  unsigned r = x;
  switch (op.info()->kind) {
  case OpKind::Relu:
    r = b.binary(SK::Max, x, c(0));
    break;
  case OpKind::LeakyRelu:
    r = b.select(b.binary(SK::CmpLt, x, c(0)),
                 b.binary(SK::Mul, x, c(op.getFloat("alpha", 0.01))), x);
    break;
  case OpKind::Sigmoid:
    r = b.unary(SK::Sigmoid, x);
    break;
  case OpKind::HardSigmoid:
    r = hardSigmoid(op.getFloat("alpha", 0.2), op.getFloat("beta", 0.5));
    break;
  case OpKind::HardSwish:
    r = b.binary(SK::Mul, x, hardSigmoid(1.0 / 6, 0.5));
    break;
  case OpKind::Gelu:
    if (op.getString("approximate", "none") == "tanh") {
      unsigned cube = b.binary(SK::Mul, b.binary(SK::Mul, x, x), x);
      unsigned inner =
          b.binary(SK::Mul, c(std::sqrt(2.0 / M_PI)),
                   b.binary(SK::Add, x, b.binary(SK::Mul, c(0.044715), cube)));
      r = b.binary(SK::Mul, b.binary(SK::Mul, c(0.5), x),
                   b.binary(SK::Add, c(1), b.unary(SK::Tanh, inner)));
    } else {
      unsigned e = b.unary(SK::Erf, b.binary(SK::Mul, x, c(M_SQRT1_2)));
      r = b.binary(SK::Mul, b.binary(SK::Mul, c(0.5), x),
                   b.binary(SK::Add, c(1), e));
    }
    break;
  case OpKind::Tanh:
    r = b.unary(SK::Tanh, x);
    break;
  case OpKind::Erf:
    r = b.unary(SK::Erf, x);
    break;
  case OpKind::Sqrt:
    r = b.unary(SK::Sqrt, x);
    break;
  case OpKind::Reciprocal:
    r = b.unary(SK::Recip, x);
    break;
  case OpKind::Exp:
    r = b.unary(SK::Exp, x);
    break;
  case OpKind::Log:
    r = b.unary(SK::Log, x);
    break;
  case OpKind::Sin:
    r = b.unary(SK::Sin, x);
    break;
  case OpKind::Cos:
    r = b.unary(SK::Cos, x);
    break;
  case OpKind::Tan:
    r = b.unary(SK::Tan, x);
    break;
  case OpKind::Atan:
    r = b.unary(SK::Atan, x);
    break;
  // asin x = atan(x / sqrt((1 - x)(1 + x))) and
  // acos x = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near +-1
  // (1 -+ x is exact there), +-pi/2 and pi at the ends through atan(+-inf),
  // NaN outside [-1, 1] from the square root of a negative number.
  case OpKind::Asin: {
    unsigned below = b.binary(SK::Sub, c(1), x);
    unsigned above = b.binary(SK::Add, c(1), x);
    r = b.unary(SK::Atan,
                b.binary(SK::Div, x,
                         b.unary(SK::Sqrt, b.binary(SK::Mul, below, above))));
    break;
  }
  case OpKind::Acos: {
    unsigned below = b.binary(SK::Sub, c(1), x);
    unsigned above = b.binary(SK::Add, c(1), x);
    r = b.binary(SK::Mul, c(2),
                 b.unary(SK::Atan, b.unary(SK::Sqrt, b.binary(SK::Div, below,
                                                              above))));
    break;
  }
  case OpKind::Sinh:
    r = b.unary(SK::Sinh, x);
    break;
  case OpKind::Cosh:
    r = b.unary(SK::Cosh, x);
    break;
  case OpKind::Asinh:
    r = b.unary(SK::Asinh, x);
    break;
  case OpKind::Acosh:
    r = b.unary(SK::Acosh, x);
    break;
  case OpKind::Atanh:
    r = b.unary(SK::Atanh, x);
    break;
  case OpKind::Abs:
    r = b.unary(SK::Abs, x);
    break;
  case OpKind::Neg:
    r = b.unary(SK::Neg, x);
    break;
  case OpKind::Cast:
    r = b.cast(x, op.result()->type().elementType());
    break;
  // Round is to nearest, ties to even. Floor and Ceil correct that rounding
  // by one where it went the wrong way; -0, infinities and NaN come through
  // unchanged (the comparisons are false), and floor(-0.5) is -1, ceil(-0.5)
  // is -0.
  case OpKind::Round:
    r = b.unary(SK::RoundEven, x);
    break;
  case OpKind::Floor: {
    unsigned even = b.unary(SK::RoundEven, x);
    r = b.select(b.binary(SK::CmpGt, even, x), b.binary(SK::Sub, even, c(1)),
                 even);
    break;
  }
  case OpKind::Ceil: {
    unsigned even = b.unary(SK::RoundEven, x);
    r = b.select(b.binary(SK::CmpLt, even, x), b.binary(SK::Add, even, c(1)),
                 even);
    break;
  }
  // 1, -1, or x - x: +0 for both zeros (as numpy's sign), NaN for NaN.
  case OpKind::Sign:
    r = b.select(b.binary(SK::CmpGt, x, c(0)), c(1),
                 b.select(b.binary(SK::CmpLt, x, c(0)), c(-1),
                          b.binary(SK::Sub, x, x)));
    break;
  // As the ONNX definitions write them (NaN stays NaN: the comparisons are
  // false and the other side computes NaN).
  case OpKind::Elu: {
    double alpha = op.getFloat("alpha", 1.0);
    unsigned neg = b.binary(SK::Mul, c(alpha),
                            b.binary(SK::Sub, b.unary(SK::Exp, x), c(1)));
    r = b.select(b.binary(SK::CmpLt, x, c(0)), neg, x);
    break;
  }
  case OpKind::Selu: {
    double alpha = op.getFloat("alpha", 1.67326319217681884765625);
    double gamma = op.getFloat("gamma", 1.05070102214813232421875);
    unsigned neg = b.binary(SK::Sub, b.binary(SK::Mul, c(alpha),
                                              b.unary(SK::Exp, x)),
                            c(alpha));
    r = b.binary(SK::Mul, c(gamma),
                 b.select(b.binary(SK::CmpGt, x, c(0)), x, neg));
    break;
  }
  case OpKind::Softsign:
    r = b.binary(SK::Div, x, b.binary(SK::Add, c(1), b.unary(SK::Abs, x)));
    break;
  case OpKind::Softplus:
    // log(1 + e^x) as max(x, 0) + log(1 + e^-|x|): no overflow for large x
    // (softplus(100) is 100, not inf).
    r = b.binary(SK::Add, b.binary(SK::Max, x, c(0)),
                 b.unary(SK::Log,
                         b.binary(SK::Add, c(1),
                                  b.unary(SK::Exp,
                                          b.unary(SK::Neg,
                                                  b.unary(SK::Abs, x))))));
    break;
  default:
    break;
  }
  b.yield(r);
  return b;
}

// The scalar operation of a binary elementwise op.
SK binaryKind(const Op &op) {
  switch (op.info()->kind) {
  case OpKind::Sub:
    return SK::Sub;
  case OpKind::Mul:
    return SK::Mul;
  case OpKind::Div:
    return SK::Div;
  case OpKind::Pow:
    return SK::Pow;
  case OpKind::Equal:
    return SK::CmpEq;
  case OpKind::Less:
    return SK::CmpLt;
  case OpKind::Greater:
    return SK::CmpGt;
  case OpKind::LessOrEqual:
    return SK::CmpLe;
  case OpKind::GreaterOrEqual:
    return SK::CmpGe;
  case OpKind::BitShift:
    return op.getString("direction", "") == "LEFT" ? SK::ShiftLeft
                                                   : SK::ShiftRight;
  default:
    return SK::Add;
  }
}

} // namespace

absl::Status lowerUnary(LoweringContext &ctx, const Op &op) {
  return ctx.elementwise(op, op.result(), {op.operand(0)}, unaryBody(op));
}

absl::Status lowerBinary(LoweringContext &ctx, const Op &op) {
  ScalarBody b;
  b.yield(b.binary(binaryKind(op), b.input(0), b.input(1)));
  return ctx.elementwise(op, op.result(), {op.operand(0), op.operand(1)},
                         std::move(b));
}

// Integer Mod from the truncating division: r = a - (a / b) * b has the
// sign of a (fmod = 1, C's %); with fmod = 0 a nonzero r whose sign differs
// from b's moves by b, to b's sign (Python's %). Division by zero fails the
// dispatch; INT_MIN % -1 is 0 (the division wraps). Float Mod is refused.
absl::Status lowerMod(LoweringContext &ctx, const Op &op) {
  ElementType et = op.result()->type().elementType();
  if (graph::isFloatType(et)) {
    return absl::UnimplementedError(
        op.describe() + ": Mod of floating-point values is not supported yet");
  }
  ScalarBody b;
  unsigned x = b.input(0), y = b.input(1);
  unsigned r =
      b.binary(SK::Sub, x, b.binary(SK::Mul, b.binary(SK::Div, x, y), y));
  if (op.getInt("fmod", 0) == 0) {
    unsigned zero = b.constant(0);
    unsigned sameSign = b.binary(SK::CmpEq, b.binary(SK::CmpLt, r, zero),
                                 b.binary(SK::CmpLt, y, zero));
    r = b.select(b.binary(SK::CmpEq, r, zero), r,
                 b.select(sameSign, r, b.binary(SK::Add, r, y)));
  }
  b.yield(r);
  return ctx.elementwise(op, op.result(), {op.operand(0), op.operand(1)},
                         std::move(b));
}

// Max, Min: the operands folded left to right (as the ONNX reference does).
// One operand is a copy.
absl::Status lowerVariadic(LoweringContext &ctx, const Op &op) {
  const SK combine = op.info()->kind == OpKind::Max ? SK::Max : SK::Min;
  ScalarBody b;
  unsigned r = b.input(0);
  std::vector<const Value *> inputs = {op.operand(0)};
  for (unsigned i = 1; i < op.numOperands(); ++i) {
    r = b.binary(combine, r, b.input(i));
    inputs.push_back(op.operand(i));
  }
  b.yield(r);
  return ctx.elementwise(op, op.result(), std::move(inputs), std::move(b));
}

// PRelu: x where x >= 0, slope * x below (slope broadcast to x).
absl::Status lowerPRelu(LoweringContext &ctx, const Op &op) {
  ScalarBody b;
  unsigned x = b.input(0);
  b.yield(b.select(b.binary(SK::CmpLt, x, b.constant(0)),
                   b.binary(SK::Mul, b.input(1), x), x));
  return ctx.elementwise(op, op.result(), {op.operand(0), op.operand(1)},
                         std::move(b));
}

// Logic on bool (i1) values: And and Or are the minimum and maximum of
// unsigned bits, Xor is inequality (equality compared with false), Not is
// equality with false.
absl::Status lowerLogic(LoweringContext &ctx, const Op &op) {
  ScalarBody b;
  const OpKind kind = op.info()->kind;
  unsigned x = b.input(0);
  std::vector<const Value *> inputs = {op.operand(0)};
  unsigned r = 0;
  if (kind == OpKind::Not) {
    r = b.binary(SK::CmpEq, x, b.constant(0));
  } else {
    unsigned y = b.input(1);
    inputs.push_back(op.operand(1));
    r = kind == OpKind::And  ? b.binary(SK::Min, x, y)
        : kind == OpKind::Or ? b.binary(SK::Max, x, y)
                             : b.binary(SK::CmpEq, b.binary(SK::CmpEq, x, y),
                                        b.constant(0));
  }
  b.yield(r);
  return ctx.elementwise(op, op.result(), std::move(inputs), std::move(b));
}

absl::Status lowerWhere(LoweringContext &ctx, const Op &op) {
  const Value *cond = op.operand(0);
  std::optional<std::vector<int64_t>> mask;
  if (cond->type().elementType() == ElementType::Bool) {
    mask = graph::getConstantInts(cond);
  }
  if (!mask) {
    ScalarBody b;
    b.yield(b.select(b.input(0), b.input(1), b.input(2)));
    return ctx.elementwise(op, op.result(),
                           {cond, op.operand(1), op.operand(2)}, std::move(b));
  }
  // A constant condition becomes an f32 0/1 mask compared in the body, so
  // no i1 tensor is left for code generation.
  std::vector<double> values(mask->begin(), mask->end());
  TensorType maskType =
      TensorType::ranked(ElementType::F32, cond->type().dims().vec());
  unsigned m = ctx.newTemp(op, "_mask", maskType);
  ctx.program().tensors[m].constant =
      graph::DenseData::fromDoubles(ElementType::F32, values);
  const TensorType &t = op.result()->type();
  unsigned n = t.rank();
  StructuredOp s = LoweringContext::parallelOp(op, t.dims());
  s.inputs.push_back({m, broadcastMap(maskType.dims(), t.dims(), n)});
  for (unsigned i = 1; i < 3; ++i) {
    COMPILER_ASSIGN_OR_RETURN(unsigned vt, ctx.tensorFor(op.operand(i)));
    s.inputs.push_back(
        {vt, broadcastMap(op.operand(i)->type().dims(), t.dims(), n)});
  }
  s.body.yield(s.body.select(
      s.body.binary(SK::CmpGt, s.body.input(0), s.body.constant(0.5)),
      s.body.input(1), s.body.input(2)));
  return ctx.emit(std::move(s), op.result());
}

absl::Status lowerClip(LoweringContext &ctx, const Op &op) {
  ScalarBody b;
  unsigned r = b.input(0);
  std::vector<const Value *> ins = {op.operand(0)};
  if (op.operand(1)) {
    ins.push_back(op.operand(1));
    r = b.binary(SK::Max, r, b.input(ins.size() - 1));
  }
  if (op.operand(2)) {
    ins.push_back(op.operand(2));
    r = b.binary(SK::Min, r, b.input(ins.size() - 1));
  }
  b.yield(r);
  return ctx.elementwise(op, op.result(), ins, std::move(b));
}

absl::Status lowerExpand(LoweringContext &ctx, const Op &op) {
  return ctx.copy(op);
}

} // namespace osprey::compiler::structured::lowering
