// Lowers the quantization ops to structured ops with integer element types.
#include "compiler/structured/lower_quantized.h"

#include <algorithm>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/quantization.h"
#include "compiler/graph/status.h"

namespace osprey::compiler::structured {
namespace {

using graph::Op;
using graph::Value;
using ET = ElementType;
using SK = ScalarKind;

// Per-channel (or single) requantization parameters: body constants when
// there is one pair, tensors read along the channel loop otherwise.
struct Requant {
  std::vector<int64_t> multipliers, shifts;
  unsigned multiplierTensor = 0, shiftTensor = 0;
  bool perChannel() const { return multipliers.size() > 1; }
};

class QuantizedLowering {
public:
  QuantizedLowering(const Op &op, QuantizedLoweringContext &ctx)
      : op_(op), ctx_(ctx), p_(ctx.structuredProgram()) {}

  absl::Status run() {
    const std::string &k = op_.kind();
    if (k == "QConv") {
      return lowerConv();
    }
    if (k == "QMatMul") {
      return lowerMatMul();
    }
    if (k == "QAdd" || k == "QMul" || k == "QRescale") {
      return lowerElementwise();
    }
    if (k == "QAveragePool") {
      return lowerAveragePool();
    }
    if (k == "QuantizeLinear") {
      return lowerQuantize();
    }
    if (k == "DequantizeLinear") {
      return lowerDequantize();
    }
    return absl::UnimplementedError(
        op_.describe() +
        ": quantized operators are lowered after the fuse-qdq pass rewrites "
        "them into canonical quantized ops");
  }

private:
  absl::Status unimplemented(const std::string &what) {
    return absl::UnimplementedError(op_.describe() + ": " + what);
  }

  absl::StatusOr<std::vector<int64_t>> constantInts(unsigned operand,
                                                    const char *what) {
    auto values = graph::getConstantInts(op_.operand(operand));
    if (!values) {
      return unimplemented(std::string(what) + " must be a constant");
    }
    return *values;
  }

  unsigned newConstant(const std::string &suffix, ET type,
                       std::vector<int64_t> dims,
                       const std::vector<int64_t> &values) {
    unsigned t = ctx_.tempTensor(op_.result()->name() + suffix,
                                 TensorType::ranked(type, std::move(dims)));
    p_.tensors[t].constant = graph::DenseData::fromInt64s(type, values);
    return t;
  }

  // Reads the multiplier and shift operands |m|, |s|.
  absl::StatusOr<Requant> requant(unsigned m, unsigned s) {
    Requant r;
    COMPILER_ASSIGN_OR_RETURN(r.multipliers, constantInts(m, "the multiplier"));
    COMPILER_ASSIGN_OR_RETURN(r.shifts, constantInts(s, "the shift"));
    if (r.perChannel()) {
      COMPILER_ASSIGN_OR_RETURN(r.multiplierTensor,
                                ctx_.valueTensor(op_.operand(m)));
      COMPILER_ASSIGN_OR_RETURN(r.shiftTensor, ctx_.valueTensor(op_.operand(s)));
    }
    return r;
  }

  // Reads of a vector along loop |d| of |rank| loops.
  static AffineMap along(unsigned rank, unsigned d) {
    AffineMap m;
    m.numDims = rank;
    m.results.push_back(AffineExpr::dim(rank, d));
    return m;
  }

  // Map of an operand of shape |in| broadcast (ONNX rules) against the
  // first loops of a |numDims|-loop nest of extents |out|.
  static AffineMap broadcastMap(llvm::ArrayRef<int64_t> in,
                                llvm::ArrayRef<int64_t> out,
                                unsigned numDims) {
    AffineMap m;
    m.numDims = numDims;
    size_t offset = out.size() - in.size();
    for (size_t j = 0; j < in.size(); ++j) {
      m.results.push_back(in[j] == 1 && out[offset + j] != 1
                              ? AffineExpr::constantExpr(numDims, 0)
                              : AffineExpr::dim(numDims, offset + j));
    }
    return m;
  }

