// Post-training quantization: Q/DQ placement, weight quantization and
// percentile ranges (see post_training_quantization.h for the rules).
#include "compiler/tools/post_training_quantization.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/graph/op_registry.h"

namespace osprey::compiler::ptq {

using graph::ElementType;
using graph::Op;
using graph::OpKind;
using graph::TensorType;
using graph::Value;

ActivationParams activationParams(Range range) {
  const double lo = std::min(range.lo, 0.0), hi = std::max(range.hi, 0.0);
  ActivationParams p;
  p.scale = hi > lo ? static_cast<float>((hi - lo) / 255.0) : 1.0f;
  if (!(p.scale > 0) || !std::isfinite(p.scale)) {
    p.scale = hi > lo ? std::numeric_limits<float>::min() : 1.0f;
  }
  const double zp = std::nearbyint(-128.0 - lo / double(p.scale));
  p.zeroPoint = static_cast<int64_t>(std::clamp(zp, -128.0, 127.0));
  return p;
}

absl::Status checkFloatModel(const graph::Graph &g) {
  for (const auto &op : g.ops()) {
    if (op->is(OpKind::QuantizeLinear) || op->is(OpKind::DequantizeLinear) ||
        op->is(OpKind::QLinearConv) || op->is(OpKind::QLinearMatMul) ||
        op->is(OpKind::ConvInteger) || op->is(OpKind::MatMulInteger)) {
      return absl::InvalidArgumentError(
          "--quantize: the model is already quantized (" + op->describe() +
          "); --quantize takes a float model, compile a quantized one "
          "without it");
    }
  }
  return absl::OkStatus();
}

absl::Status checkSkipNodes(const graph::Graph &g,
                            const std::set<std::string> &skip) {
  std::set<std::string> names;
  for (const auto &op : g.ops()) {
    names.insert(op->nodeName());
  }
  for (const std::string &name : skip) {
    if (!names.count(name)) {
      return absl::InvalidArgumentError(
          "--quantize-skip: the model has no node named '" + name + "'");
    }
  }
  return absl::OkStatus();
}

static bool isActivation(const Value *v) {
  if (!v || v->type().elementType() != ElementType::F32) {
    return false;
  }
  const Op *def = v->definingOp();
  return !def || !def->is(OpKind::Constant);
}

std::vector<Value *> observedValues(const graph::Graph &g) {
  std::vector<Value *> values;
  std::set<const Value *> seen;
  auto add = [&](Value *v) {
    if (isActivation(v) && seen.insert(v).second) {
      values.push_back(v);
    }
  };
  for (Value *v : g.inputs()) {
    add(v);
  }
  for (const auto &op : g.ops()) {
    for (Value *v : op->results()) {
      add(v);
    }
  }
  return values;
}

namespace {

// Ops whose integer values pass through unchanged: their result keeps the
// input's parameters.
bool keepsInputParams(const Op &op) {
  return op.is(OpKind::MaxPool) || op.is(OpKind::Reshape) ||
         op.is(OpKind::Flatten) || op.is(OpKind::Transpose) ||
         op.is(OpKind::Squeeze) || op.is(OpKind::Unsqueeze);
}

// Ops fuse-qdq turns into integer ops when their operands and result are
// quantized.
bool becomesInteger(const Op &op) {
  return keepsInputParams(op) || op.is(OpKind::Conv) || op.is(OpKind::Gemm) ||
         op.is(OpKind::MatMul) || op.is(OpKind::Add) || op.is(OpKind::Mul) ||
         op.is(OpKind::AveragePool) || op.is(OpKind::GlobalAveragePool) ||
         op.is(OpKind::Concat) || op.is(OpKind::Relu) || op.is(OpKind::Clip);
}

class Quantizer {
public:
  Quantizer(graph::Graph &g, const std::map<std::string, Range> &ranges,
            const std::set<std::string> &skip)
      : g_(g), ranges_(ranges), skip_(skip) {}

