// Reductions (ReduceSum, ReduceMax, ReduceMean, ...), ArgMax/ArgMin, CumSum
// and Softmax, which decomposes into reductions and elementwise ops.
#include <cmath>

#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {

absl::Status lowerReduce(LoweringContext &ctx, const Op &op) {
  const TensorType &in = op.operand(0)->type();
  std::vector<bool> reduced(in.rank(), false);
  std::vector<int64_t> axes;
  if (op.operand(1)) {
    auto a = graph::getConstantInts(op.operand(1));
    if (!a) {
      return op.emitError("axes must be a constant");
    }
    axes = *a;
  }
  if (axes.empty() && op.getInt("noop_with_empty_axes", 0)) {
    return ctx.copy(op);
  }
  for (int64_t a : axes) {
    reduced[a < 0 ? a + in.rank() : a] = true;
  }
  if (axes.empty()) {
    reduced.assign(in.rank(), true);
  }
  bool keep = op.getInt("keepdims", 1) != 0;
  COMPILER_ASSIGN_OR_RETURN(unsigned x, ctx.tensorFor(op.operand(0)));
  if (op.is(OpKind::ReduceMean)) {
    COMPILER_ASSIGN_OR_RETURN(
        unsigned sum,
        ctx.reduce(op, x, reduced, keep, SK::Add, 0, false, "_sum"));
    int64_t count = in.numElements() /
                    std::max<int64_t>(1, op.result()->type().numElements());
    return ctx.scaleInto(op, sum, 1.0 / count);
  }
  if (op.is(OpKind::ReduceL1)) {
    ScalarBody abs;
    abs.yield(abs.unary(SK::Abs, abs.input(0)));
    COMPILER_ASSIGN_OR_RETURN(
        unsigned a, ctx.elementwiseTemp(op, in, {x}, std::move(abs), "_abs"));
    return ctx.reduce(op, a, reduced, keep, SK::Add, 0.0, false, "",
                      op.result())
        .status();
  }
  if (op.is(OpKind::ReduceL2)) {
    COMPILER_ASSIGN_OR_RETURN(
        unsigned sq,
        ctx.reduce(op, x, reduced, keep, SK::Add, 0.0, true, "_sumsq"));
    const TensorType &t = op.result()->type();
    StructuredOp s = LoweringContext::parallelOp(op, t.dims());
    s.inputs.push_back({sq, AffineMap::identity(t.rank())});
    s.body.yield(s.body.unary(SK::Sqrt, s.body.input(0)));
    return ctx.emit(std::move(s), op.result());
  }
  SK combine = SK::Add;
  double init = 0.0;
  bool square = false;
  switch (op.info()->kind) {
  case OpKind::ReduceMax:
    combine = SK::Max;
    init = -INFINITY;
    break;
  case OpKind::ReduceMin:
    combine = SK::Min;
    init = INFINITY;
    break;
  case OpKind::ReduceProd:
    combine = SK::Mul;
    init = 1.0;
    break;
  case OpKind::ReduceSumSquare:
    square = true;
    break;
  default: // ReduceSum
    break;
  }
  return ctx.reduce(op, x, reduced, keep, combine, init, square, "",
                    op.result())
      .status();
}

// ArgMax / ArgMin in two reductions along the axis: the extreme value m
// (NaN when the row holds one), then the first (or, with
// select_last_index, the last) position whose element is m: the minimum
// (maximum) over select(x == m, i, miss) with i read from a constant
// 0..D-1 along the axis. A row whose m is NaN matches its NaNs, so the
// first NaN is reported, as numpy does; every row matches somewhere, so
// |miss| (D, or -1 for the last) never reaches the result.
absl::Status lowerArgMinMax(LoweringContext &ctx, const Op &op) {
  const TensorType &in = op.operand(0)->type();
  unsigned n = in.rank();
  int64_t axis = op.getInt("axis", 0);
  axis = axis < 0 ? axis + n : axis;
  bool keep = op.getInt("keepdims", 1) != 0;
  bool last = op.getInt("select_last_index", 0) != 0;
  bool isMax = op.is(OpKind::ArgMax);
  int64_t extent = in.dim(axis);
  std::vector<bool> reduced(n, false);
  reduced[axis] = true;
  COMPILER_ASSIGN_OR_RETURN(unsigned x, ctx.tensorFor(op.operand(0)));
  COMPILER_ASSIGN_OR_RETURN(
      unsigned m, ctx.reduce(op, x, reduced, true, isMax ? SK::Max : SK::Min,
                             isMax ? -INFINITY : INFINITY, false,
                             isMax ? "_max" : "_min"));
  std::vector<int64_t> positions(extent);
  for (int64_t i = 0; i < extent; ++i) {
    positions[i] = i;
  }
  unsigned iota = ctx.newTemp(
      op, "_positions", TensorType::ranked(ElementType::I64, {extent}));
  ctx.program().tensors[iota].constant =
      graph::DenseData::fromInt64s(ElementType::I64, positions);

  StructuredOp s;
  s.nodeName = op.nodeName();
  s.bounds = in.dims().vec();
  AffineMap outMap, maxMap, iotaMap;
  outMap.numDims = maxMap.numDims = iotaMap.numDims = n;
  for (unsigned d = 0; d < n; ++d) {
    bool r = d == unsigned(axis);
    s.iterators.push_back(r ? IteratorType::Reduction : IteratorType::Parallel);
    AffineExpr e = r ? AffineExpr::constantExpr(n, 0) : AffineExpr::dim(n, d);
    maxMap.results.push_back(e);
    if (!r || keep) {
      outMap.results.push_back(e);
    }
  }
  iotaMap.results.push_back(AffineExpr::dim(n, axis));
  s.inputs = {{x, AffineMap::identity(n)}, {m, maxMap}, {iota, iotaMap}};
  COMPILER_ASSIGN_OR_RETURN(unsigned out, ctx.tensorFor(op.result()));
  s.output = {out, outMap};
  double miss = last ? -1.0 : double(extent);
  s.init = miss;
  ScalarBody &b = s.body;
  unsigned xv = b.input(0), mv = b.input(1), i = b.input(2);
  unsigned missNode = b.constant(miss);
  // x == m, or both are NaN.
  unsigned bothNaN = b.select(b.binary(SK::CmpEq, mv, mv), missNode,
                              b.select(b.binary(SK::CmpEq, xv, xv), missNode, i));
  unsigned candidate = b.select(b.binary(SK::CmpEq, xv, mv), i, bothNaN);
  b.yield(b.binary(last ? SK::Max : SK::Min, b.output(), candidate));
  ctx.add(std::move(s));
  return absl::OkStatus();
}

