// Normalizations: BatchNormalization (inference form, per channel) and
// LayerNormalization (reductions over the trailing axes, then elementwise).
#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {

// y = (x - mean) * gamma * rsqrt(var + eps) + beta, per channel (dim 1).
absl::Status lowerBatchNorm(LoweringContext &ctx, const Op &op) {
  ScalarBody b;
  unsigned x = b.input(0), gamma = b.input(1), beta = b.input(2),
           mean = b.input(3), var = b.input(4);
  unsigned inv =
      b.unary(SK::Rsqrt,
              b.binary(SK::Add, var, b.constant(op.getFloat("epsilon", 1e-5))));
  b.yield(b.binary(SK::Add,
                   b.binary(SK::Mul, b.binary(SK::Sub, x, mean),
                            b.binary(SK::Mul, gamma, inv)),
                   beta));
  const TensorType &t = op.result()->type();
  unsigned n = t.rank();
  StructuredOp s = LoweringContext::parallelOp(op, t.dims());
  COMPILER_ASSIGN_OR_RETURN(unsigned xt, ctx.tensorFor(op.operand(0)));
  s.inputs.push_back({xt, AffineMap::identity(n)});
  for (unsigned i = 1; i < 5; ++i) {
    COMPILER_ASSIGN_OR_RETURN(unsigned pt, ctx.tensorFor(op.operand(i)));
    s.inputs.push_back({pt, channelMap(n)});
  }
  s.body = std::move(b);
  return ctx.emit(std::move(s), op.result());
}

// y = (x - mean) * rsqrt(var + eps) * scale + bias over the axes from
// |axis| on, with the optional Mean and InvStdDev results.
absl::Status lowerLayerNorm(LoweringContext &ctx, const Op &op) {
  const TensorType &t = op.result()->type();
  int64_t axis = op.getInt("axis", -1);
  axis = axis < 0 ? axis + t.rank() : axis;
  std::vector<bool> reduced(t.rank(), false);
  int64_t count = 1;
  for (int64_t d = axis; d < t.rank(); ++d) {
    reduced[d] = true;
    count *= t.dim(d);
  }
  double epsilon = op.getFloat("epsilon", 1e-5);
  COMPILER_ASSIGN_OR_RETURN(unsigned x, ctx.tensorFor(op.operand(0)));
  COMPILER_ASSIGN_OR_RETURN(
      unsigned sum,
      ctx.reduce(op, x, reduced, true, SK::Add, 0, false, "_sum"));
  // d = x - sum / N
  ScalarBody cb;
  cb.yield(
      cb.binary(SK::Sub, cb.input(0),
                cb.binary(SK::Mul, cb.input(1), cb.constant(1.0 / count))));
  COMPILER_ASSIGN_OR_RETURN(
      unsigned centered,
      ctx.elementwiseTemp(op, t, {x, sum}, std::move(cb), "_centered"));
  COMPILER_ASSIGN_OR_RETURN(
      unsigned sq,
      ctx.reduce(op, centered, reduced, true, SK::Add, 0, true, "_sqsum"));
  // Optional results: Mean = sum / N, InvStdDev = rsqrt(sq / N + eps), both
  // of the reduced (keepdims) shape.
  for (unsigned r = 1; r < op.numResults(); ++r) {
    const TensorType &rt = op.result(r)->type();
    StructuredOp st = LoweringContext::parallelOp(op, rt.dims());
    st.inputs.push_back({r == 1 ? sum : sq, AffineMap::identity(rt.rank())});
    unsigned scaled = st.body.binary(SK::Mul, st.body.input(0),
                                     st.body.constant(1.0 / count));
    if (r == 2) {
      scaled =
          st.body.unary(SK::Rsqrt, st.body.binary(SK::Add, scaled,
                                                  st.body.constant(epsilon)));
    }
    st.body.yield(scaled);
    COMPILER_RETURN_IF_ERROR(ctx.emit(std::move(st), op.result(r)));
  }
  ScalarBody nb;
  unsigned inv = nb.unary(
      SK::Rsqrt,
      nb.binary(SK::Add,
                nb.binary(SK::Mul, nb.input(1), nb.constant(1.0 / count)),
                nb.constant(epsilon)));
  unsigned y =
      nb.binary(SK::Mul, nb.binary(SK::Mul, nb.input(0), inv), nb.input(2));
  std::vector<const Value *> extra = {op.operand(1)};
  if (op.operand(2)) {
    y = nb.binary(SK::Add, y, nb.input(3));
    extra.push_back(op.operand(2));
  }
  nb.yield(y);
  unsigned n = t.rank();
  StructuredOp s = LoweringContext::parallelOp(op, t.dims());
  s.inputs.push_back({centered, AffineMap::identity(n)});
  s.inputs.push_back({sq, broadcastMap(ctx.type(sq).dims(), t.dims(), n)});
  for (const Value *v : extra) {
    COMPILER_ASSIGN_OR_RETURN(unsigned vt, ctx.tensorFor(v));
    s.inputs.push_back({vt, broadcastMap(v->type().dims(), t.dims(), n)});
  }
  s.body = std::move(nb);
  return ctx.emit(std::move(s), op.result());
}

} // namespace osprey::compiler::structured::lowering
