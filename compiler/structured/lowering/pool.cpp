// Pools: MaxPool and AveragePool as windowed reductions with padded reads
// (averages as a separate elementwise scaling), GlobalAveragePool as a
// reduction over the spatial dims.
#include <cmath>

#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {
namespace {

// AveragePool excluding padding divides by the number of in-bounds window
// elements, which depends only on the output position: a constant of
// reciprocals over the output's spatial dims.
absl::StatusOr<unsigned> reciprocalCounts(LoweringContext &ctx, const Op &op,
                                          const Window &win) {
  const TensorType &x = op.operand(0)->type();
  const TensorType &t = op.result()->type();
  int64_t spatial = x.rank() - 2;
  std::vector<int64_t> dims(t.dims().begin() + 2, t.dims().end());
  int64_t total = 1;
  for (int64_t d : dims) {
    total *= d;
  }
  std::vector<double> values(total);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat, count = 1;
    for (int64_t i = spatial - 1; i >= 0; --i) {
      int64_t o = rest % dims[i];
      rest /= dims[i];
      int64_t inside = 0;
      for (int64_t kk = 0; kk < win.kernel[i]; ++kk) {
        int64_t at = o * win.strides[i] + kk * win.dilations[i] - win.pads[i];
        inside += at >= 0 && at < x.dim(2 + i);
      }
      count *= inside;
    }
    if (count == 0) {
      return op.emitError("a pooling window lies entirely in the padding");
    }
    values[flat] = 1.0 / count;
  }
  unsigned c =
      ctx.newTemp(op, "_inv_count", TensorType::ranked(t.elementType(), dims));
  ctx.program().tensors[c].constant =
      graph::DenseData::fromDoubles(t.elementType(), values);
  return c;
}

} // namespace

absl::Status lowerPool(LoweringContext &ctx, const Op &op) {
  bool isMax = op.is(OpKind::MaxPool);
  const TensorType &x = op.operand(0)->type();
  const TensorType &t = op.result()->type();
  if (op.hasAttr("auto_pad") &&
      op.getString("auto_pad", "NOTSET") != "NOTSET") {
    return absl::UnimplementedError(
        op.describe() + ": auto_pad must be resolved before lowering");
  }
  unsigned spatial = x.rank() - 2;
  Window win = windowOf(op, op.getIntList("kernel_shape"));
  bool countIncludesPad = op.getInt("count_include_pad", 0) != 0;
  if (!isMax && countIncludesPad && win.pastPads) {
    return absl::UnimplementedError(
        op.describe() + ": AveragePool with count_include_pad and windows "
                        "reaching past the padded input does not lower yet");
  }
  std::optional<unsigned> reciprocals;
  if (!isMax && win.padded && !countIncludesPad) {
    COMPILER_ASSIGN_OR_RETURN(reciprocals, reciprocalCounts(ctx, op, win));
  }
  int64_t channels = t.dim(1);
  WindowNest nest(t.dim(0), 1, channels, t.dims().slice(2, spatial),
                  std::nullopt, win.kernel);
  StructuredOp s;
  s.nodeName = op.nodeName();
  s.bounds = nest.bounds();
  s.iterators = nest.iterators(nest.kernelLoop(0));
  std::vector<int64_t> offsets;
  for (unsigned i = 0; i < spatial; ++i) {
    offsets.push_back(-win.pads[i]);
  }
  COMPILER_ASSIGN_OR_RETURN(unsigned xt, ctx.tensorFor(op.operand(0)));
  OperandAccess xAccess{xt, nest.inputMap(nest.loop(nest.outputChannelLoop()),
                                          win.strides, win.dilations, offsets)};
  if (win.padded) {
    xAccess.padValue = isMax ? -INFINITY : 0.0;
  }
  s.inputs.push_back(xAccess);
  s.init = isMax ? -INFINITY : 0.0;
  s.body.yield(s.body.binary(isMax ? SK::Max : SK::Add, s.body.output(),
                             s.body.input(0)));
  unsigned acc;
  if (isMax) {
    COMPILER_ASSIGN_OR_RETURN(acc, ctx.tensorFor(op.result()));
  } else {
    acc = ctx.newTemp(op, "_acc", t);
  }
  s.output = {acc, nest.outputMap(channels)};
  ctx.add(std::move(s));
  if (isMax) {
    return absl::OkStatus();
  }
  // The average: the sum times the reciprocal of the window size, or of
  // the in-bounds count at each output position.
  unsigned rank = t.rank();
  StructuredOp e = LoweringContext::parallelOp(op, t.dims());
  e.inputs.push_back({acc, AffineMap::identity(rank)});
  if (reciprocals) {
    AffineMap spatialMap;
    spatialMap.numDims = rank;
    for (unsigned i = 0; i < spatial; ++i) {
      spatialMap.results.push_back(AffineExpr::dim(rank, 2 + i));
    }
    e.inputs.push_back({*reciprocals, spatialMap});
    e.body.yield(e.body.binary(SK::Mul, e.body.input(0), e.body.input(1)));
  } else {
    int64_t window = 1;
    for (int64_t kk : win.kernel) {
      window *= kk;
    }
    e.body.yield(
        e.body.binary(SK::Mul, e.body.input(0), e.body.constant(1.0 / window)));
  }
  return ctx.emit(std::move(e), op.result());
}

absl::Status lowerGlobalAveragePool(LoweringContext &ctx, const Op &op) {
  const TensorType &in = op.operand(0)->type();
  std::vector<bool> reduced(in.rank(), true);
  reduced[0] = reduced[1] = false;
  COMPILER_ASSIGN_OR_RETURN(unsigned x, ctx.tensorFor(op.operand(0)));
  COMPILER_ASSIGN_OR_RETURN(
      unsigned sum,
      ctx.reduce(op, x, reduced, true, SK::Add, 0, false, "_sum"));
  int64_t count = in.numElements() / (in.dim(0) * in.dim(1));
  return ctx.scaleInto(op, sum, 1.0 / count);
}

} // namespace osprey::compiler::structured::lowering