  // y = clamp(zp + r, lo, hi) in the result type, computed without
  // overflow as clamp(r, lo - zp, hi - zp) + zp.
  static unsigned clampToOutput(ScalarBody &b, unsigned r, int64_t zp,
                                int64_t lo, int64_t hi, ET to) {
    r = b.binary(SK::Max, r, b.constant(double(lo - zp)));
    r = b.binary(SK::Min, r, b.constant(double(hi - zp)));
    r = b.binary(SK::Add, r, b.constant(double(zp)));
    return b.cast(r, to);
  }

  // Requantize(v) with |r| (inputs |mIn|, |sIn| of the body when per
  // channel).
  static unsigned requantize(ScalarBody &b, unsigned v, const Requant &r,
                             unsigned mIn, unsigned sIn) {
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

  StructuredOp newOp() {
    StructuredOp s;
    s.nodeName = op_.nodeName();
    return s;
  }

  // The epilogue of QConv/QMatMul over the result shape: acc + bias, then
  // for i8 results the per-channel requantization along loop |channel|.
  absl::Status epilogue(unsigned acc, const std::vector<int64_t> &bias,
                        unsigned channel) {
    const TensorType &t = op_.result()->type();
    unsigned rank = t.rank();
    StructuredOp e = newOp();
    e.bounds = t.dims().vec();
    e.iterators.assign(rank, IteratorType::Parallel);
    e.inputs.push_back({acc, AffineMap::identity(rank)});
    unsigned biasTensor = newConstant("_bias", ET::I32,
                                      {int64_t(bias.size())}, bias);
    e.inputs.push_back({biasTensor, along(rank, channel)});
    ScalarBody &b = e.body;
    unsigned v = b.binary(SK::Add, b.input(0), b.input(1));
    if (t.elementType() == ET::I8) {
      COMPILER_ASSIGN_OR_RETURN(Requant r, requant(3, 4));
      if (r.perChannel()) {
        e.inputs.push_back({r.multiplierTensor, along(rank, channel)});
        e.inputs.push_back({r.shiftTensor, along(rank, channel)});
      }
      v = requantize(b, v, r, 2, 3);
      v = clampToOutput(b, v, op_.getInt("y_zero_point", 0),
                        op_.getInt("act_min", -128),
                        op_.getInt("act_max", 127), ET::I8);
    }
    b.yield(v);
    COMPILER_ASSIGN_OR_RETURN(unsigned out, ctx_.valueTensor(op_.result()));
    e.output = {out, AffineMap::identity(rank)};
    p_.ops.push_back(std::move(e));
    return absl::OkStatus();
  }

  // out + i32(in0) * i32(in1), or with zero points subtracted first.
  static void multiplyAccumulate(ScalarBody &b, int64_t za, int64_t zb) {
    unsigned a = b.cast(b.input(0), ET::I32);
    unsigned w = b.cast(b.input(1), ET::I32);
    if (za != 0) {
      a = b.binary(SK::Sub, a, b.constant(double(za)));
    }
    if (zb != 0) {
      w = b.binary(SK::Sub, w, b.constant(double(zb)));
    }
    b.yield(b.binary(SK::Add, b.output(), b.binary(SK::Mul, a, w)));
  }

  static int64_t wrap32(int64_t v) {
    return static_cast<int32_t>(static_cast<uint32_t>(v));
  }

  absl::Status lowerConv() {
    const TensorType &x = op_.operand(0)->type();
    const TensorType &w = op_.operand(1)->type();
    const TensorType &t = op_.result()->type();
    if (op_.hasAttr("auto_pad") &&
        op_.getString("auto_pad", "NOTSET") != "NOTSET") {
      return unimplemented("auto_pad must be resolved before lowering");
    }
    unsigned spatial = x.rank() - 2;
    std::vector<int64_t> kernel(w.dims().begin() + 2, w.dims().end());
    graph::IntList strides = op_.getIntList("strides", graph::IntList(spatial, 1));
    graph::IntList dilations =
        op_.getIntList("dilations", graph::IntList(spatial, 1));
    graph::IntList pads = op_.getIntList("pads", graph::IntList(2 * spatial, 0));
    int64_t group = op_.getInt("group", 1);
    bool padded = std::any_of(pads.begin(), pads.end(),
                              [](int64_t v) { return v != 0; });
    // Loops: n, [g], m, out spatial..., c per group, kernel spatial...
    bool grouped = group > 1;
    std::vector<int64_t> bounds = {t.dim(0)};
    if (grouped) {
      bounds.push_back(group);
    }
    int64_t mPerGroup = t.dim(1) / group, cPerGroup = x.dim(1) / group;
    bounds.push_back(mPerGroup);
    unsigned gDim = 1, mDim = grouped ? 2 : 1;
    unsigned outSpatial = bounds.size();
    for (unsigned i = 0; i < spatial; ++i) {
      bounds.push_back(t.dim(2 + i));
    }
    unsigned cDim = bounds.size();
    bounds.push_back(cPerGroup);
    unsigned kSpatial = bounds.size();
    bounds.insert(bounds.end(), kernel.begin(), kernel.end());
    unsigned n = bounds.size();
    auto channelExpr = [&](unsigned perGroupDim, int64_t perGroup) {
      AffineExpr e = AffineExpr::dim(n, perGroupDim);
      if (grouped) {
        e.coeffs[gDim] = perGroup;
      }
      return e;
    };
    StructuredOp s = newOp();
    s.bounds = bounds;
    s.iterators.assign(n, IteratorType::Parallel);
    for (unsigned d = cDim; d < n; ++d) {
      s.iterators[d] = IteratorType::Reduction;
    }
    int64_t zx = op_.getInt("x_zero_point", 0);
    AffineMap xMap;
    xMap.numDims = n;
    xMap.results.push_back(AffineExpr::dim(n, 0));
    xMap.results.push_back(channelExpr(cDim, cPerGroup));
    for (unsigned i = 0; i < spatial; ++i) {
      AffineExpr e = AffineExpr::dim(n, outSpatial + i, strides[i]);
      e.coeffs[kSpatial + i] = dilations[i];
      e.constant = -pads[i];
      xMap.results.push_back(e);
      int64_t last = (t.dim(2 + i) - 1) * strides[i] +
                     (kernel[i] - 1) * dilations[i] - pads[i];
      padded |= last >= x.dim(2 + i);
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned xt, ctx_.valueTensor(op_.operand(0)));
    OperandAccess xAccess{xt, xMap};
    if (padded) {
      // Padding reads the zero point, which contributes nothing.
      xAccess.padValue = double(zx);
    }
    s.inputs.push_back(xAccess);
    AffineMap wMap;
    wMap.numDims = n;
    wMap.results.push_back(channelExpr(mDim, mPerGroup));
    wMap.results.push_back(AffineExpr::dim(n, cDim));
    for (unsigned i = 0; i < spatial; ++i) {
      wMap.results.push_back(AffineExpr::dim(n, kSpatial + i));
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned wt, ctx_.valueTensor(op_.operand(1)));
    s.inputs.push_back({wt, wMap});
    COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> bias,
                              constantInts(2, "the bias"));
    // With constant weights, sum (x - zx) * w = sum x * w - zx * sum w over
    // every tap (padding reads zx): the correction goes into the bias, in
    // the same modulo-2^32 arithmetic as the accumulator.
    auto weights = graph::getConstantInts(op_.operand(1));
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
    multiplyAccumulate(s.body, weights ? 0 : zx, 0);
    s.init = 0.0;
    AffineMap outMap;
    outMap.numDims = n;
    outMap.results.push_back(AffineExpr::dim(n, 0));
    outMap.results.push_back(channelExpr(mDim, mPerGroup));
    for (unsigned i = 0; i < spatial; ++i) {
      outMap.results.push_back(AffineExpr::dim(n, outSpatial + i));
    }
    unsigned acc = ctx_.tempTensor(op_.result()->name() + "_acc",
                                   t.withElementType(ET::I32));
    s.output = {acc, outMap};
    p_.ops.push_back(std::move(s));
    return epilogue(acc, bias, 1);
  }

