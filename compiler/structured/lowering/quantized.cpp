// The quantized family: QuantizeLinear and DequantizeLinear, and the
// canonical quantized ops of the fuse-qdq pass (QConv, QMatMul, QAdd, QMul,
// QRescale, QAveragePool) as structured ops with integer element types.
// Results are clamp(zero point + Requantize(...)) computed without overflow
// (compiler/graph/quantization.h has the arithmetic).
#include <algorithm>

#include "compiler/graph/quantization.h"
#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {
namespace {

using ET = ElementType;

absl::Status unimplemented(const Op &op, const std::string &what) {
  return absl::UnimplementedError(op.describe() + ": " + what);
}

absl::StatusOr<std::vector<int64_t>>
constantInts(const Op &op, unsigned operand, const char *what) {
  auto values = graph::getConstantInts(op.operand(operand));
  if (!values) {
    return unimplemented(op, std::string(what) + " must be a constant");
  }
  return *values;
}

// A new integer constant tensor named after |op|'s result and |suffix|.
unsigned newConstant(LoweringContext &ctx, const Op &op,
                     const std::string &suffix, ET type,
                     std::vector<int64_t> dims,
                     const std::vector<int64_t> &values) {
  unsigned t =
      ctx.newTemp(op, suffix, TensorType::ranked(type, std::move(dims)));
  ctx.program().tensors[t].constant =
      graph::DenseData::fromInt64s(type, values);
  return t;
}

// Per-channel (or single) requantization parameters: body constants when
// there is one pair, tensors read along the channel loop otherwise.
struct Requant {
  std::vector<int64_t> multipliers, shifts;
  unsigned multiplierTensor = 0, shiftTensor = 0;
  bool perChannel() const { return multipliers.size() > 1; }
};

// The multiplier and shift operands |m|, |s| of |op|.
absl::StatusOr<Requant> requantOperands(LoweringContext &ctx, const Op &op,
                                        unsigned m, unsigned s) {
  Requant r;
  COMPILER_ASSIGN_OR_RETURN(r.multipliers,
                            constantInts(op, m, "the multiplier"));
  COMPILER_ASSIGN_OR_RETURN(r.shifts, constantInts(op, s, "the shift"));
  if (r.perChannel()) {
    COMPILER_ASSIGN_OR_RETURN(r.multiplierTensor, ctx.tensorFor(op.operand(m)));
    COMPILER_ASSIGN_OR_RETURN(r.shiftTensor, ctx.tensorFor(op.operand(s)));
  }
  return r;
}

// y = clamp(zp + r, lo, hi) in the result type, computed without overflow
// as clamp(r, lo - zp, hi - zp) + zp.
unsigned clampToOutput(ScalarBody &b, unsigned r, int64_t zp, int64_t lo,
                       int64_t hi, ET to) {
  r = b.binary(SK::Max, r, b.constant(double(lo - zp)));
  r = b.binary(SK::Min, r, b.constant(double(hi - zp)));
  r = b.binary(SK::Add, r, b.constant(double(zp)));
  return b.cast(r, to);
}

// Requantize(v) by |m|, |s| (body constants; nothing for the identity).
unsigned requantizeBy(ScalarBody &b, unsigned v, int64_t m, int64_t s) {
  if (graph::FixedPointMultiplier{int32_t(m), int32_t(s)}.isIdentity()) {
    return v;
  }
  return b.requantize(v, b.constant(double(m)), b.constant(double(s)));
}

// Requantize(v) with |r| (inputs |mIn|, |sIn| of the body when per
// channel).
unsigned requantize(ScalarBody &b, unsigned v, const Requant &r, unsigned mIn,
                    unsigned sIn) {
  if (r.perChannel()) {
    return b.requantize(v, b.input(mIn), b.input(sIn));
  }
  graph::FixedPointMultiplier fp{int32_t(r.multipliers[0]),
                                 int32_t(r.shifts[0])};
  if (fp.isIdentity()) {
    return v;
  }
  return b.requantize(v, b.constant(double(fp.multiplier)),
                      b.constant(double(fp.shift)));
}

// The epilogue of QConv/QMatMul over the result shape: acc + bias, then for
// i8 results the per-channel requantization along loop |channel|.
absl::Status epilogue(LoweringContext &ctx, const Op &op, unsigned acc,
                      const std::vector<int64_t> &bias, unsigned channel) {
  const TensorType &t = op.result()->type();
  unsigned rank = t.rank();
  StructuredOp e = LoweringContext::parallelOp(op, t.dims());
  e.inputs.push_back({acc, AffineMap::identity(rank)});
  unsigned biasTensor =
      newConstant(ctx, op, "_bias", ET::I32, {int64_t(bias.size())}, bias);
  e.inputs.push_back({biasTensor, channelMap(rank, channel)});
  ScalarBody &b = e.body;
  unsigned v = b.binary(SK::Add, b.input(0), b.input(1));
  if (t.elementType() == ET::I8) {
    COMPILER_ASSIGN_OR_RETURN(Requant r, requantOperands(ctx, op, 3, 4));
    if (r.perChannel()) {
      e.inputs.push_back({r.multiplierTensor, channelMap(rank, channel)});
      e.inputs.push_back({r.shiftTensor, channelMap(rank, channel)});
    }
    v = requantize(b, v, r, 2, 3);
    v = clampToOutput(b, v, op.getInt("y_zero_point", 0),
                      op.getInt("act_min", -128), op.getInt("act_max", 127),
                      ET::I8);
  }
  b.yield(v);
  return ctx.emit(std::move(e), op.result());
}

// out + i32(in0) * i32(in1), with zero points subtracted first.
void multiplyAccumulate(StructuredOp &s, int64_t za, int64_t zb) {
  ScalarBody &b = s.body;
  unsigned a = b.cast(b.input(0), ET::I32);
  unsigned w = b.cast(b.input(1), ET::I32);
  if (za != 0) {
    a = b.binary(SK::Sub, a, b.constant(double(za)));
  }
  if (zb != 0) {
    w = b.binary(SK::Sub, w, b.constant(double(zb)));
  }
  b.yield(b.binary(SK::Add, b.output(), b.binary(SK::Mul, a, w)));
  s.init = 0.0;
}

int64_t wrap32(int64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(v));
}

