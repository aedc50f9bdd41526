// Convolutions: Conv as a windowed reduction with padded reads, and
// ConvTranspose as a stride-1 windowed reduction over an input spread by
// its strides; a bias becomes an elementwise op fusion puts back as the
// epilogue.
#include "compiler/structured/lowering/families.h"
#include "compiler/structured/lowering/indexing.h"

namespace osprey::compiler::structured::lowering {
namespace {

// The result of |op| as accumulator |acc| plus the per-channel |bias|.
absl::Status addChannelBias(LoweringContext &ctx, const Op &op, unsigned acc,
                            const Value *bias) {
  const TensorType &t = op.result()->type();
  unsigned rank = t.rank();
  StructuredOp e = LoweringContext::parallelOp(op, t.dims());
  e.inputs.push_back({acc, AffineMap::identity(rank)});
  COMPILER_ASSIGN_OR_RETURN(unsigned bt, ctx.tensorFor(bias));
  e.inputs.push_back({bt, channelMap(rank)});
  e.body.yield(e.body.binary(SK::Add, e.body.input(0), e.body.input(1)));
  return ctx.emit(std::move(e), op.result());
}

// The convolution's sum of products: out += x * w.
void multiplyAccumulate(StructuredOp &s) {
  s.init = 0.0;
  s.body.yield(
      s.body.binary(SK::Add, s.body.output(),
                    s.body.binary(SK::Mul, s.body.input(0), s.body.input(1))));
}

// Where the reduction of |op| goes: its result, or a new accumulator when
// a bias is added afterwards.
absl::StatusOr<unsigned> accumulator(LoweringContext &ctx, const Op &op,
                                     const Value *bias) {
  if (bias) {
    return ctx.newTemp(op, "_acc", op.result()->type());
  }
  return ctx.tensorFor(op.result());
}

} // namespace

absl::Status lowerConv(LoweringContext &ctx, const Op &op) {
  const TensorType &x = op.operand(0)->type();
  const TensorType &w = op.operand(1)->type();
  const TensorType &t = op.result()->type();
  if (op.hasAttr("auto_pad") &&
      op.getString("auto_pad", "NOTSET") != "NOTSET") {
    return absl::UnimplementedError(
        op.describe() + ": auto_pad must be resolved before lowering");
  }
  unsigned spatial = x.rank() - 2;
  Window win =
      windowOf(op, graph::IntList(w.dims().begin() + 2, w.dims().end()));
  int64_t group = op.getInt("group", 1);
  int64_t mPerGroup = t.dim(1) / group;
  int64_t cPerGroup = x.dim(1) / group;
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
  COMPILER_ASSIGN_OR_RETURN(unsigned xt, ctx.tensorFor(op.operand(0)));
  OperandAccess xAccess{
      xt, nest.inputMap(nest.channel(nest.inputChannelLoop(), cPerGroup),
                        win.strides, win.dilations, offsets)};
  if (win.padded) {
    xAccess.padValue = 0.0;
  }
  s.inputs.push_back(xAccess);
  COMPILER_ASSIGN_OR_RETURN(unsigned wt, ctx.tensorFor(op.operand(1)));
  s.inputs.push_back(
      {wt, nest.weightMap(nest.channel(nest.outputChannelLoop(), mPerGroup),
                          nest.loop(nest.inputChannelLoop()))});
  multiplyAccumulate(s);
  const Value *bias = op.operand(2);
  COMPILER_ASSIGN_OR_RETURN(unsigned acc, accumulator(ctx, op, bias));
  s.output = {acc, nest.outputMap(mPerGroup)};
  ctx.add(std::move(s));
  return bias ? addChannelBias(ctx, op, acc, bias) : absl::OkStatus();
}

// ConvTranspose: y[o] = sum over c, k of x[i] * w[c, m, k] where
// o = i * s + k * d - padBegin. With strides > 1, x is first spread to
// x'[s * i + r] = (r == 0 ? x[i] : 0) by a copy whose read along i is
// shifted by I * r (in bounds only for r == 0, padding 0 otherwise); then
// y is a stride-1 windowed reduction reading x'[o + padBegin - d * k] with
// padding 0.
absl::Status lowerConvTranspose(LoweringContext &ctx, const Op &op) {
  const TensorType &x = op.operand(0)->type();
  const TensorType &w = op.operand(1)->type();
  const TensorType &t = op.result()->type();
  unsigned spatial = x.rank() - 2;
  int64_t group = op.getInt("group", 1);
  graph::IntList strides = op.getIntList("strides", graph::IntList(spatial, 1));
  graph::IntList dilations =
      op.getIntList("dilations", graph::IntList(spatial, 1));
  graph::IntList outputPadding =
      op.getIntList("output_padding", graph::IntList(spatial, 0));
  std::string autoPad = op.getString("auto_pad", "NOTSET");
  graph::IntList pads = op.getIntList("pads", graph::IntList(2 * spatial, 0));
  if (strides.size() != spatial || dilations.size() != spatial ||
      outputPadding.size() != spatial || pads.size() != 2 * spatial) {
    return op.emitError("strides, dilations, output_padding and pads must "
                        "have one entry per spatial dimension");
  }
  std::vector<int64_t> padBegin(spatial);
  bool derived = op.hasAttr("output_shape") || autoPad == "SAME_UPPER" ||
                 autoPad == "SAME_LOWER";
  for (unsigned i = 0; i < spatial; ++i) {
    if (strides[i] < 1 || dilations[i] < 1) {
      return op.emitError("strides and dilations must be positive");
    }
    if (!derived) {
      padBegin[i] = autoPad == "VALID" ? 0 : pads[i];
      continue;
    }
    // Total padding that yields the result size; split as ONNX specifies
    // (floor division, the odd element at the end for SAME_UPPER).
    int64_t total = strides[i] * (x.dim(2 + i) - 1) + outputPadding[i] +
                    (w.dim(2 + i) - 1) * dilations[i] + 1 - t.dim(2 + i);
    int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    padBegin[i] = autoPad == "SAME_UPPER" ? half : total - half;
  }
  COMPILER_ASSIGN_OR_RETURN(unsigned source, ctx.tensorFor(op.operand(0)));
  bool strided = false;
  for (int64_t st : strides) {
    strided |= st > 1;
  }
  if (strided) {
    // Loops: n, c, i..., r...; the read along i is shifted by I * r.
    unsigned n = 2 + 2 * spatial;
    std::vector<int64_t> bounds = {x.dim(0), x.dim(1)};
    std::vector<int64_t> dims = {x.dim(0), x.dim(1)};
    for (unsigned i = 0; i < spatial; ++i) {
      bounds.push_back(x.dim(2 + i));
      dims.push_back(x.dim(2 + i) * strides[i]);
    }
    bounds.insert(bounds.end(), strides.begin(), strides.end());
    StructuredOp u = LoweringContext::parallelOp(op, bounds);
    AffineMap in = AffineMap::identity(n);
    in.results.resize(2 + spatial);
    AffineMap outMap = in;
    for (unsigned i = 0; i < spatial; ++i) {
      in = selectedRead(in, 2 + i, 2 + spatial + i, x.dim(2 + i), 0, 0);
      outMap.results[2 + i].coeffs[2 + i] = strides[i];
      outMap.results[2 + i].coeffs[2 + spatial + i] = 1;
    }
    u.inputs.push_back({source, in, 0.0});
    source =
        ctx.newTemp(op, "_spread", TensorType::ranked(x.elementType(), dims));
    u.output = {source, outMap};
    u.body.yield(u.body.input(0));
    ctx.add(std::move(u));
  }
  int64_t cPerGroup = x.dim(1) / group;
  int64_t mPerGroup = w.dim(1);
  WindowNest nest(t.dim(0), group, mPerGroup, t.dims().slice(2, spatial),
                  cPerGroup, w.dims().slice(2));
  StructuredOp s;
  s.nodeName = op.nodeName();
  s.bounds = nest.bounds();
  s.iterators = nest.iterators(nest.inputChannelLoop());
  AffineExpr channel = nest.channel(nest.inputChannelLoop(), cPerGroup);
  std::vector<int64_t> negated;
  for (int64_t d : dilations) {
    negated.push_back(-d);
  }
  s.inputs.push_back(
      {source,
       nest.inputMap(channel, graph::IntList(spatial, 1), negated, padBegin),
       0.0});
  COMPILER_ASSIGN_OR_RETURN(unsigned wt, ctx.tensorFor(op.operand(1)));
  s.inputs.push_back(
      {wt, nest.weightMap(channel, nest.loop(nest.outputChannelLoop()))});
  multiplyAccumulate(s);
  const Value *bias = op.operand(2);
  COMPILER_ASSIGN_OR_RETURN(unsigned acc, accumulator(ctx, op, bias));
  s.output = {acc, nest.outputMap(mPerGroup)};
  ctx.add(std::move(s));
  return bias ? addChannelBias(ctx, op, acc, bias) : absl::OkStatus();
}

} // namespace osprey::compiler::structured::lowering
