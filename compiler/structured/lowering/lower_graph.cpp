// Lowers a graph to structured ops: graph inputs, each op through the table
// of lowerings by op kind, graph outputs.
#include "compiler/structured/lowering/lower_graph.h"

#include "compiler/structured/lowering/families.h"

namespace osprey::compiler::structured::lowering {
namespace {

struct LoweringEntry {
  OpKind kind;
  LowerFn lower;
};

// Every op kind that lowers, by family. Shape has no entry: constant
// folding must have replaced it.
constexpr LoweringEntry kLowerings[] = {
    // Elementwise.
    {OpKind::Relu, lowerUnary},
    {OpKind::LeakyRelu, lowerUnary},
    {OpKind::Sigmoid, lowerUnary},
    {OpKind::HardSigmoid, lowerUnary},
    {OpKind::HardSwish, lowerUnary},
    {OpKind::Tanh, lowerUnary},
    {OpKind::Erf, lowerUnary},
    {OpKind::Sin, lowerUnary},
    {OpKind::Cos, lowerUnary},
    {OpKind::Tan, lowerUnary},
    {OpKind::Asin, lowerUnary},
    {OpKind::Acos, lowerUnary},
    {OpKind::Atan, lowerUnary},
    {OpKind::Sinh, lowerUnary},
    {OpKind::Cosh, lowerUnary},
    {OpKind::Asinh, lowerUnary},
    {OpKind::Acosh, lowerUnary},
    {OpKind::Atanh, lowerUnary},
    {OpKind::Gelu, lowerUnary},
    {OpKind::Sqrt, lowerUnary},
    {OpKind::Reciprocal, lowerUnary},
    {OpKind::Exp, lowerUnary},
    {OpKind::Log, lowerUnary},
    {OpKind::Abs, lowerUnary},
    {OpKind::Neg, lowerUnary},
    {OpKind::Cast, lowerUnary},
    {OpKind::Floor, lowerUnary},
    {OpKind::Ceil, lowerUnary},
    {OpKind::Round, lowerUnary},
    {OpKind::Sign, lowerUnary},
    {OpKind::Add, lowerBinary},
    {OpKind::Sub, lowerBinary},
    {OpKind::Mul, lowerBinary},
    {OpKind::Div, lowerBinary},
    {OpKind::Pow, lowerBinary},
    {OpKind::Mod, lowerMod},
    {OpKind::Equal, lowerBinary},
    {OpKind::Less, lowerBinary},
    {OpKind::Greater, lowerBinary},
    {OpKind::LessOrEqual, lowerBinary},
    {OpKind::GreaterOrEqual, lowerBinary},
    {OpKind::Where, lowerWhere},
    {OpKind::BitShift, lowerBinary},
    {OpKind::Max, lowerVariadic},
    {OpKind::Min, lowerVariadic},
    {OpKind::And, lowerLogic},
    {OpKind::Or, lowerLogic},
    {OpKind::Xor, lowerLogic},
    {OpKind::Not, lowerLogic},
    {OpKind::PRelu, lowerPRelu},
    {OpKind::Elu, lowerUnary},
    {OpKind::Selu, lowerUnary},
    {OpKind::Softsign, lowerUnary},
    {OpKind::Softplus, lowerUnary},
    {OpKind::Clip, lowerClip},
    {OpKind::Expand, lowerExpand},
    // Convolutions and pools.
    {OpKind::Conv, lowerConv},
    {OpKind::ConvTranspose, lowerConvTranspose},
    {OpKind::MaxPool, lowerPool},
    {OpKind::AveragePool, lowerPool},
    {OpKind::GlobalAveragePool, lowerGlobalAveragePool},
    // Matrix products.
    {OpKind::MatMul, lowerMatMul},
    {OpKind::Gemm, lowerMatMul},
    // Reductions and normalizations.
    {OpKind::ReduceSum, lowerReduce},
    {OpKind::ReduceMax, lowerReduce},
    {OpKind::ReduceMean, lowerReduce},
    {OpKind::Softmax, lowerSoftmax},
    {OpKind::LogSoftmax, lowerLogSoftmax},
    {OpKind::ReduceMin, lowerReduce},
    {OpKind::ReduceProd, lowerReduce},
    {OpKind::ReduceL1, lowerReduce},
    {OpKind::ReduceL2, lowerReduce},
    {OpKind::ReduceSumSquare, lowerReduce},
    {OpKind::ArgMax, lowerArgMinMax},
    {OpKind::ArgMin, lowerArgMinMax},
    {OpKind::CumSum, lowerCumSum},
    {OpKind::BatchNormalization, lowerBatchNorm},
    {OpKind::LayerNormalization, lowerLayerNorm},
    // Data movement.
    {OpKind::Gather, lowerGather},
    {OpKind::GatherElements, lowerGatherElements},
    {OpKind::Slice, lowerSlice},
    {OpKind::Pad, lowerPad},
    {OpKind::Resize, lowerResize},
    {OpKind::Transpose, lowerTranspose},
    {OpKind::Concat, lowerConcat},
    {OpKind::Split, lowerSplit},
    // Constants and views.
    {OpKind::Constant, lowerConstant},
    {OpKind::ConstantOfShape, lowerConstantOfShape},
    {OpKind::Reshape, lowerView},
    {OpKind::Flatten, lowerView},
    {OpKind::Squeeze, lowerView},
    {OpKind::Unsqueeze, lowerView},
    {OpKind::Identity, lowerView},
    // Quantized (integer element types).
    {OpKind::QuantizeLinear, lowerQuantizeLinear},
    {OpKind::DequantizeLinear, lowerDequantizeLinear},
    {OpKind::QConv, lowerQConv},
    {OpKind::QMatMul, lowerQMatMul},
    {OpKind::QAdd, lowerQElementwise},
    {OpKind::QMul, lowerQElementwise},
    {OpKind::QRescale, lowerQElementwise},
    {OpKind::QAveragePool, lowerQAveragePool},
    {OpKind::QLinearConv, lowerQuantizedOperator},
    {OpKind::QLinearMatMul, lowerQuantizedOperator},
    {OpKind::ConvInteger, lowerQuantizedOperator},
    {OpKind::MatMulInteger, lowerQuantizedOperator},
};

// Whether some op computes |t| (possibly reshaped), as opposed to |t| being
// a graph input or a constant seen through views.
bool isComputed(const StructuredProgram &program, unsigned t) {
  for (int p = program.producer(t); p >= 0; p = program.producer(t)) {
    if (!program.ops[p].isView) {
      return true;
    }
    t = program.ops[p].inputs[0].tensor;
  }
  return false;
}

// A graph output that is an input or a constant gets its own copy, so every
// output is written by a dispatch into a buffer the module returns.
unsigned copyForOutput(LoweringContext &ctx, unsigned t) {
  TensorInfo &source = ctx.program().tensors[t];
  unsigned n = source.type.rank();
  StructuredOp s;
  s.nodeName = "output " + source.name;
  s.bounds = source.type.dims().vec();
  s.iterators.assign(n, IteratorType::Parallel);
  s.inputs.push_back({t, AffineMap::identity(n)});
  s.body.yield(s.body.input(0));
  TensorType type = source.type;
  unsigned out = ctx.newTensor(source.name + "_out", type);
  s.output = {out, AffineMap::identity(n)};
  ctx.add(std::move(s));
  return out;
}

absl::Status lowerOp(LoweringContext &ctx, const Op &op) {
  for (Value *result : op.results()) {
    if (!result->type().hasStaticShape()) {
      return absl::UnimplementedError(
          op.describe() + ": result '" + result->name() +
          "' has dynamic type " + result->type().str() + ": " + kDynamicResult);
    }
  }
  LowerFn lower = op.info() ? lookupLowering(op.info()->kind) : nullptr;
  if (!lower) {
    return absl::UnimplementedError(
        op.describe() + ": lowering to structured ops is not implemented yet");
  }
  return lower(ctx, op);
}

} // namespace

LowerFn lookupLowering(OpKind kind) {
  for (const LoweringEntry &entry : kLowerings) {
    if (entry.kind == kind) {
      return entry.lower;
    }
  }
  return nullptr;
}

absl::StatusOr<StructuredProgram>
lowerToStructured(const graph::Graph &graph, const OpOverride &lowerOverride) {
  LoweringContext ctx;
  StructuredProgram &program = ctx.program();
  program.name = graph.name();
  for (Value *input : graph.inputs()) {
    if (!input->type().hasStaticShape()) {
      return absl::UnimplementedError(
          "graph input '" + input->name() + "' has dynamic type " +
          input->type().str() +
          ": dynamic shapes are not implemented; pin every dimension "
          "(osprey-compile --input-shape=" +
          input->name() + ":<d0>x<d1>...)");
    }
    COMPILER_ASSIGN_OR_RETURN(unsigned t, ctx.tensorFor(input));
    program.tensors[t].isInput = true;
    program.inputs.push_back(t);
    program.inputNames.push_back(input->name());
  }
  for (const auto &op : graph.ops()) {
    if (lowerOverride) {
      COMPILER_ASSIGN_OR_RETURN(bool lowered, lowerOverride(ctx, *op));
      if (lowered) {
        continue;
      }
    }
    COMPILER_RETURN_IF_ERROR(lowerOp(ctx, *op));
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    Value *output = graph.outputs()[i];
    program.outputNames.push_back(i < graph.outputNames().size()
                                      ? graph.outputNames()[i]
                                      : output->name());
    COMPILER_ASSIGN_OR_RETURN(unsigned t, ctx.tensorFor(output));
    if (!isComputed(program, t)) {
      t = copyForOutput(ctx, t);
    }
    program.tensors[t].isOutput = true;
    program.outputs.push_back(t);
  }
  return std::move(program);
}

} // namespace osprey::compiler::structured::lowering