// i32(in_i) - zero point.
unsigned centered(ScalarBody &b, unsigned in, int64_t zp) {
  unsigned v = b.cast(b.input(in), ET::I32);
  return zp == 0 ? v : b.binary(SK::Sub, v, b.constant(double(zp)));
}

// Scale and zero point of a QuantizeLinear/DequantizeLinear: body constants
// per tensor, tensors read along the axis per axis.
struct QuantizeParams {
  graph::QuantParams params;
  std::vector<OperandAccess> reads; // scale, zero point (per axis)
};

absl::StatusOr<QuantizeParams> quantizeParams(LoweringContext &ctx,
                                              const Op &op, ET quantized) {
  const Value *x = op.operand(0);
  auto p = graph::readQuantParams(op.operand(1), op.operand(2),
                                  op.getInt("axis", 1), x->type(), quantized);
  if (absl::IsUnimplemented(p.status())) {
    return unimplemented(op, std::string(p.status().message()) +
                                 "; run-time quantization parameters are not "
                                 "supported");
  }
  if (!p.ok()) {
    return op.emitError(std::string(p.status().message()));
  }
  QuantizeParams out{*p, {}};
  if (!p->perTensor()) {
    unsigned rank = op.result()->type().rank();
    COMPILER_ASSIGN_OR_RETURN(unsigned st, ctx.tensorFor(op.operand(1)));
    out.reads.push_back({st, channelMap(rank, p->axis)});
    unsigned zt = newConstant(ctx, op, "_zero_point", ET::I32,
                              {int64_t(p->zeroPoints.size())}, p->zeroPoints);
    out.reads.push_back({zt, channelMap(rank, p->axis)});
  }
  return out;
}

