// Reductions (ReduceSum, ReduceMax, ReduceMean) and Softmax, which
// decomposes into reductions and elementwise ops.
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