  absl::StatusOr<std::vector<QuantizedTensor>> run() {
    // Decide everything on the unmodified graph first.
    std::vector<Value *> toQuantize;
    for (Value *v : observedValues(g_)) {
      if (needsQuantization(v)) {
        toQuantize.push_back(v);
      }
    }
    std::map<const Value *, QuantizedTensor> params;
    std::vector<QuantizedTensor> report;
    for (Value *v : toQuantize) {
      const Op *def = v->definingOp();
      QuantizedTensor t;
      t.name = v->name();
      if (def && keepsInputParams(*def) && params.count(def->operand(0))) {
        t.range = params[def->operand(0)].range;
        t.params = params[def->operand(0)].params;
      } else {
        auto it = ranges_.find(v->name());
        if (it == ranges_.end()) {
          return absl::InternalError("no calibration range for '" + v->name() +
                                     "'");
        }
        t.range = it->second;
        t.params = activationParams(t.range);
      }
      params[v] = t;
      report.push_back(t);
    }
    // Weights of the ops whose input and result are quantized.
    struct WeightJob {
      Op *op;
      int64_t axis;
      float inputScale;
    };
    std::vector<WeightJob> weights;
    for (Op *op : g_.opList()) {
      if (skipped(op) || !params.count(op->operand(0)) ||
          !resultQuantized(op, params)) {
        continue;
      }
      if (op->numOperands() < 2 || !isConstantF32(op->operand(1))) {
        continue;
      }
      const TensorType &wt = op->operand(1)->type();
      if (!wt.hasStaticShape()) {
        continue;
      }
      if (op->is(OpKind::Conv) && wt.rank() >= 3) {
        weights.push_back({op, 0, params[op->operand(0)].params.scale});
      } else if ((op->is(OpKind::Gemm) || op->is(OpKind::MatMul)) &&
                 wt.rank() == 2) {
        const bool transB = op->is(OpKind::Gemm) && op->getInt("transB", 0);
        weights.push_back(
            {op, transB ? 0 : 1, params[op->operand(0)].params.scale});
      }
    }
    // Now rewrite: Q/DQ after each quantized activation, readers moved to
    // the DQ.
    for (Value *v : toQuantize) {
      const QuantizedTensor &t = params[v];
      std::vector<Op *> readers;
      for (Op *user : g_.users(v)) {
        if (!skipped(user)) {
          readers.push_back(user);
        }
      }
      Op *before = insertionPointAfter(v->definingOp());
      Op *scale = g_.createConstant(TensorType::ranked(ElementType::F32, {}),
                                    graph::DenseData::fromDoubles(
                                        ElementType::F32, {double(t.params.scale)}),
                                    before, v->name() + "_scale");
      Op *zp = g_.createConstant(
          TensorType::ranked(ElementType::I8, {}),
          graph::DenseData::fromInt64s(ElementType::I8, {t.params.zeroPoint}),
          before, v->name() + "_zero_point");
      Op *q = g_.createOp("QuantizeLinear",
                          {v, scale->result(), zp->result()},
                          {v->type().withElementType(ElementType::I8)}, {},
                          before, {v->name() + "_q"});
      q->setNodeName(v->name() + "_Q");
      Op *dq = g_.createOp("DequantizeLinear",
                           {q->result(), scale->result(), zp->result()},
                           {v->type()}, {}, before, {v->name() + "_dq"});
      dq->setNodeName(v->name() + "_DQ");
      for (Op *reader : readers) {
        for (unsigned i = 0; i < reader->numOperands(); ++i) {
          if (reader->operand(i) == v) {
            reader->setOperand(i, dq->result());
          }
        }
      }
      for (unsigned i = 0; i < g_.outputs().size(); ++i) {
        if (g_.outputs()[i] == v && becomesInteger(*v->definingOp())) {
          g_.setOutput(i, dq->result());
        }
      }
    }
    for (const WeightJob &job : weights) {
      if (absl::Status s = quantizeWeights(job.op, job.axis, job.inputScale);
          !s.ok()) {
        return s;
      }
    }
    return report;
  }

private:
  bool skipped(const Op *op) const { return skip_.count(op->nodeName()) > 0; }

