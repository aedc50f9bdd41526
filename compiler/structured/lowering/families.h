// The lowering of each op family, one file per family; lower_graph.cpp's
// table maps every op kind to one of these.
#ifndef OSPREY_COMPILER_STRUCTURED_LOWERING_FAMILIES_H_
#define OSPREY_COMPILER_STRUCTURED_LOWERING_FAMILIES_H_

#include "compiler/structured/lowering/lowering.h"

namespace osprey::compiler::structured::lowering {

#define OSPREY_LOWERING(name)                                                  \
  absl::Status name(LoweringContext &ctx, const Op &op);
// elementwise.cpp: activations, math functions, Cast, broadcasting
// arithmetic and comparisons, Where, Clip, Expand.
OSPREY_LOWERING(lowerUnary)
OSPREY_LOWERING(lowerBinary)
OSPREY_LOWERING(lowerMod)
OSPREY_LOWERING(lowerVariadic)
OSPREY_LOWERING(lowerLogic)
OSPREY_LOWERING(lowerPRelu)
OSPREY_LOWERING(lowerLogSoftmax)
OSPREY_LOWERING(lowerWhere)
OSPREY_LOWERING(lowerClip)
OSPREY_LOWERING(lowerExpand)
// conv.cpp: Conv, ConvTranspose.
OSPREY_LOWERING(lowerConv)
OSPREY_LOWERING(lowerConvTranspose)
// pool.cpp: MaxPool, AveragePool, GlobalAveragePool.
OSPREY_LOWERING(lowerPool)
OSPREY_LOWERING(lowerGlobalAveragePool)
// matmul.cpp: MatMul, Gemm.
OSPREY_LOWERING(lowerMatMul)
// reduction.cpp: ReduceSum, ReduceMax, ReduceMean, ArgMax, ArgMin, CumSum,
// Softmax.
OSPREY_LOWERING(lowerReduce)
OSPREY_LOWERING(lowerArgMinMax)
OSPREY_LOWERING(lowerCumSum)
OSPREY_LOWERING(lowerSoftmax)
// normalization.cpp: BatchNormalization, LayerNormalization.
OSPREY_LOWERING(lowerBatchNorm)
OSPREY_LOWERING(lowerLayerNorm)
// gather.cpp: Gather (constant and run-time indices).
OSPREY_LOWERING(lowerGather)
OSPREY_LOWERING(lowerGatherElements)
// slice_pad.cpp: Slice, Pad (constant, edge, reflect).
OSPREY_LOWERING(lowerSlice)
OSPREY_LOWERING(lowerPad)
// resize.cpp: Resize (nearest, linear).
OSPREY_LOWERING(lowerResize)
// shape.cpp: constants, fills, views (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity), Transpose, Concat, Split.
OSPREY_LOWERING(lowerConstant)
OSPREY_LOWERING(lowerConstantOfShape)
OSPREY_LOWERING(lowerView)
OSPREY_LOWERING(lowerTranspose)
OSPREY_LOWERING(lowerConcat)
OSPREY_LOWERING(lowerSplit)
// quantized.cpp: QuantizeLinear, DequantizeLinear and the canonical
// quantized ops of the fuse-qdq pass, on integer element types; ONNX's
// QLinearConv, QLinearMatMul, ConvInteger and MatMulInteger are
// UNIMPLEMENTED (fuse-qdq rewrites them first).
OSPREY_LOWERING(lowerQuantizeLinear)
OSPREY_LOWERING(lowerDequantizeLinear)
OSPREY_LOWERING(lowerQConv)
OSPREY_LOWERING(lowerQMatMul)
OSPREY_LOWERING(lowerQElementwise)
OSPREY_LOWERING(lowerQAveragePool)
OSPREY_LOWERING(lowerQuantizedOperator)
#undef OSPREY_LOWERING

} // namespace osprey::compiler::structured::lowering

#endif // OSPREY_COMPILER_STRUCTURED_LOWERING_FAMILIES_H_
