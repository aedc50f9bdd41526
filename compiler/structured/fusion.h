// Fusion and tiling decisions on structured ops.
#ifndef OSPREY_COMPILER_STRUCTURED_FUSION_H_
#define OSPREY_COMPILER_STRUCTURED_FUSION_H_

#include "absl/status/status.h"
#include "compiler/structured/structured_ir.h"

namespace osprey::compiler::structured {

// When a 1x1 expansion is fused into the depthwise convolution reading it
// (step 5 of fuseAndTile; fuseDepthwisePrologues in fusion.cpp).
struct DepthwisePrologueOptions {
  bool enabled = true;
  // Longest reduction (input channels) of a fused expansion.
  unsigned maxReduction = 64;
  // Narrowest depthwise input map fused into.
  unsigned minWidth = 28;
  // Narrowest input map of a strided convolution fused into (0: 28 on
  // vector targets, 56 on scalar ones).
  unsigned minStridedWidth = 0;
  // Narrowest input map when the expansion's activation uses exp, tanh or
  // sigmoid.
  unsigned mathMinWidth = 56;
};

// When and how 3x3 convolutions are computed as Winograd F(m x m, 3x3)
// (winograd.h). Code generators re-derive each Winograd root's schedule, so
// they must use the options the program was fused with.
struct WinogradOptions {
  bool enabled = true;
  // Fewest output pixels of a Winograd convolution.
  unsigned minPixels = 196;
  // Narrowest output map computed with 4x4 tiles (0: never).
  unsigned minF4Width = 28;
  // Output channels per product block (at least the kernel's rows; larger
  // blocks fit the panel budget; 0: the kernel's rows).
  unsigned blockRows = 0;
  // Products over few tiles with vectors along output channels.
  bool transposed = true;
};

// What fuseAndTile knows of the target's code generator, and its tuning.
// The microkernel fields come from the target (the defaults, scalar code,
// make no target-dependent rewrites); the others are tuning knobs whose
// defaults are the measured choices.
struct FusionOptions {
  unsigned vectorWidth = 1;   // f32 lanes per vector (1: scalar code)
  unsigned kernelRows = 1;    // rows of A per microkernel block (MR)
  unsigned kernelVectors = 1; // vectors of B per block (NR / vectorWidth)
  // Copies of constant weights with output channels innermost for matrix
  // products over small pixel tiles (relayoutGemmOperands).
  bool transposeGemmWeights = true;
  // Constant weights of integer matrix-vector products laid out as rows of
  // reduction steps, four per 32-bit word (the target has a two-pair
  // multiply-add on words of i16 pairs, Arm DSP SMLAD).
  bool matVecRows = false;
  DepthwisePrologueOptions depthwisePrologue;
  WinogradOptions winograd;
};

// Makes fusion decisions from iterator types, indexing maps and body shape
// only (never from the graph op an op came from):
//  1. A pure copy with a permutation/broadcast read (transpose, expand) is
//     folded into its consumers by composing indexing maps, then removed.
//  2. Elementwise ops reading a reshape of a computed tensor move before the
//     reshape when they form a DAG with one exit (sinkReshapes), and a
//     per-channel scale feeding only a matrix product's reduction axis
//     becomes a scale of its weights (foldChannelScales).
//  3. An elementwise op joins the group of a producer it reads through an
//     identity map when it reads every value of that group directly at its
//     own index and joining makes no two groups read each other's values:
//     chains and DAGs (x * sigmoid(x)) fuse, and elementwise ops after a
//     contraction, convolution or reduction become its epilogue (bias,
//     activation, residual add). A group value also read outside the group
//     is stored by the region besides its result (formDispatchRegions).
//  4. Each group gets tile sizes for the root's parallel loops (reduction
//     loops are not tiled), a 3-D workgroup grid, and a microkernel flag when
//     the root is a contraction.
//  5. A group whose root is a matrix product over channels (a 1x1
//     expansion, pixels contiguous in its input) with an elementwise
//     per-channel epilogue, whose value only a depthwise convolution reads,
//     becomes that convolution's group's prologue (FusionGroup::prologue,
//     see fuseDepthwisePrologues in fusion.cpp for the exact conditions
//     and thresholds in |options.depthwisePrologue|):
//     its value is computed where the convolution reads it, never stored.
//  6. On targets with vectors (|options|), convolutions planned as Winograd
//     F(m x m, 3x3) read compile-time transformed weights instead of their
//     3x3 weights and are marked StructuredOp::winograd
//     (transformWinogradWeights, winograd.h).
// Fills |program.groups| and each op's FusionInfo. Views join no group.
absl::Status fuseAndTile(StructuredProgram &program,
                         const FusionOptions &options = {});

// How a multiply-accumulate root (out += in_a * in_b in f32, or i8/i16
// operands widened to an i32 accumulator) maps onto a matrix product
// C[M][N] += A[M][K] * B[K][N], for code generators that pack B into
// panels and run a register-blocked microkernel:
//  - B is the input that reads the output's innermost loop; it may have
//    padded (windowed, strided, dilated) reads and is packed element by
//    element, so its layout does not matter.
//  - A is read in place: it has no padding or indirect reads, its linear
//    element offset is affine in the loops, and the reduction loops (in
//    kLoops order) flatten into one index k with A offset aStrides[kLoops
//    .back()] * k.
//  - Parallel loops read by both are batch loops; the single parallel loop
//    read only by A is mLoop (output channels, rows); the other parallel
//    loops are N loops (pixels, columns), flattened in output order.
// Returns nullopt when |root| does not have that form (no mLoop with
// extent >= 4, several A-only loops, A not flattenable, indirect reads) or
// is a Winograd root (StructuredOp::winograd).
struct GemmPlan {
  unsigned a = 0;                   // input operand number of A
  unsigned b = 0;                   // input operand number of B
  unsigned mLoop = 0;               // root loop of M
  std::vector<unsigned> batchLoops; // parallel loops both inputs read
  std::vector<unsigned> nLoops;     // N loops, outermost first
  std::vector<unsigned> kLoops;     // reduction loops, slowest in A first
  std::vector<int64_t> aStrides;    // A's element stride per root loop
  int64_t aOffset = 0;              // A's element offset at loop origin
};
std::optional<GemmPlan> planGemm(const StructuredProgram &program,
                                 const StructuredOp &root);

// How an integer multiply-accumulate root with too few output rows for a
// GemmPlan maps onto matrix-vector products y[n] += sum_k x[k] * w[n][k]
// (fully connected layers at batch 1):
//  - the root widens i8 operands x and w into an i32 accumulator and reads
//    both through affine maps without padding;
//  - nLoop is the one parallel loop only w reads; mLoops are the parallel
//    loops only x reads (each a separate vector); no loop is read by both
//    but the reduction loops;
//  - the reduction loops (kLoops, slowest in x first) flatten into one k
//    along which x is contiguous: x's element offset is xOffset + the
//    mLoops' strides (xStrides) + k.
// w's layout is free (relayoutGemmOperands may give it rows of k).
struct MatVecPlan {
  unsigned x = 0;
  unsigned w = 0;
  unsigned nLoop = 0;
  std::vector<unsigned> mLoops;
  std::vector<unsigned> kLoops;
  std::vector<int64_t> xStrides; // per root loop
  int64_t xOffset = 0;
};
std::optional<MatVecPlan> planMatVec(const StructuredProgram &program,
                                     const StructuredOp &root);

// Whether the constant |w| read by a MatVecPlan root has rows of k: a
// [N][Kp] tensor read at [nLoop][k] with Kp >= K a multiple of 4, so code
// generators may load four steps of a row per 32-bit word.
bool hasMatVecRows(const StructuredProgram &program, const StructuredOp &root,
                   const MatVecPlan &plan);

// Gives GemmPlan roots whose whole N fits one tile of at most 224 elements
// that is not a whole number of 16-wide vectors (7x7 and 14x14 maps), with
// at least 128 reduction steps, a compile-time copy of their constant A
// with the M axis innermost, padded to whole 16-float groups (an odd number
// of them above 1 MiB), and makes them read it, so code generators can
// vectorize along M (gemm_layout.cpp). Needs the groups' tile sizes. Does
// nothing unless |options.transposeGemmWeights|.
// With |options.matVecRows|, MatVecPlan roots with a constant w instead
// read a copy with rows of k (hasMatVecRows), the same size but for the
// padding of K to a multiple of 4.
void relayoutGemmOperands(StructuredProgram &program,
                          const FusionOptions &options);

// A convolution root without a GemmPlan (depthwise or grouped) whose every
// output element is a window of one plane of input |b|:
//  - the output's last result is loop |col| and the one before it loop
//    |row| (both parallel);
//  - b's last result (input columns) is colStride * col + colDilation * kw
//    + c and another result |rowResult| (input rows) is rowStride * row +
//    rowDilation * kh + c, with kw and kh reduction loops (absent for a
//    window of width or height 1) and positive strides and dilations;
//  - no other result of b reads col, row, kw or kh, and input |a| (the
//    weights: no padding or indirect reads) reads neither col nor row.
// Other parallel loops select the plane (channels, batch); other reduction
// loops (input channels of a group) sum several planes.
struct RowConvPlan {
  unsigned a = 0;
  unsigned b = 0;
  unsigned col = 0;
  unsigned row = 0;
  std::optional<unsigned> kw, kh;
  unsigned rowResult = 0;
  int64_t colStride = 1, colDilation = 1;
  int64_t rowStride = 1, rowDilation = 1;
};
std::optional<RowConvPlan> planRowConv(const StructuredProgram &program,
                                       const StructuredOp &root);

} // namespace osprey::compiler::structured

#endif // OSPREY_COMPILER_STRUCTURED_FUSION_H_