// An all-parallel op over |op|'s result reading its first operand
// broadcast, then |extra|.
absl::Status elementwiseWith(LoweringContext &ctx, const Op &op,
                             ScalarBody body,
                             std::vector<OperandAccess> extra) {
  const TensorType &t = op.result()->type();
  StructuredOp s = LoweringContext::parallelOp(op, t.dims());
  COMPILER_ASSIGN_OR_RETURN(unsigned in, ctx.tensorFor(op.operand(0)));
  s.inputs.push_back(
      {in, broadcastMap(op.operand(0)->type().dims(), t.dims(), t.rank())});
  for (OperandAccess &a : extra) {
    s.inputs.push_back(std::move(a));
  }
  s.body = std::move(body);
  return ctx.emit(std::move(s), op.result());
}

} // namespace

// A convolution multiplying the widened integer operands into an i32
// accumulator (padding reads the input zero point; with constant weights
// the input zero point is folded into the bias), then the epilogue.
absl::Status lowerQConv(LoweringContext &ctx, const Op &op) {
  const TensorType &x = op.operand(0)->type();
  const TensorType &w = op.operand(1)->type();
  const TensorType &t = op.result()->type();
  if (op.hasAttr("auto_pad") &&
      op.getString("auto_pad", "NOTSET") != "NOTSET") {
    return unimplemented(op, "auto_pad must be resolved before lowering");
  }
  unsigned spatial = x.rank() - 2;
  Window win =
      windowOf(op, graph::IntList(w.dims().begin() + 2, w.dims().end()));
  int64_t group = op.getInt("group", 1);
  int64_t mPerGroup = t.dim(1) / group, cPerGroup = x.dim(1) / group;
  WindowNest nest(t.dim(0), group, mPerGroup, t.dims().slice(2, spatial),
                  cPerGroup, win.kernel);
  StructuredOp s;
  s.nodeName = op.nodeName();
  s.bounds = nest.bounds();
  s.iterators = nest.iterators(nest.inputChannelLoop());
  std::vector<int64_t> offsets;
  for (unsigned i = 0; i < spatial; ++i) {
    offsets.push_back(-win.pads[i]);
  }
  int64_t zx = op.getInt("x_zero_point", 0);
  COMPILER_ASSIGN_OR_RETURN(unsigned xt, ctx.tensorFor(op.operand(0)));
  OperandAccess xAccess{
      xt, nest.inputMap(nest.channel(nest.inputChannelLoop(), cPerGroup),
                        win.strides, win.dilations, offsets)};
  if (win.padded) {
    // Padding reads the zero point, which contributes nothing.
    xAccess.padValue = double(zx);
  }
  s.inputs.push_back(xAccess);
  COMPILER_ASSIGN_OR_RETURN(unsigned wt, ctx.tensorFor(op.operand(1)));
  s.inputs.push_back(
      {wt, nest.weightMap(nest.channel(nest.outputChannelLoop(), mPerGroup),
                          nest.loop(nest.inputChannelLoop()))});
  COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> bias,
                            constantInts(op, 2, "the bias"));
  // With constant weights, sum (x - zx) * w = sum x * w - zx * sum w over
  // every tap (padding reads zx): the correction goes into the bias, in the
  // same modulo-2^32 arithmetic as the accumulator.
  auto weights = graph::getConstantInts(op.operand(1));
  if (weights && zx != 0) {
    int64_t perChannel = w.numElements() / w.dim(0);
    for (int64_t m = 0; m < w.dim(0); ++m) {
      int64_t sum = 0;
      for (int64_t i = 0; i < perChannel; ++i) {
        sum += (*weights)[m * perChannel + i];
      }
      bias[m] = wrap32(bias[m] - zx * sum);
    }
  }
  multiplyAccumulate(s, weights ? 0 : zx, 0);
  unsigned acc = ctx.newTemp(op, "_acc", t.withElementType(ET::I32));
  s.output = {acc, nest.outputMap(mPerGroup)};
  ctx.add(std::move(s));
  return epilogue(ctx, op, acc, bias, 1);
}

