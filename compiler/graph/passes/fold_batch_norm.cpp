// Folds inference-mode BatchNormalization into a preceding Conv or Gemm.
#include <cmath>

#include "compiler/graph/op_registry.h"
#include "compiler/graph/passes/passes.h"

namespace osprey::compiler::graph {
namespace {

// Per-channel affine form of a BatchNormalization: y = x * scale + shift.
struct ChannelAffine {
  std::vector<double> scale, shift;
};

std::optional<ChannelAffine> readBatchNorm(const Op &bn) {
  auto gamma = getConstantFloats(bn.operand(1));
  auto beta = getConstantFloats(bn.operand(2));
  auto mean = getConstantFloats(bn.operand(3));
  auto var = getConstantFloats(bn.operand(4));
  if (!gamma || !beta || !mean || !var) {
    return std::nullopt;
  }
  double eps = bn.getFloat("epsilon", 1e-5);
  ChannelAffine affine;
  for (size_t c = 0; c < gamma->size(); ++c) {
    double s = (*gamma)[c] / std::sqrt((*var)[c] + eps);
    affine.scale.push_back(s);
    affine.shift.push_back((*beta)[c] - (*mean)[c] * s);
  }
  return affine;
}

// Rewrites |producer| (Conv or Gemm) feeding |bn| with scaled weights and a
// new bias; returns false when the pattern does not apply.
bool foldInto(Graph &graph, Op *producer, Op *bn, const ChannelAffine &bnAff) {
  bool isConv = producer->is(OpKind::Conv);
  const TensorType &wType = producer->operand(1)->type();
  auto weights = getConstantFloats(producer->operand(1));
  if (!weights || !wType.hasStaticShape()) {
    return false;
  }
  int64_t channels = static_cast<int64_t>(bnAff.scale.size());
  // Output channel of each weight element: Conv W is [M, C/g, k...]; Gemm B is
  // [K, N] or [N, K] with transB.
  bool transB = !isConv && producer->getInt("transB", 0) != 0;
  int64_t n = wType.numElements();
  int64_t perChannel = isConv ? n / wType.dim(0) : 1;
  if ((isConv ? wType.dim(0) : wType.dim(transB ? 0 : 1)) != channels) {
    return false;
  }
  std::vector<double> w = *weights;
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = isConv ? i / perChannel
                       : (transB ? i / wType.dim(1) : i % wType.dim(1));
    w[i] *= bnAff.scale[c];
  }
  // Old bias per channel (Gemm: beta * C broadcast to [N]).
  std::vector<double> bias(channels, 0.0);
  if (Value *b = producer->operand(2)) {
    auto values = getConstantFloats(b);
    if (!values) {
      return false;
    }
    const TensorType &bt = b->type();
    if (!isConv) {
      // C must be per-column: scalar, [N] or [1, N].
      if (bt.numElements() != 1 && bt.numElements() != channels) {
        return false;
      }
      if (bt.rank() == 2 && bt.dim(0) != 1) {
        return false;
      }
    }
    double beta = isConv ? 1.0 : producer->getFloat("beta", 1.0);
    for (int64_t c = 0; c < channels; ++c) {
      bias[c] = beta * (*values)[values->size() == 1 ? 0 : c];
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    bias[c] = bias[c] * bnAff.scale[c] + bnAff.shift[c];
  }
  ElementType et = wType.elementType();
  Op *newW = graph.createConstant(wType, DenseData::fromDoubles(et, w),
                                  producer, producer->operand(1)->name());
  Op *newB = graph.createConstant(TensorType::ranked(et, {channels}),
                                  DenseData::fromDoubles(et, bias), producer);
  newW->setNodeName(producer->nodeName());
  newB->setNodeName(producer->nodeName());
  std::vector<Value *> operands = {producer->operand(0), newW->result(),
                                   newB->result()};
  std::map<std::string, Attribute> attrs = producer->attributes();
  if (!isConv) {
    attrs["beta"] = 1.0;
  }
  Op *fused = graph.createOp(producer->kind(), operands,
                             {bn->result()->type()}, attrs, bn,
                             {bn->result()->name()});
  fused->setNodeName(producer->nodeName());
  graph.replaceAllUsesWith(bn->result(), fused->result());
  graph.eraseOp(bn);
  graph.eraseOp(producer);
  return true;
}

} // namespace

absl::Status FoldBatchNormPass::run(Graph &graph) {
  for (Op *bn : graph.opList()) {
    if (!bn->is(OpKind::BatchNormalization)) {
      continue;
    }
    Op *producer = bn->operand(0)->definingOp();
    if (!producer ||
        (!producer->is(OpKind::Conv) && !producer->is(OpKind::Gemm)) ||
        graph.users(producer->result()).size() != 1 ||
        graph.isOutput(producer->result()) ||
        !isFloatType(bn->result()->type().elementType())) {
      continue;
    }
    auto affine = readBatchNorm(*bn);
    if (!affine) {
      continue;
    }
    foldInto(graph, producer, bn, *affine);
  }
  return absl::OkStatus();
}

} // namespace osprey::compiler::graph