  static bool isConstantF32(const Value *v) {
    return v && v->definingOp() && v->definingOp()->is(OpKind::Constant) &&
           v->type().elementType() == ElementType::F32;
  }

  // The Relu/Clip reading |op|'s result alone that fuse-qdq fuses into |op|,
  // or null.
  Op *fusedActivation(const Op *op) const {
    const Value *y = op->result();
    if (op->numResults() != 1 || g_.isOutput(y)) {
      return nullptr;
    }
    std::vector<Op *> users = g_.users(y);
    if (users.size() != 1 || skipped(users[0]) || users[0]->operand(0) != y) {
      return nullptr;
    }
    const Op *u = users[0];
    const bool matmulLike =
        op->is(OpKind::Conv) || op->is(OpKind::MatMul) || op->is(OpKind::Gemm);
    const bool binary = op->is(OpKind::Add) || op->is(OpKind::Mul);
    if ((matmulLike && (u->is(OpKind::Relu) || u->is(OpKind::Clip))) ||
        (binary && u->is(OpKind::Relu))) {
      return users[0];
    }
    return nullptr;
  }

  bool needsQuantization(const Value *v) const {
    const Op *def = v->definingOp();
    if (def && !skipped(def) && fusedActivation(def)) {
      return false;
    }
    if (def && g_.isOutput(v) && !skipped(def) && becomesInteger(*def)) {
      return true;
    }
    for (const Op *user : g_.users(v)) {
      if (!skipped(user)) {
        return true;
      }
    }
    return false;
  }

  bool resultQuantized(const Op *op,
                       const std::map<const Value *, QuantizedTensor> &params) const {
    if (params.count(op->result())) {
      return true;
    }
    const Op *act = fusedActivation(op);
    return act && params.count(act->result());
  }

  Op *insertionPointAfter(const Op *def) const {
    const auto &ops = g_.ops();
    if (!def) {
      return ops.empty() ? nullptr : ops.front().get();
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].get() == def) {
        return i + 1 < ops.size() ? ops[i + 1].get() : nullptr;
      }
    }
    return nullptr;
  }

  absl::Status quantizeWeights(Op *op, int64_t axis, float inputScale) {
    Value *w = op->operand(1);
    const TensorType &wt = w->type();
    const std::vector<double> values =
        w->definingOp()->value().toDoubles(ElementType::F32);
    const int64_t channels = wt.dim(axis);
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < wt.rank(); ++d) {
      inner *= wt.dim(d);
    }
    auto channelOf = [&](size_t i) { return int64_t(i / inner) % channels; };
    std::vector<float> absMax(channels, 0.0f);
    for (size_t i = 0; i < values.size(); ++i) {
      if (!std::isfinite(values[i])) {
        return op->emitError("--quantize: weight " + w->name() +
                             " holds a non-finite value");
      }
      float &m = absMax[channelOf(i)];
      m = std::max(m, std::fabs(float(values[i])));
    }
    std::vector<double> scales(channels);
    for (int64_t c = 0; c < channels; ++c) {
      float s = absMax[c] / 127.0f;
      scales[c] = s > 0 ? s : 1.0f;
    }
    std::vector<int64_t> q(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      float r = std::nearbyint(float(values[i]) / float(scales[channelOf(i)]));
      q[i] = int64_t(std::clamp(r, -127.0f, 127.0f));
    }
    const std::string base = w->name();
    auto vectorType = [&](ElementType t) {
      return TensorType::ranked(t, {channels});
    };
    Op *qw = g_.createConstant(wt.withElementType(ElementType::I8),
                               graph::DenseData::fromInt64s(ElementType::I8, q),
                               op, base + "_int8");
    Op *ws = g_.createConstant(
        vectorType(ElementType::F32),
        graph::DenseData::fromDoubles(ElementType::F32, scales), op,
        base + "_wscale");
    Op *wz = g_.createConstant(
        vectorType(ElementType::I8),
        graph::DenseData::fromInt64s(ElementType::I8,
                                     std::vector<int64_t>(channels, 0)),
        op, base + "_wzero_point");
    Op *dq = g_.createOp("DequantizeLinear",
                         {qw->result(), ws->result(), wz->result()}, {wt},
                         {{"axis", graph::Attribute(axis)}}, op,
                         {base + "_dq"});
    dq->setNodeName(base + "_DQ");
    op->setOperand(1, dq->result());

