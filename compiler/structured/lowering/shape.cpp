// Constants, views (reshapes), and copies that only move data along axes:
// Transpose, Concat, Split.
#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {

absl::Status lowerConstant(LoweringContext &ctx, const Op &op) {
  COMPILER_ASSIGN_OR_RETURN(unsigned t, ctx.tensorFor(op.result()));
  ctx.program().tensors[t].constant = op.value();
  return absl::OkStatus();
}

// ConstantOfShape left after folding (its result is over the folding size
// limit): a fill with no inputs. A shape known only at run time is refused.
absl::Status lowerConstantOfShape(LoweringContext &ctx, const Op &op) {
  const TensorType &type = op.result()->type();
  if (!type.hasStaticShape()) {
    return absl::UnimplementedError(
        op.describe() +
        ": the shape is computed at run time; only constant shapes are "
        "supported (pin dynamic input dimensions with --input-shape)");
  }
  StructuredOp s = LoweringContext::parallelOp(op, type.dims());
  s.body.yield(s.body.constant(op.getFloat("value", 0.0)));
  return ctx.emit(std::move(s), op.result());
}

absl::Status lowerView(LoweringContext &ctx, const Op &op) {
  return ctx.view(op);
}

absl::Status lowerTranspose(LoweringContext &ctx, const Op &op) {
  const TensorType &in = op.operand(0)->type();
  graph::IntList perm = op.getIntList("perm");
  if (perm.empty()) {
    for (int64_t i = in.rank() - 1; i >= 0; --i) {
      perm.push_back(i);
    }
  }
  unsigned n = in.rank();
  StructuredOp s = LoweringContext::parallelOp(op, op.result()->type().dims());
  AffineMap m;
  m.numDims = n;
  m.results.resize(n);
  for (unsigned i = 0; i < n; ++i) {
    m.results[perm[i]] = AffineExpr::dim(n, i);
  }
  COMPILER_ASSIGN_OR_RETURN(unsigned it, ctx.tensorFor(op.operand(0)));
  s.inputs.push_back({it, m});
  s.body.yield(s.body.input(0));
  return ctx.emit(std::move(s), op.result());
}

// Concat: each input is read shifted to its place along the axis with
// padding 0, and the body sums the reads; exactly one is in bounds at any
// output index, so the sum is that input's value.
absl::Status lowerConcat(LoweringContext &ctx, const Op &op) {
  const TensorType &t = op.result()->type();
  unsigned n = t.rank();
  int64_t axis = op.getInt("axis", 0);
  axis = axis < 0 ? axis + n : axis;
  StructuredOp s = LoweringContext::parallelOp(op, t.dims());
  int64_t offset = 0;
  unsigned sum = 0;
  for (unsigned i = 0; i < op.numOperands(); ++i) {
    const Value *in = op.operand(i);
    COMPILER_ASSIGN_OR_RETURN(unsigned it, ctx.tensorFor(in));
    s.inputs.push_back({it, axisMap(n, axis, 1, -offset), 0.0});
    unsigned v = s.body.input(i);
    sum = i == 0 ? v : s.body.binary(padCombine(t), sum, v);
    offset += in->type().dim(axis);
  }
  s.body.yield(sum);
  return ctx.emit(std::move(s), op.result());
}

// Split: one copy per result reading its range of the input.
absl::Status lowerSplit(LoweringContext &ctx, const Op &op) {
  const TensorType &in = op.operand(0)->type();
  unsigned n = in.rank();
  int64_t axis = op.getInt("axis", 0);
  axis = axis < 0 ? axis + n : axis;
  COMPILER_ASSIGN_OR_RETURN(unsigned it, ctx.tensorFor(op.operand(0)));
  int64_t offset = 0;
  for (const Value *result : op.results()) {
    const TensorType &t = result->type();
    StructuredOp s = LoweringContext::parallelOp(op, t.dims());
    s.inputs.push_back({it, axisMap(n, axis, 1, offset)});
    s.body.yield(s.body.input(0));
    COMPILER_RETURN_IF_ERROR(ctx.emit(std::move(s), result));
    offset += t.dim(axis);
  }
  if (offset != in.dim(axis)) {
    return op.emitError("split sizes add up to " + std::to_string(offset) +
                        ", expected " + std::to_string(in.dim(axis)));
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::structured::lowering