// CumSum along axis a of extent D: a reduction over one more loop k in
// [0, D) reading x at position i - k (reverse: i + k), one step further
// when exclusive, zero outside the axis. D reads per element: running sums
// over long axes cost quadratic time.
absl::Status lowerCumSum(LoweringContext &ctx, const Op &op) {
  const TensorType &t = op.result()->type();
  unsigned n = t.rank();
  auto axisValue = graph::getConstantInts(op.operand(1));
  if (!axisValue || axisValue->size() != 1) {
    return op.emitError("the axis must be a constant");
  }
  int64_t axis = (*axisValue)[0];
  axis = axis < 0 ? axis + n : axis;
  bool exclusive = op.getInt("exclusive", 0) != 0;
  bool reverse = op.getInt("reverse", 0) != 0;
  COMPILER_ASSIGN_OR_RETURN(unsigned x, ctx.tensorFor(op.operand(0)));
  StructuredOp s;
  s.nodeName = op.nodeName();
  s.bounds = t.dims().vec();
  s.bounds.push_back(t.dim(axis));
  s.iterators.assign(n, IteratorType::Parallel);
  s.iterators.push_back(IteratorType::Reduction);
  AffineMap read = AffineMap::identity(n + 1);
  read.results.pop_back();
  AffineExpr &e = read.results[axis];
  e.coeffs[n] = reverse ? 1 : -1;
  e.constant = exclusive ? (reverse ? 1 : -1) : 0;
  AffineMap write = AffineMap::identity(n + 1);
  write.results.pop_back();
  s.inputs.push_back({x, read, 0.0});
  COMPILER_ASSIGN_OR_RETURN(unsigned out, ctx.tensorFor(op.result()));
  s.output = {out, write};
  s.init = 0.0;
  s.body.yield(s.body.binary(SK::Add, s.body.output(), s.body.input(0)));
  ctx.add(std::move(s));
  return absl::OkStatus();
}

namespace {

// softmax(x) = exp(x - max) / sum(exp(x - max)) and
// logsoftmax(x) = (x - max) - log(sum(exp(x - max))) along the axis: the
// same maximum, exponentials and sum, then either result.
absl::Status lowerSoftmaxOrLog(LoweringContext &ctx, const Op &op, bool log) {
  const TensorType &t = op.result()->type();
  int64_t axis = op.getInt("axis", -1);
  axis = axis < 0 ? axis + t.rank() : axis;
  std::vector<bool> reduced(t.rank(), false);
  reduced[axis] = true;
  COMPILER_ASSIGN_OR_RETURN(unsigned x, ctx.tensorFor(op.operand(0)));
  COMPILER_ASSIGN_OR_RETURN(
      unsigned mx,
      ctx.reduce(op, x, reduced, true, SK::Max, -INFINITY, false, "_max"));
  ScalarBody eb;
  eb.yield(eb.unary(SK::Exp, eb.binary(SK::Sub, eb.input(0), eb.input(1))));
  COMPILER_ASSIGN_OR_RETURN(
      unsigned e, ctx.elementwiseTemp(op, t, {x, mx}, std::move(eb), "_exp"));
  COMPILER_ASSIGN_OR_RETURN(
      unsigned sum,
      ctx.reduce(op, e, reduced, true, SK::Add, 0, false, "_sum"));
  unsigned n = t.rank();
  StructuredOp s = LoweringContext::parallelOp(op, t.dims());
  auto broadcast = [&](unsigned v) {
    return structured::OperandAccess{
        v, broadcastMap(ctx.type(v).dims(), t.dims(), n)};
  };
  ScalarBody &b = s.body;
  if (log) {
    s.inputs = {{x, AffineMap::identity(n)}, broadcast(mx), broadcast(sum)};
    b.yield(b.binary(SK::Sub, b.binary(SK::Sub, b.input(0), b.input(1)),
                     b.unary(SK::Log, b.input(2))));
  } else {
    s.inputs = {{e, AffineMap::identity(n)}, broadcast(sum)};
    b.yield(b.binary(SK::Div, b.input(0), b.input(1)));
  }
  return ctx.emit(std::move(s), op.result());
}

} // namespace

absl::Status lowerSoftmax(LoweringContext &ctx, const Op &op) {
  return lowerSoftmaxOrLog(ctx, op, /*log=*/false);
}

absl::Status lowerLogSoftmax(LoweringContext &ctx, const Op &op) {
  return lowerSoftmaxOrLog(ctx, op, /*log=*/true);
}

} // namespace osprey::compiler::structured::lowering
