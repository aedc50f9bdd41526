// Flags of the LLVM CPU code generator's tuning knobs (hidden: for
// measurements and tests).
#include "compiler/tools/llvm_cpu_flags.h"

#include "llvm/Support/CommandLine.h"

namespace cl = llvm::cl;

namespace osprey::compiler::tools {
namespace {

cl::opt<bool> poolWindow(
    "osprey-pool-window",
    cl::desc("Emit max pooling windows with row-interior vector loads "
             "(false: the generic loop nest)"),
    cl::init(true), cl::Hidden);

cl::opt<unsigned> gemmMaxScratch(
    "osprey-gemm-max-scratch",
    cl::desc("Stack bytes the packed matrix-product path may use per "
             "workgroup (0: the target's default)"),
    cl::init(0), cl::Hidden);
cl::opt<bool> gemmColumnPanels(
    "osprey-gemm-column-panels",
    cl::desc("Vectorize matrix products along M when A is laid out with M "
             "innermost (as on scalar targets when off)"),
    cl::init(true), cl::Hidden);
cl::opt<unsigned> gemmTransposedVectors(
    "osprey-gemmt-vectors",
    cl::desc("Vectors of output channels per block of the transposed kernel "
             "on AVX-512 targets (1-3; 0: chosen per tile)"),
    cl::init(0), cl::Hidden);

cl::opt<unsigned> depthwiseVectorWidth(
    "osprey-depthwise-vector-width",
    cl::desc("f32 lanes of the depthwise convolution code (0: the target's; "
             "1: scalar code as for embedded targets)"),
    cl::init(0), cl::Hidden);
cl::opt<unsigned> depthwiseMaxScratch(
    "osprey-depthwise-max-scratch",
    cl::desc("Stack bytes the depthwise convolution path may use per "
             "workgroup (0: the target's default)"),
    cl::init(0), cl::Hidden);
cl::opt<unsigned> depthwiseMaxRows(
    "osprey-depthwise-max-rows",
    cl::desc("Most output rows per iteration of the row-by-row depthwise "
             "vector loop"),
    cl::init(4), cl::Hidden);
cl::opt<unsigned> depthwisePrologueMaxScratch(
    "osprey-depthwise-prologue-max-scratch",
    cl::desc("Stack bytes of a depthwise convolution with a prologue on "
             "vector targets (0: 128 KiB)"),
    cl::init(0), cl::Hidden);
cl::opt<unsigned> depthwisePrologueLoop(
    "osprey-depthwise-prologue-loop",
    cl::desc("1: run a depthwise prologue's reduction as a loop; 0: "
             "unrolled"),
    cl::init(1), cl::Hidden);
cl::opt<unsigned> depthwiseProloguePlanes(
    "osprey-depthwise-prologue-planes",
    cl::desc("Planes whose prologue rows the depthwise convolution computes "
             "together (0: 8, or 4 with 8-lane vectors)"),
    cl::init(0), cl::Hidden);

} // namespace

llvm_cpu::CodegenOptions
codegenOptionsFromFlags(const structured::FusionOptions &fusion) {
  llvm_cpu::CodegenOptions options;
  options.poolWindow = poolWindow;
  options.gemm.maxScratch = gemmMaxScratch;
  options.gemm.columnPanels = gemmColumnPanels;
  options.gemm.transposedVectors = gemmTransposedVectors;
  llvm_cpu::DepthwiseOptions &d = options.depthwise;
  d.vectorWidth = depthwiseVectorWidth;
  d.maxScratch = depthwiseMaxScratch;
  d.maxRows = depthwiseMaxRows;
  d.prologueMaxScratch = depthwisePrologueMaxScratch;
  d.prologueLoop = depthwisePrologueLoop != 0;
  d.prologuePlanes = depthwiseProloguePlanes;
  options.winograd = fusion.winograd;
  return options;
}

} // namespace osprey::compiler::tools