  absl::Status lowerMatMul() {
    const Value *a = op_.operand(0), *bv = op_.operand(1);
    const TensorType &at = a->type(), &bt = bv->type();
    const TensorType &t = op_.result()->type();
    unsigned rank = t.rank();
    unsigned n = rank + 1, kDim = rank;
    StructuredOp s = newOp();
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
    COMPILER_ASSIGN_OR_RETURN(unsigned ta, ctx_.valueTensor(a));
    COMPILER_ASSIGN_OR_RETURN(unsigned tb, ctx_.valueTensor(bv));
    s.inputs.push_back({ta, operandMap(at, true)});
    s.inputs.push_back({tb, operandMap(bt, false)});
    COMPILER_ASSIGN_OR_RETURN(std::vector<int64_t> bias,
                              constantInts(2, "the bias"));
    int64_t za = op_.getInt("a_zero_point", 0);
    int64_t zb = op_.getInt("b_zero_point", 0);
    // Constant 2-D B without a zero point: a's zero point folds into the
    // bias, za * sum over k of B[k, n].
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
    multiplyAccumulate(s.body, fold ? 0 : za, zb);
    s.init = 0.0;
    AffineMap outMap;
    outMap.numDims = n;
    for (unsigned d = 0; d < rank; ++d) {
      outMap.results.push_back(AffineExpr::dim(n, d));
    }
    unsigned acc = ctx_.tempTensor(op_.result()->name() + "_acc",
                                   t.withElementType(ET::I32));
    s.output = {acc, outMap};
    p_.ops.push_back(std::move(s));
    return epilogue(acc, bias, rank - 1);
  }

