// Gather: constant indices as affine or summed selected reads (checked at
// compile time), run-time indices as one indirect read (checked when the
// dispatch runs).
#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {
namespace {

// A copy of the data (operand 0) into the result whose index along |axis|
// is the value of the indices (operand 1) read through |indexMap|.
absl::Status emitIndirectRead(LoweringContext &ctx, const Op &op,
                              AffineMap dataMap, AffineMap indexMap,
                              int64_t axis) {
  StructuredOp s =
      LoweringContext::parallelOp(op, op.result()->type().dims());
  COMPILER_ASSIGN_OR_RETURN(unsigned dt, ctx.tensorFor(op.operand(0)));
  COMPILER_ASSIGN_OR_RETURN(unsigned xt, ctx.tensorFor(op.operand(1)));
  OperandAccess read{dt, std::move(dataMap)};
  read.indirect = IndirectIndex{unsigned(axis), 1};
  s.inputs.push_back(read);
  s.inputs.push_back({xt, std::move(indexMap)});
  s.body.yield(s.body.input(0));
  return ctx.emit(std::move(s), op.result());
}

// Gather whose indices are read at run time: out[pre, j..., post] =
// data[pre, idx[j...], post], one indirect read of the data along |axis|.
// Negative indices wrap; the generated code checks every index and fails
// the dispatch on one outside [-D, D).
absl::Status lowerIndirectGather(LoweringContext &ctx, const Op &op,
                                 int64_t axis) {
  const TensorType &data = op.operand(0)->type();
  const TensorType &indexType = op.operand(1)->type();
  const TensorType &t = op.result()->type();
  ElementType it = indexType.elementType();
  if (it != ElementType::I32 && it != ElementType::I64) {
    return op.emitError("indices have element type " +
                        graph::elementTypeName(it).str() +
                        "; Gather takes i32 or i64 indices");
  }
  unsigned n = t.rank();
  unsigned q = indexType.rank();
  int64_t rank = data.rank();
  if (int64_t(n) != rank - 1 + q) {
    return op.emitError("result rank " + std::to_string(n) +
                        " does not match data rank " + std::to_string(rank) +
                        " and index rank " + std::to_string(q));
  }
  AffineMap dataMap;
  dataMap.numDims = n;
  for (int64_t a = 0; a < rank; ++a) {
    dataMap.results.push_back(a < axis    ? AffineExpr::dim(n, a)
                              : a == axis ? AffineExpr::constantExpr(n, 0)
                                          : AffineExpr::dim(n, a - 1 + q));
  }
  AffineMap indexMap;
  indexMap.numDims = n;
  for (unsigned i = 0; i < q; ++i) {
    indexMap.results.push_back(AffineExpr::dim(n, axis + i));
  }
  return emitIndirectRead(ctx, op, std::move(dataMap), std::move(indexMap),
                          axis);
}

} // namespace

// GatherElements: out[i...] = data[i... with idx[i...] along |axis|], one
// indirect read of the data (the shape rule keeps the other axes in
// bounds); negative indices wrap and the generated code fails the dispatch
// on one outside [-D, D).
absl::Status lowerGatherElements(LoweringContext &ctx, const Op &op) {
  const TensorType &t = op.result()->type();
  const TensorType &data = op.operand(0)->type();
  if (!t.hasStaticShape() || !data.hasStaticShape()) {
    return absl::UnimplementedError(op.describe() +
                                    ": needs static shapes");
  }
  unsigned n = t.rank();
  int64_t axis = op.getInt("axis", 0);
  axis = axis < 0 ? axis + n : axis;
  AffineMap dataMap = AffineMap::identity(n);
  dataMap.results[axis] = AffineExpr::constantExpr(n, 0);
  return emitIndirectRead(ctx, op, std::move(dataMap), AffineMap::identity(n),
                          axis);
}

