// Shape rules for every registered op kind (internal to the graph library).
#ifndef OSPREY_COMPILER_GRAPH_SHAPE_RULES_H_
#define OSPREY_COMPILER_GRAPH_SHAPE_RULES_H_

#include "compiler/graph/op_registry.h"

namespace osprey::compiler::graph::rules {

#define OSPREY_SHAPE_RULE(name)                                                \
  absl::Status name(const Op &op, std::vector<TensorType> &out);
OSPREY_SHAPE_RULE(sameAsFirst)
OSPREY_SHAPE_RULE(broadcast)
OSPREY_SHAPE_RULE(bitShift) // broadcast, unsigned, direction LEFT or RIGHT
OSPREY_SHAPE_RULE(compare)
OSPREY_SHAPE_RULE(where)
OSPREY_SHAPE_RULE(variadic) // Max, Min: N operands broadcast together
OSPREY_SHAPE_RULE(cast)
OSPREY_SHAPE_RULE(constant)
OSPREY_SHAPE_RULE(gatherElements)
OSPREY_SHAPE_RULE(constantOfShape)
OSPREY_SHAPE_RULE(conv)
OSPREY_SHAPE_RULE(convTranspose)
OSPREY_SHAPE_RULE(gemm)
OSPREY_SHAPE_RULE(matmul)
OSPREY_SHAPE_RULE(batchNorm)
OSPREY_SHAPE_RULE(pool)
OSPREY_SHAPE_RULE(globalPool)
OSPREY_SHAPE_RULE(flatten)
OSPREY_SHAPE_RULE(reshape)
OSPREY_SHAPE_RULE(transpose)
OSPREY_SHAPE_RULE(concat)
OSPREY_SHAPE_RULE(split)
OSPREY_SHAPE_RULE(slice)
OSPREY_SHAPE_RULE(squeeze)
OSPREY_SHAPE_RULE(unsqueeze)
OSPREY_SHAPE_RULE(gather)
OSPREY_SHAPE_RULE(pad)
OSPREY_SHAPE_RULE(expand)
OSPREY_SHAPE_RULE(shape)
OSPREY_SHAPE_RULE(softmax)
OSPREY_SHAPE_RULE(reduce)
OSPREY_SHAPE_RULE(argMinMax) // ArgMax, ArgMin: i64 indices
OSPREY_SHAPE_RULE(cumSum)
OSPREY_SHAPE_RULE(layerNorm)
OSPREY_SHAPE_RULE(resize)
// Quantization (quantized_shape_rules.cpp).
OSPREY_SHAPE_RULE(quantizeLinear)
OSPREY_SHAPE_RULE(dequantizeLinear)
OSPREY_SHAPE_RULE(qlinearConv)
OSPREY_SHAPE_RULE(qlinearMatMul)
OSPREY_SHAPE_RULE(convInteger)
OSPREY_SHAPE_RULE(matMulInteger)
OSPREY_SHAPE_RULE(qconv)
OSPREY_SHAPE_RULE(qmatmul)
OSPREY_SHAPE_RULE(qbinary)
OSPREY_SHAPE_RULE(qrescale)
OSPREY_SHAPE_RULE(qpool)
#undef OSPREY_SHAPE_RULE

// Result dims of a convolution of |x| by |w| (ranked) with |op|'s group,
// kernel_shape, strides, dilations, pads and auto_pad attributes.
absl::Status convDims(const Op &op, const TensorType &x, const TensorType &w,
                      std::vector<int64_t> &dims);
// Result dims of ONNX MatMul of ranked |a| and |b|.
absl::Status matmulDims(const TensorType &a, const TensorType &b,
                        std::vector<int64_t> &dims);

} // namespace osprey::compiler::graph::rules

#endif // OSPREY_COMPILER_GRAPH_SHAPE_RULES_H_