    // The bias: a constant vector with one value per output channel.
    const bool hasBias = op->numOperands() > 2 && isConstantF32(op->operand(2));
    const bool gemmBeta = !op->is(OpKind::Gemm) || op->getFloat("beta", 1.0) == 1.0;
    if (!hasBias || op->is(OpKind::MatMul) || !gemmBeta) {
      return absl::OkStatus();
    }
    Value *b = op->operand(2);
    if (!b->type().hasStaticShape() || b->type().rank() != 1 ||
        b->type().dim(0) != channels) {
      return absl::OkStatus(); // fuse-qdq quantizes a float bias itself
    }
    const std::vector<double> bias =
        b->definingOp()->value().toDoubles(ElementType::F32);
    std::vector<double> accScale(channels);
    std::vector<int64_t> qb(channels);
    for (int64_t c = 0; c < channels; ++c) {
      const float s = inputScale * float(scales[c]);
      accScale[c] = s;
      const double r = std::nearbyint(double(float(bias[c]) / s));
      qb[c] = int64_t(std::clamp(r, double(INT32_MIN), double(INT32_MAX)));
    }
    Op *qbias = g_.createConstant(
        vectorType(ElementType::I32),
        graph::DenseData::fromInt64s(ElementType::I32, qb), op,
        b->name() + "_int32");
    Op *bs = g_.createConstant(
        vectorType(ElementType::F32),
        graph::DenseData::fromDoubles(ElementType::F32, accScale), op,
        b->name() + "_bscale");
    Op *bz = g_.createConstant(
        vectorType(ElementType::I32),
        graph::DenseData::fromInt64s(ElementType::I32,
                                     std::vector<int64_t>(channels, 0)),
        op, b->name() + "_bzero_point");
    Op *bdq = g_.createOp("DequantizeLinear",
                          {qbias->result(), bs->result(), bz->result()},
                          {b->type()}, {{"axis", graph::Attribute(int64_t(0))}},
                          op, {b->name() + "_dq"});
    bdq->setNodeName(b->name() + "_DQ");
    op->setOperand(2, bdq->result());
    return absl::OkStatus();
  }

  graph::Graph &g_;
  const std::map<std::string, Range> &ranges_;
  const std::set<std::string> &skip_;
};

} // namespace

absl::StatusOr<std::vector<QuantizedTensor>>
insertQdq(graph::Graph &g, const std::map<std::string, Range> &ranges,
          const std::set<std::string> &skip) {
  return Quantizer(g, ranges, skip).run();
}

Histogram::Histogram(Range range) : range_(range), counts_(kBins, 0) {}

void Histogram::add(const float *values, size_t count) {
  const double width = range_.hi - range_.lo;
  for (size_t i = 0; i < count; ++i) {
    int bin = 0;
    if (width > 0) {
      const double t = (double(values[i]) - range_.lo) / width * kBins;
      bin = int(std::clamp(t, 0.0, double(kBins - 1)));
    }
    ++counts_[bin];
  }
  total_ += count;
}

Range Histogram::percentileRange(double percentile) const {
  if (total_ == 0 || counts_.empty()) {
    return range_;
  }
  const double width = (range_.hi - range_.lo) / kBins;
  const double tail = double(total_) * (100.0 - percentile) / 100.0;
  Range r = range_;
  // Lower end: the first bin edge below which more than |tail| values lie.
  double below = 0;
  for (int b = 0; b < kBins; ++b) {
    below += double(counts_[b]);
    if (below > tail) {
      r.lo = range_.lo + width * b;
      break;
    }
  }
  double above = 0;
  for (int b = kBins - 1; b >= 0; --b) {
    above += double(counts_[b]);
    if (above > tail) {
      r.hi = range_.lo + width * (b + 1);
      break;
    }
  }
  return r;
}

} // namespace osprey::compiler::ptq