  // i32(in_i) - zero point.
  static unsigned centered(ScalarBody &b, unsigned in, int64_t zp) {
    unsigned v = b.cast(b.input(in), ET::I32);
    return zp == 0 ? v : b.binary(SK::Sub, v, b.constant(double(zp)));
  }

  static unsigned requantizeBy(ScalarBody &b, unsigned v, int64_t m,
                               int64_t s) {
    if (graph::FixedPointMultiplier{int32_t(m), int32_t(s)}.isIdentity()) {
      return v;
    }
    return b.requantize(v, b.constant(double(m)), b.constant(double(s)));
  }

  absl::Status lowerElementwise() {
    const TensorType &t = op_.result()->type();
    const std::string &k = op_.kind();
    ScalarBody b;
    auto attr = [&](const char *name, int64_t def) {
      return op_.getInt(name, def);
    };
    std::vector<const Value *> inputs = {op_.operand(0)};
    unsigned v;
    if (k == "QRescale") {
      v = centered(b, 0, attr("x_zero_point", 0));
    } else {
      inputs.push_back(op_.operand(1));
      unsigned a = centered(b, 0, attr("a_zero_point", 0));
      unsigned c = centered(b, 1, attr("b_zero_point", 0));
      if (k == "QMul") {
        v = b.binary(SK::Mul, a, c);
      } else {
        // npu E_ADD: (x - zp) << left_shift, rescaled per input, summed
        // with saturation.
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
    return elementwise(inputs, std::move(b));
  }

  // An all-parallel op over the result with |inputs| broadcast against it.
  absl::Status elementwise(const std::vector<const Value *> &inputs,
                           ScalarBody body,
                           std::vector<OperandAccess> extra = {}) {
    const TensorType &t = op_.result()->type();
    unsigned rank = t.rank();
    StructuredOp s = newOp();
    s.bounds = t.dims().vec();
    s.iterators.assign(rank, IteratorType::Parallel);
    for (const Value *in : inputs) {
      COMPILER_ASSIGN_OR_RETURN(unsigned it, ctx_.valueTensor(in));
      s.inputs.push_back({it, broadcastMap(in->type().dims(), t.dims(), rank)});
    }
    for (OperandAccess &a : extra) {
      s.inputs.push_back(std::move(a));
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned out, ctx_.valueTensor(op_.result()));
    s.output = {out, AffineMap::identity(rank)};
    s.body = std::move(body);
    p_.ops.push_back(std::move(s));
    return absl::OkStatus();
  }

  absl::Status lowerAveragePool() {
    const TensorType &x = op_.operand(0)->type();
    const TensorType &t = op_.result()->type();
    unsigned spatial = x.rank() - 2;
    graph::IntList kernel = op_.getIntList("kernel_shape");
    graph::IntList strides = op_.getIntList("strides", graph::IntList(spatial, 1));
    graph::IntList pads = op_.getIntList("pads", graph::IntList(2 * spatial, 0));
    if (op_.hasAttr("auto_pad") &&
        op_.getString("auto_pad", "NOTSET") != "NOTSET") {
      return unimplemented("auto_pad must be resolved before lowering");
    }
    // Loops: n, c, out spatial..., kernel spatial...
    unsigned n = 2 + 2 * spatial;
    StructuredOp s = newOp();
    s.bounds = {t.dim(0), t.dim(1)};
    for (unsigned i = 0; i < spatial; ++i) {
      s.bounds.push_back(t.dim(2 + i));
    }
    s.bounds.insert(s.bounds.end(), kernel.begin(), kernel.end());
    s.iterators.assign(n, IteratorType::Parallel);
    for (unsigned d = 2 + spatial; d < n; ++d) {
      s.iterators[d] = IteratorType::Reduction;
    }
    AffineMap xMap;
    xMap.numDims = n;
    xMap.results.push_back(AffineExpr::dim(n, 0));
    xMap.results.push_back(AffineExpr::dim(n, 1));
    bool padded = false;
    std::vector<int64_t> outDims(t.dims().begin() + 2, t.dims().end());
    int64_t positions = 1;
    for (unsigned i = 0; i < spatial; ++i) {
      AffineExpr e = AffineExpr::dim(n, 2 + i, strides[i]);
      e.coeffs[2 + spatial + i] = 1;
      e.constant = -pads[i];
      xMap.results.push_back(e);
      int64_t last = (t.dim(2 + i) - 1) * strides[i] + kernel[i] - 1 - pads[i];
      padded |= pads[i] != 0 || last >= x.dim(2 + i);
      positions *= outDims[i];
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned xt, ctx_.valueTensor(op_.operand(0)));
    OperandAccess xAccess{xt, xMap};
    if (padded) {
      xAccess.padValue = 0.0; // adds nothing to the sum
    }
    s.inputs.push_back(xAccess);
    s.init = 0.0;
    s.body.yield(s.body.binary(SK::Add, s.body.output(),
                               s.body.cast(s.body.input(0), ET::I32)));
    AffineMap outMap;
    outMap.numDims = n;
    for (unsigned d = 0; d < 2 + spatial; ++d) {
      outMap.results.push_back(AffineExpr::dim(n, d));
    }
    unsigned sum = ctx_.tempTensor(op_.result()->name() + "_sum",
                                   t.withElementType(ET::I32));
    s.output = {sum, outMap};
    p_.ops.push_back(std::move(s));

    // avg = s > 0 ? (s + cnt / 2) / cnt : (s - cnt / 2) / cnt (C division),
    // cnt the number of in-bounds taps: one constant, or a constant per
    // output position when windows reach into padding.
    unsigned rank = t.rank();
    StructuredOp e = newOp();
    e.bounds = t.dims().vec();
    e.iterators.assign(rank, IteratorType::Parallel);
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
          return op_.emitError("a pooling window lies entirely in the padding");
        }
        counts[flat] = count;
      }
      unsigned c = newConstant("_count", ET::I32, outDims, counts);
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
    b.yield(clampToOutput(b, avg, 0, op_.getInt("act_min", -128),
                          op_.getInt("act_max", 127), ET::I8));
    COMPILER_ASSIGN_OR_RETURN(unsigned out, ctx_.valueTensor(op_.result()));
    e.output = {out, AffineMap::identity(rank)};
    p_.ops.push_back(std::move(e));
    return absl::OkStatus();
  }