// A contraction of the widened integer operands into an i32 accumulator
// (a constant 2-D B without zero point folds a's zero point into the
// bias), then the epilogue.
absl::Status lowerQMatMul(LoweringContext &ctx, const Op &op) {
  const Value *a = op.operand(0), *bv = op.operand(1);
  const TensorType &at = a->type(), &bt = bv->type();
  const TensorType &t = op.result()->type();
  unsigned rank = t.rank();
  unsigned n = rank + 1, kDim = rank;
  StructuredOp s;
  s.nodeName = op.nodeName();
  s.bounds = t.dims().vec();
  s.bounds.push_back(at.dims().back());
  s.iterators.assign(rank, IteratorType::Parallel);
  s.iterators.push_back(IteratorType::Reduction);
  auto operandMap = [&](const TensorType &ot, bool isA) {
    std::vector<int64_t> batchOut(t.dims().begin(), t.dims().end() - 2);
    std::vector<int64_t> batchIn(ot.dims().begin(), ot.dims().end() - 2);
    AffineMap m = broadcastMap(batchIn, batchOut, n);
    m.results.push_back(AffineExpr::dim(n, isA ? rank - 2 : kDim));
    m.results.push_back(AffineExpr::dim(n, isA ? kDim : rank - 1));
    return m;
  };
  COMPILER_ASSIGN_OR_RETURN(unsigned ta, ctx.tensorFor(a));
  COMPILER_ASSIGN_OR_RETURN(unsigned tb, ctx.tensorFor(bv));
  s.inputs.push_back({ta, operandMap(at, true)});
  s.inputs.push_back({tb, operandMap(bt, false)});
  COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> bias,
                            constantInts(op, 2, "the bias"));
  int64_t za = op.getInt("a_zero_point", 0);
  int64_t zb = op.getInt("b_zero_point", 0);
  auto weights = graph::getConstantInts(bv);
  bool fold = weights && zb == 0 && bt.rank() == 2;
  if (fold && za != 0) {
    int64_t k = bt.dim(0), columns = bt.dim(1);
    for (int64_t c = 0; c < columns; ++c) {
      int64_t sum = 0;
      for (int64_t r = 0; r < k; ++r) {
        sum += (*weights)[r * columns + c];
      }
      bias[c] = wrap32(bias[c] - za * sum);
    }
  }
  multiplyAccumulate(s, fold ? 0 : za, zb);
  AffineMap outMap;
  outMap.numDims = n;
  for (unsigned d = 0; d < rank; ++d) {
    outMap.results.push_back(AffineExpr::dim(n, d));
  }
  unsigned acc = ctx.newTemp(op, "_acc", t.withElementType(ET::I32));
  s.output = {acc, outMap};
  ctx.add(std::move(s));
  return epilogue(ctx, op, acc, bias, rank - 1);
}

// QAdd (npu E_ADD: (x - zp) << left_shift rescaled per input, summed with
// saturation), QMul and QRescale as elementwise integer bodies.
absl::Status lowerQElementwise(LoweringContext &ctx, const Op &op) {
  const TensorType &t = op.result()->type();
  ScalarBody b;
  auto attr = [&](const char *name, int64_t def) {
    return op.getInt(name, def);
  };
  std::vector<const Value *> inputs = {op.operand(0)};
  unsigned v;
  if (op.is(OpKind::QRescale)) {
    v = centered(b, 0, attr("x_zero_point", 0));
  } else {
    inputs.push_back(op.operand(1));
    unsigned a = centered(b, 0, attr("a_zero_point", 0));
    unsigned c = centered(b, 1, attr("b_zero_point", 0));
    if (op.is(OpKind::QMul)) {
      v = b.binary(SK::Mul, a, c);
    } else {
      double scale = double(int64_t{1} << attr("left_shift", 20));
      a = requantizeBy(b, b.binary(SK::Mul, a, b.constant(scale)),
                       attr("a_multiplier", 1 << 30), attr("a_shift", 1));
      c = requantizeBy(b, b.binary(SK::Mul, c, b.constant(scale)),
                       attr("b_multiplier", 1 << 30), attr("b_shift", 1));
      v = b.binary(SK::AddSat, a, c);
    }
  }
  v = requantizeBy(b, v, attr("multiplier", 1 << 30), attr("shift", 1));
  ET to = t.elementType();
  b.yield(clampToOutput(b, v, attr("y_zero_point", 0),
                        attr("act_min", graph::integerTypeMin(to)),
                        attr("act_max", graph::integerTypeMax(to)), to));
  return ctx.elementwise(op, op.result(), std::move(inputs), std::move(b));
}

