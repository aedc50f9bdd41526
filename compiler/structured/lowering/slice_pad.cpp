// Slice and Pad: one copy with a strided or shifted read; Pad in edge or
// reflect mode reads each band position's source with selected reads, one
// op per padded axis.
#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {
namespace {

// The pads of a Pad op: constant, one begin and one end per dimension.
absl::StatusOr<std::vector<int64_t>> padsOf(const Op &op) {
  auto pads = graph::getConstantInts(op.operand(1));
  if (!pads || op.operand(3)) {
    return absl::UnimplementedError(
        op.describe() + ": Pad needs constant pads and no axes operand");
  }
  return *pads;
}

// Pad in edge or reflect mode, one op per padded axis: the interior is one
// read shifted by the begin pad (padding 0 outside it), and each position j
// of the pad bands reads its source src(j) selected at o == j along the
// axis (padding 0 elsewhere); the body sums the reads, as for Gather.
absl::Status lowerPadMode(LoweringContext &ctx, const Op &op,
                          const std::string &mode) {
  constexpr int64_t kMaxBand = 256;
  const TensorType &x = op.operand(0)->type();
  const TensorType &t = op.result()->type();
  unsigned n = t.rank();
  COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> pads, padsOf(op));
  if (pads.size() != 2 * n) {
    return op.emitError("pads must list a begin and an end per dimension");
  }
  COMPILER_ASSIGN_OR_RETURN(unsigned current, ctx.tensorFor(op.operand(0)));
  std::vector<int64_t> dims = x.dims().vec();
  std::vector<unsigned> axes;
  for (unsigned a = 0; a < n; ++a) {
    int64_t pb = pads[a], pe = pads[a + n];
    if (pb < 0 || pe < 0) {
      return absl::UnimplementedError(op.describe() +
                                      ": negative pads do not lower yet");
    }
    if (pb == 0 && pe == 0) {
      continue;
    }
    if (x.dim(a) == 0 ||
        (mode == "reflect" && (pb >= x.dim(a) || pe >= x.dim(a)))) {
      return op.emitError(mode + " padding of " + std::to_string(pb) + "/" +
                          std::to_string(pe) + " on axis " + std::to_string(a) +
                          " of extent " + std::to_string(x.dim(a)) +
                          " has no source");
    }
    if (pb + pe > kMaxBand) {
      return absl::UnimplementedError(
          op.describe() + ": " + mode + " padding wider than " +
          std::to_string(kMaxBand) + " on one axis does not lower yet");
    }
    axes.push_back(a);
  }
  if (axes.empty()) {
    return ctx.copy(op);
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    unsigned a = axes[i];
    int64_t in = dims[a], pb = pads[a];
    int64_t out = in + pb + pads[a + n];
    dims[a] = out;
    unsigned result;
    if (i + 1 == axes.size()) {
      COMPILER_ASSIGN_OR_RETURN(result, ctx.tensorFor(op.result()));
    } else {
      result = ctx.newTemp(op, "_axis" + std::to_string(a),
                           TensorType::ranked(t.elementType(), dims));
    }
    StructuredOp s = LoweringContext::parallelOp(op, dims);
    s.inputs.push_back({current, axisMap(n, a, 1, -pb), 0.0});
    unsigned sum = s.body.input(0);
    for (int64_t j = 0; j < out; ++j) {
      if (j == pb) {
        j = pb + in - 1;
        continue;
      }
      int64_t rel = j - pb;
      int64_t src = mode == "edge" ? std::clamp<int64_t>(rel, 0, in - 1)
                    : rel < 0      ? -rel
                                   : 2 * (in - 1) - rel;
      s.inputs.push_back(
          {current, selectedRead(AffineMap::identity(n), a, a, in, src, j),
           0.0});
      sum = s.body.binary(SK::Add, sum, s.body.input(s.inputs.size() - 1));
    }
    s.body.yield(sum);
    s.output = {result, AffineMap::identity(n)};
    ctx.add(std::move(s));
    current = result;
  }
  return absl::OkStatus();
}

} // namespace

absl::Status lowerSlice(LoweringContext &ctx, const Op &op) {
  const TensorType &in = op.operand(0)->type();
  const TensorType &t = op.result()->type();
  unsigned n = t.rank();
  StructuredOp s = LoweringContext::parallelOp(op, t.dims());
  AffineMap m = AffineMap::identity(n);
  COMPILER_ASSIGN_OR_RETURN(unsigned it, ctx.tensorFor(op.operand(0)));
  auto starts = graph::getConstantInts(op.operand(1));
  std::optional<std::vector<int64_t>> axes, steps;
  if (op.operand(3)) {
    axes = graph::getConstantInts(op.operand(3));
  }
  if (op.operand(4)) {
    steps = graph::getConstantInts(op.operand(4));
  }
  if (!starts || (op.operand(3) && !axes) || (op.operand(4) && !steps)) {
    return op.emitError("starts, axes and steps must be constants");
  }
  for (size_t i = 0; i < starts->size(); ++i) {
    int64_t axis = axes ? (*axes)[i] : int64_t(i);
    axis = axis < 0 ? axis + n : axis;
    int64_t step = steps ? (*steps)[i] : 1;
    int64_t d = in.dim(axis);
    int64_t b = (*starts)[i];
    b = b < 0 ? b + d : b;
    b = step > 0 ? std::clamp<int64_t>(b, 0, d)
                 : std::clamp<int64_t>(b, 0, d - 1);
    m.results[axis] = AffineExpr::dim(n, axis, step);
    m.results[axis].constant = b;
  }
  s.inputs.push_back({it, m});
  s.body.yield(s.body.input(0));
  return ctx.emit(std::move(s), op.result());
}

absl::Status lowerPad(LoweringContext &ctx, const Op &op) {
  std::string mode = op.getString("mode", "constant");
  const TensorType &t = op.result()->type();
  unsigned n = t.rank();
  StructuredOp s = LoweringContext::parallelOp(op, t.dims());
  COMPILER_ASSIGN_OR_RETURN(unsigned it, ctx.tensorFor(op.operand(0)));
  if (mode == "edge" || mode == "reflect") {
    return lowerPadMode(ctx, op, mode);
  }
  if (mode != "constant") {
    return op.emitError("unknown Pad mode '" + mode + "'");
  }
  COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> pads, padsOf(op));
  double value = 0;
  if (op.operand(2)) {
    auto v = graph::getConstantFloats(op.operand(2));
    if (!v || v->size() != 1) {
      return op.emitError("constant_value must be a constant scalar");
    }
    value = (*v)[0];
  }
  AffineMap m = AffineMap::identity(n);
  for (unsigned d = 0; d < n; ++d) {
    if (pads[d] < 0 || pads[d + n] < 0) {
      return absl::UnimplementedError(op.describe() +
                                      ": negative pads do not lower yet");
    }
    m.results[d].constant = -pads[d];
  }
  s.inputs.push_back({it, m, value});
  s.body.yield(s.body.input(0));
  return ctx.emit(std::move(s), op.result());
}

} // namespace osprey::compiler::structured::lowering