  // Scale and zero point of a QuantizeLinear/DequantizeLinear: body
  // constants per tensor, tensors read along the axis per axis.
  struct Params {
    graph::QuantParams params;
    std::vector<OperandAccess> reads; // scale, zero point (per axis)
  };

  absl::StatusOr<Params> params(ET quantizedType) {
    const Value *x = op_.operand(0);
    auto p = graph::readQuantParams(op_.operand(1), op_.operand(2),
                                    op_.getInt("axis", 1), x->type(),
                                    quantizedType);
    if (absl::IsUnimplemented(p.status())) {
      return unimplemented(std::string(p.status().message()) +
                           "; run-time quantization parameters are not "
                           "supported");
    }
    if (!p.ok()) {
      return op_.emitError(std::string(p.status().message()));
    }
    Params out{*p, {}};
    if (!p->perTensor()) {
      unsigned rank = op_.result()->type().rank();
      COMPILER_ASSIGN_OR_RETURN(unsigned st, ctx_.valueTensor(op_.operand(1)));
      out.reads.push_back({st, along(rank, p->axis)});
      std::vector<int64_t> zps = p->zeroPoints;
      unsigned zt = newConstant("_zero_point", ET::I32,
                                {int64_t(zps.size())}, zps);
      out.reads.push_back({zt, along(rank, p->axis)});
    }
    return out;
  }