// An i32 window sum, then the rounded division by the number of in-bounds
// taps (a constant per output position when windows reach into padding).
absl::Status lowerQAveragePool(LoweringContext &ctx, const Op &op) {
  const TensorType &x = op.operand(0)->type();
  const TensorType &t = op.result()->type();
  unsigned spatial = x.rank() - 2;
  graph::IntList kernel = op.getIntList("kernel_shape");
  graph::IntList strides = op.getIntList("strides", graph::IntList(spatial, 1));
  graph::IntList pads = op.getIntList("pads", graph::IntList(2 * spatial, 0));
  if (op.hasAttr("auto_pad") &&
      op.getString("auto_pad", "NOTSET") != "NOTSET") {
    return unimplemented(op, "auto_pad must be resolved before lowering");
  }
  // Loops: n, c, out spatial..., kernel spatial...
  std::vector<int64_t> outDims(t.dims().begin() + 2, t.dims().end());
  WindowNest nest(t.dim(0), 1, t.dim(1), outDims, std::nullopt, kernel);
  StructuredOp s;
  s.nodeName = op.nodeName();
  s.bounds = nest.bounds();
  s.iterators = nest.iterators(nest.kernelLoop(0));
  bool padded = false;
  int64_t positions = 1;
  std::vector<int64_t> offsets;
  for (unsigned i = 0; i < spatial; ++i) {
    offsets.push_back(-pads[i]);
    int64_t last = (t.dim(2 + i) - 1) * strides[i] + kernel[i] - 1 - pads[i];
    padded |= pads[i] != 0 || last >= x.dim(2 + i);
    positions *= outDims[i];
  }
  COMPILER_ASSIGN_OR_RETURN(unsigned xt, ctx.tensorFor(op.operand(0)));
  OperandAccess xAccess{xt, nest.inputMap(nest.loop(nest.outputChannelLoop()),
                                          strides, graph::IntList(spatial, 1),
                                          offsets)};
  if (padded) {
    xAccess.padValue = 0.0; // adds nothing to the sum
  }
  s.inputs.push_back(xAccess);
  s.init = 0.0;
  s.body.yield(s.body.binary(SK::Add, s.body.output(),
                             s.body.cast(s.body.input(0), ET::I32)));
  unsigned sum = ctx.newTemp(op, "_sum", t.withElementType(ET::I32));
  s.output = {sum, nest.outputMap(t.dim(1))};
  ctx.add(std::move(s));

  // avg = s > 0 ? (s + cnt / 2) / cnt : (s - cnt / 2) / cnt (C division),
  // cnt the number of in-bounds taps: one constant, or a constant per
  // output position when windows reach into padding.
  unsigned rank = t.rank();
  StructuredOp e = LoweringContext::parallelOp(op, t.dims());
  e.inputs.push_back({sum, AffineMap::identity(rank)});
  ScalarBody &b = e.body;
  unsigned cnt, half;
  if (padded) {
    std::vector<int64_t> counts(positions);
    for (int64_t flat = 0; flat < positions; ++flat) {
      int64_t rest = flat, count = 1;
      for (int64_t i = spatial - 1; i >= 0; --i) {
        int64_t o = rest % outDims[i];
        rest /= outDims[i];
        int64_t inside = 0;
        for (int64_t kk = 0; kk < kernel[i]; ++kk) {
          int64_t at = o * strides[i] + kk - pads[i];
          inside += at >= 0 && at < x.dim(2 + i);
        }
        count *= inside;
      }
      if (count == 0) {
        return op.emitError("a pooling window lies entirely in the padding");
      }
      counts[flat] = count;
    }
    unsigned c = newConstant(ctx, op, "_count", ET::I32, outDims, counts);
    AffineMap spatialMap;
    spatialMap.numDims = rank;
    for (unsigned i = 0; i < spatial; ++i) {
      spatialMap.results.push_back(AffineExpr::dim(rank, 2 + i));
    }
    e.inputs.push_back({c, spatialMap});
    cnt = b.input(1);
    half = b.binary(SK::Div, cnt, b.constant(2));
  } else {
    int64_t window = 1;
    for (int64_t kk : kernel) {
      window *= kk;
    }
    cnt = b.constant(double(window));
    half = b.constant(double(window / 2));
  }
  unsigned total = b.input(0);
  unsigned up = b.binary(SK::Div, b.binary(SK::Add, total, half), cnt);
  unsigned down = b.binary(SK::Div, b.binary(SK::Sub, total, half), cnt);
  unsigned avg = b.select(b.binary(SK::CmpGt, total, b.constant(0)), up, down);
  b.yield(clampToOutput(b, avg, 0, op.getInt("act_min", -128),
                        op.getInt("act_max", 127), ET::I8));
  return ctx.emit(std::move(e), op.result());
}

