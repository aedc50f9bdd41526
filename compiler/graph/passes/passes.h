// The graph passes. Each does one job; see each class comment for what it
// requires and what it guarantees.
#ifndef OSPREY_COMPILER_GRAPH_PASSES_PASSES_H_
#define OSPREY_COMPILER_GRAPH_PASSES_PASSES_H_

#include "compiler/graph/passes/pass_manager.h"

namespace osprey::compiler::graph {

// Recomputes every result type from the op shape rules in topological order
// and refines declared types with what the rules prove. Fails when a declared
// type contradicts a rule. Leaves: every result type as precise as the rules
// allow, and no auto_pad on a Conv or pool whose shapes are static (explicit
// pads instead).
class ShapePropagationPass : public GraphPass {
public:
  llvm::StringRef name() const override { return "propagate-shapes"; }
  llvm::StringRef description() const override {
    return "refine result types with the op shape rules";
  }
  absl::Status run(Graph &graph) override;
};

// Replaces ops whose operands are all constants (and Shape of a static
// tensor) by Constant ops, when the folded result is at most |maxBytes|.
// Reshape-like ops share the operand's storage and are always folded.
// Leaves: no foldable op with a small result.
class ConstantFoldingPass : public GraphPass {
public:
  explicit ConstantFoldingPass(size_t maxBytes = 1 << 20)
      : maxBytes_(maxBytes) {}
  llvm::StringRef name() const override { return "fold-constants"; }
  llvm::StringRef description() const override {
    return "evaluate ops with constant operands (option max-bytes=N)";
  }
  absl::Status run(Graph &graph) override;

private:
  size_t maxBytes_;
};

// Folds an inference-mode BatchNormalization into the Conv or Gemm feeding
// it when that producer has no other user and all weights are constants.
// Requires: static shapes. Leaves: no BatchNormalization after such a Conv or
// Gemm.
class FoldBatchNormPass : public GraphPass {
public:
  llvm::StringRef name() const override { return "fold-batch-norm"; }
  llvm::StringRef description() const override {
    return "fold BatchNormalization into the preceding Conv/Gemm";
  }
  absl::Status run(Graph &graph) override;
};

// Rewrites a 1x1, stride-1, unpadded, ungrouped Conv with constant weights
// into Reshape + MatMul (+ Add) + Reshape. Weights are reshaped without
// copying. Requires: static input shape.
class Conv1x1ToMatMulPass : public GraphPass {
public:
  llvm::StringRef name() const override { return "conv1x1-to-matmul"; }
  llvm::StringRef description() const override {
    return "rewrite 1x1 convolutions as matrix multiplications";
  }
  absl::Status run(Graph &graph) override;
};

// Composes chains of Transposes, drops identity permutations, and absorbs a
// 2-D Transpose feeding Gemm into its transA/transB attribute.
class FoldTransposesPass : public GraphPass {
public:
  llvm::StringRef name() const override { return "fold-transposes"; }
  llvm::StringRef description() const override {
    return "compose, cancel and absorb transposes";
  }
  absl::Status run(Graph &graph) override;
};

// Replaces GELU written out as 0.5 * x * (1 + erf(x / sqrt(2))) (either
// multiplication order, division by sqrt(2) or multiplication by its inverse)
// by Gelu, and its tanh approximation 0.5 * x * (1 + tanh(sqrt(2 / pi) *
// (x + 0.044715 * x^3))) (x^3 as Pow or products) by Gelu {approximate =
// "tanh"}, when every intermediate has no other use and the constants are
// scalars. Leaves the matched ops dead (for dce).
class FuseGeluPass : public GraphPass {
public:
  llvm::StringRef name() const override { return "fuse-gelu"; }
  llvm::StringRef description() const override {
    return "replace GELU written out with erf or tanh by a Gelu op";
  }
  absl::Status run(Graph &graph) override;
};

// Rewrites quantized computation into the canonical quantized ops (QConv,
// QMatMul, QAdd, QMul, QRescale, QAveragePool; see fuse_qdq.cpp): QDQ
// patterns (DequantizeLinear inputs -> Conv/MatMul/Gemm [-> Relu/Clip],
// Add, Mul, AveragePool, GlobalAveragePool, Concat, Relu/Clip ->
// QuantizeLinear), DequantizeLinear moved past layout ops and MaxPool, and
// the operator forms QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger.
// QuantizeLinear of constants folds first (weights stay integer). Float ops
// left reading dequantized values get a "note" attribute saying why.
// Requires: static shapes. Errors: INVALID_ARGUMENT naming the node for bad
// quantization parameters, UNIMPLEMENTED for operator forms it cannot
// express (run-time scales or convolution weights, per-row A).
class FuseQdqPass : public GraphPass {
public:
  llvm::StringRef name() const override { return "fuse-qdq"; }
  llvm::StringRef description() const override {
    return "rewrite QDQ patterns and quantized operators into integer ops";
  }
  absl::Status run(Graph &graph) override;
};

// Forwards the operand of ops that do nothing: Identity, Reshape to the same
// static shape, Cast to the same element type, Pad by constant zeros.
// Leaves: no Identity op.
class RemoveIdentityPass : public GraphPass {
public:
  llvm::StringRef name() const override { return "remove-identity"; }
  llvm::StringRef description() const override {
    return "forward operands of no-op Identity/Reshape/Cast/Pad";
  }
  absl::Status run(Graph &graph) override;
};

// Erases ops none of whose results reach a graph output.
class DeadCodeEliminationPass : public GraphPass {
public:
  llvm::StringRef name() const override { return "dce"; }
  llvm::StringRef description() const override {
    return "erase ops whose results are unused";
  }
  absl::Status run(Graph &graph) override;
};

} // namespace osprey::compiler::graph

#endif // OSPREY_COMPILER_GRAPH_PASSES_PASSES_H_