  // y = saturate(round_half_even(x / scale) + zero point).
  absl::Status lowerQuantize() {
    ET to = op_.result()->type().elementType();
    COMPILER_ASSIGN_OR_RETURN(Params pr, params(to));
    ScalarBody b;
    bool perAxis = !pr.params.perTensor();
    unsigned scale = perAxis ? b.input(1) : b.constant(pr.params.scale());
    unsigned q = b.unary(SK::RoundEven, b.binary(SK::Div, b.input(0), scale));
    // fptosi saturates (NaN is 0); bound it so adding the zero point
    // cannot overflow, then saturate to the result type.
    unsigned r = b.cast(q, ET::I32);
    r = b.binary(SK::Max, r, b.constant(-16777216));
    r = b.binary(SK::Min, r, b.constant(16777216));
    unsigned zp = perAxis ? b.input(2) : b.constant(double(pr.params.zeroPoint()));
    r = b.binary(SK::Add, r, zp);
    r = b.binary(SK::Max, r, b.constant(double(graph::integerTypeMin(to))));
    r = b.binary(SK::Min, r, b.constant(double(graph::integerTypeMax(to))));
    b.yield(b.cast(r, to));
    return elementwise({op_.operand(0)}, std::move(b), std::move(pr.reads));
  }

  // y = f32(i32(x) - zero point) * scale.
  absl::Status lowerDequantize() {
    COMPILER_ASSIGN_OR_RETURN(Params pr,
                              params(op_.operand(0)->type().elementType()));
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
    return elementwise({op_.operand(0)}, std::move(b), std::move(pr.reads));
  }

  const Op &op_;
  QuantizedLoweringContext &ctx_;
  StructuredProgram &p_;
};

} // namespace

bool isQuantizedOpKind(llvm::StringRef kind) {
  return kind == "QConv" || kind == "QMatMul" || kind == "QAdd" ||
         kind == "QMul" || kind == "QRescale" || kind == "QAveragePool" ||
         kind == "QuantizeLinear" || kind == "DequantizeLinear" ||
         kind == "QLinearConv" || kind == "QLinearMatMul" ||
         kind == "ConvInteger" || kind == "MatMulInteger";
}

absl::Status lowerQuantizedOp(const graph::Op &op,
                              QuantizedLoweringContext &ctx) {
  return QuantizedLowering(op, ctx).run();
}

} // namespace osprey::compiler::structured