// y = saturate(round_half_even(x / scale) + zero point).
absl::Status lowerQuantizeLinear(LoweringContext &ctx, const Op &op) {
  ET to = op.result()->type().elementType();
  COMPILER_ASSIGN_OR_RETURN(QuantizeParams pr, quantizeParams(ctx, op, to));
  ScalarBody b;
  bool perAxis = !pr.params.perTensor();
  unsigned scale = perAxis ? b.input(1) : b.constant(pr.params.scale());
  unsigned q = b.unary(SK::RoundEven, b.binary(SK::Div, b.input(0), scale));
  // fptosi saturates (NaN is 0); bound it so adding the zero point cannot
  // overflow, then saturate to the result type.
  unsigned r = b.cast(q, ET::I32);
  r = b.binary(SK::Max, r, b.constant(-16777216));
  r = b.binary(SK::Min, r, b.constant(16777216));
  unsigned zp =
      perAxis ? b.input(2) : b.constant(double(pr.params.zeroPoint()));
  r = b.binary(SK::Add, r, zp);
  r = b.binary(SK::Max, r, b.constant(double(graph::integerTypeMin(to))));
  r = b.binary(SK::Min, r, b.constant(double(graph::integerTypeMax(to))));
  b.yield(b.cast(r, to));
  return elementwiseWith(ctx, op, std::move(b), std::move(pr.reads));
}

// y = f32(i32(x) - zero point) * scale.
absl::Status lowerDequantizeLinear(LoweringContext &ctx, const Op &op) {
  COMPILER_ASSIGN_OR_RETURN(
      QuantizeParams pr,
      quantizeParams(ctx, op, op.operand(0)->type().elementType()));
  ScalarBody b;
  bool perAxis = !pr.params.perTensor();
  unsigned v = b.cast(b.input(0), ET::I32);
  if (perAxis) {
    v = b.binary(SK::Sub, v, b.input(2));
  } else if (pr.params.zeroPoint() != 0) {
    v = b.binary(SK::Sub, v, b.constant(double(pr.params.zeroPoint())));
  }
  unsigned scale = perAxis ? b.input(1) : b.constant(pr.params.scale());
  b.yield(b.binary(SK::Mul, b.cast(v, ET::F32), scale));
  return elementwiseWith(ctx, op, std::move(b), std::move(pr.reads));
}

absl::Status lowerQuantizedOperator(LoweringContext &, const Op &op) {
  return unimplemented(op, "quantized operators are lowered after the "
                           "fuse-qdq pass rewrites them into canonical "
                           "quantized ops");
}

} // namespace osprey::compiler::structured::lowering