// Gather with constant indices: out[pre, j..., post] = data[pre, idx[j],
// post]. Read j indexes the gathered axis with idx[j] + D * (p - j), where p
// is the linear position in the index dimensions and D the axis length, so
// it is in bounds exactly where p == j (padding 0 elsewhere) and the body
// sums the reads, as for Concat; a 1-D arithmetic progression of indices is
// one affine read instead. Indices are checked here: an index outside
// [-D, D) is an error naming the node, never an out-of-bounds read.
absl::Status lowerGather(LoweringContext &ctx, const Op &op) {
  constexpr size_t kMaxIndices = 64;
  const TensorType &data = op.operand(0)->type();
  const TensorType &indexType = op.operand(1)->type();
  const TensorType &t = op.result()->type();
  int64_t rank = data.rank();
  int64_t axis = op.getInt("axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  auto indices = graph::getConstantInts(op.operand(1));
  if (!indices) {
    return lowerIndirectGather(ctx, op, axis);
  }
  unsigned n = t.rank();
  unsigned q = indexType.rank();
  int64_t d = data.dim(axis);
  for (size_t j = 0; j < indices->size(); ++j) {
    int64_t v = (*indices)[j];
    if (v < -d || v >= d) {
      return op.emitError("index " + std::to_string(v) + " at position " +
                          std::to_string(j) + " is out of range [" +
                          std::to_string(-d) + ", " + std::to_string(d) + ")");
    }
    (*indices)[j] = v < 0 ? v + d : v;
  }
  // A 1-D index list that is an arithmetic progression is one affine read.
  if (q == 1 && indices->size() > 1) {
    int64_t base = (*indices)[0], step = (*indices)[1] - base;
    bool affine = true;
    for (size_t j = 0; j < indices->size() && affine; ++j) {
      affine = (*indices)[j] == base + step * int64_t(j);
    }
    if (affine) {
      StructuredOp s = LoweringContext::parallelOp(op, t.dims());
      COMPILER_ASSIGN_OR_RETURN(unsigned dt, ctx.tensorFor(op.operand(0)));
      s.inputs.push_back({dt, axisMap(n, axis, step, base)});
      s.body.yield(s.body.input(0));
      return ctx.emit(std::move(s), op.result());
    }
  }
  if (indices->size() > kMaxIndices) {
    // Past a few indices one read per index costs more than reading the
    // (already checked) index tensor.
    return lowerIndirectGather(ctx, op, axis);
  }
  if (indices->empty()) {
    return absl::UnimplementedError(op.describe() +
                                    ": Gather with no indices does not "
                                    "lower (empty result)");
  }
  // Row-major strides of the index dimensions.
  std::vector<int64_t> strides(q, 1);
  for (int64_t i = int64_t(q) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * indexType.dim(i + 1);
  }
  StructuredOp s = LoweringContext::parallelOp(op, t.dims());
  COMPILER_ASSIGN_OR_RETURN(unsigned dt, ctx.tensorFor(op.operand(0)));
  bool single = indices->size() == 1;
  unsigned sum = 0;
  for (size_t j = 0; j < indices->size(); ++j) {
    int64_t v = (*indices)[j];
    AffineMap m;
    m.numDims = n;
    for (int64_t a = 0; a < axis; ++a) {
      m.results.push_back(AffineExpr::dim(n, a));
    }
    AffineExpr e = AffineExpr::constantExpr(n, v - d * int64_t(j));
    for (unsigned i = 0; i < q && !single; ++i) {
      e.coeffs[axis + i] = d * strides[i];
    }
    m.results.push_back(e);
    for (int64_t a = axis + 1; a < rank; ++a) {
      m.results.push_back(AffineExpr::dim(n, a - 1 + q));
    }
    OperandAccess access{dt, m};
    if (!single) {
      access.padValue = 0.0;
    }
    s.inputs.push_back(access);
    unsigned r = s.body.input(j);
    sum = j == 0 ? r : s.body.binary(padCombine(t), sum, r);
  }
  s.body.yield(sum);
  return ctx.emit(std::move(s), op.result());
}

} // namespace osprey::compiler::structured::lowering
