// Matrix products: MatMul (batched, broadcasting) and Gemm (transposes,
// alpha, beta, C) as one contraction plus, when needed, an elementwise op
// that fusion puts back as the contraction's epilogue.
#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {

absl::Status lowerMatMul(LoweringContext &ctx, const Op &op) {
  bool gemm = op.is(OpKind::Gemm);
  const Value *a = op.operand(0), *b = op.operand(1);
  const TensorType &at = a->type(), &bt = b->type();
  const TensorType &t = op.result()->type();
  if (at.rank() < 2 || bt.rank() < 2) {
    return absl::UnimplementedError(
        op.describe() + ": matrix-vector products do not lower yet");
  }
  // Loops: output dims (batch..., m, n) then k.
  unsigned rank = t.rank();
  unsigned n = rank + 1, kDim = rank;
  StructuredOp s;
  s.nodeName = op.nodeName();
  s.bounds = t.dims().vec();
  bool transA = gemm && op.getInt("transA", 0);
  bool transB = gemm && op.getInt("transB", 0);
  s.bounds.push_back(at.dim(transA ? at.rank() - 2 : at.rank() - 1));
  s.iterators.assign(rank, IteratorType::Parallel);
  s.iterators.push_back(IteratorType::Reduction);
  auto operandMap = [&](const TensorType &ot, bool trans, bool isA) {
    // Batch dims broadcast against the output batch dims.
    std::vector<int64_t> batchOut(t.dims().begin(), t.dims().end() - 2);
    std::vector<int64_t> batchIn(ot.dims().begin(), ot.dims().end() - 2);
    AffineMap m = broadcastMap(batchIn, batchOut, n);
    unsigned row = isA ? rank - 2 : kDim;
    unsigned col = isA ? kDim : rank - 1;
    if (trans) {
      std::swap(row, col);
    }
    m.results.push_back(AffineExpr::dim(n, row));
    m.results.push_back(AffineExpr::dim(n, col));
    return m;
  };
  COMPILER_ASSIGN_OR_RETURN(unsigned ta, ctx.tensorFor(a));
  COMPILER_ASSIGN_OR_RETURN(unsigned tb, ctx.tensorFor(b));
  s.inputs.push_back({ta, operandMap(at, transA, true)});
  s.inputs.push_back({tb, operandMap(bt, transB, false)});
  AffineMap outMap;
  outMap.numDims = n;
  for (unsigned d = 0; d < rank; ++d) {
    outMap.results.push_back(AffineExpr::dim(n, d));
  }
  s.init = 0.0;
  s.body.yield(
      s.body.binary(SK::Add, s.body.output(),
                    s.body.binary(SK::Mul, s.body.input(0), s.body.input(1))));
  double alpha = gemm ? op.getFloat("alpha", 1.0) : 1.0;
  double beta = gemm ? op.getFloat("beta", 1.0) : 1.0;
  const Value *c = gemm ? op.operand(2) : nullptr;
  bool epilogue = alpha != 1.0 || c;
  unsigned acc;
  if (epilogue) {
    acc = ctx.newTemp(op, "_acc", t);
  } else {
    COMPILER_ASSIGN_OR_RETURN(acc, ctx.tensorFor(op.result()));
  }
  s.output = {acc, outMap};
  ctx.add(std::move(s));
  if (!epilogue) {
    return absl::OkStatus();
  }
  // y = alpha * acc + beta * C as a separate elementwise op; fusion puts it
  // back into the contraction's dispatch as an epilogue.
  ScalarBody eb;
  unsigned y = eb.input(0);
  if (alpha != 1.0) {
    y = eb.binary(SK::Mul, y, eb.constant(alpha));
  }
  std::vector<unsigned> ins = {acc};
  if (c) {
    unsigned cv = eb.input(1);
    if (beta != 1.0) {
      cv = eb.binary(SK::Mul, cv, eb.constant(beta));
    }
    y = eb.binary(SK::Add, y, cv);
    COMPILER_ASSIGN_OR_RETURN(unsigned ct, ctx.tensorFor(c));
    ins.push_back(ct);
  }
  eb.yield(y);
  StructuredOp e = LoweringContext::parallelOp(op, t.dims());
  for (unsigned tensor : ins) {
    e.inputs.push_back(
        {tensor, broadcastMap(ctx.type(tensor).dims(), t.dims(), rank)});
  }
  e.body = std::move(eb);
  return ctx.emit(std::move(e), op.result());
}

} // namespace osprey::compiler::structured::lowering
