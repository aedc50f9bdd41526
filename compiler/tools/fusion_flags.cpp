// Flags of fusion's and memory planning's tuning knobs (hidden: for
// measurements and tests).
#include "compiler/tools/fusion_flags.h"

#include "llvm/Support/CommandLine.h"

namespace cl = llvm::cl;

namespace osprey::compiler::tools {
namespace {

cl::opt<bool> fuseDepthwisePrologue(
    "osprey-fuse-depthwise-prologue",
    cl::desc("Compute a 1x1 expansion inside the depthwise convolution "
             "that reads it"),
    cl::init(true), cl::Hidden);
cl::opt<unsigned> prologueMaxReduction(
    "osprey-depthwise-prologue-max-k",
    cl::desc("Longest reduction of an expansion fused into a depthwise "
             "convolution"),
    cl::init(64), cl::Hidden);
cl::opt<unsigned> prologueMinWidth(
    "osprey-depthwise-prologue-min-width",
    cl::desc("Narrowest depthwise input map an expansion is fused into"),
    cl::init(28), cl::Hidden);
cl::opt<unsigned> prologueMinStridedWidth(
    "osprey-depthwise-prologue-min-strided-width",
    cl::desc("Narrowest input map of a strided depthwise convolution an "
             "expansion is fused into (0: 28 on vector targets, 56 on "
             "scalar ones)"),
    cl::init(0), cl::Hidden);
cl::opt<unsigned> prologueMathMinWidth(
    "osprey-depthwise-prologue-math-min-width",
    cl::desc("Narrowest depthwise input map an expansion whose activation "
             "uses exp, tanh or sigmoid is fused into"),
    cl::init(56), cl::Hidden);

cl::opt<bool> winograd(
    "osprey-winograd",
    cl::desc("Compute 3x3 stride-1 convolutions with enough channels as "
             "Winograd F(2x2, 3x3) or F(4x4, 3x3) on vector targets"),
    cl::init(true), cl::Hidden);
cl::opt<unsigned>
    winogradMinPixels("osprey-winograd-min-pixels",
                      cl::desc("Fewest output pixels of a Winograd convolution"),
                      cl::init(196), cl::Hidden);
cl::opt<unsigned> winogradMinF4Width(
    "osprey-winograd-f4-min-width",
    cl::desc("Narrowest output map computed as Winograd F(4x4, 3x3) (0: "
             "never)"),
    cl::init(28), cl::Hidden);
cl::opt<unsigned> winogradBlockRows(
    "osprey-winograd-block-rows",
    cl::desc("Output channels per Winograd product block (at least the "
             "kernel's rows; larger blocks fit the panel budget)"),
    cl::init(0), cl::Hidden);
cl::opt<bool> winogradTransposed(
    "osprey-winograd-transposed",
    cl::desc("Run Winograd products over few tiles with vectors along "
             "output channels"),
    cl::init(true), cl::Hidden);

cl::opt<bool> transposeGemmWeights(
    "osprey-gemm-transpose-weights",
    cl::desc("Give matrix products over small pixel tiles a copy of their "
             "constant weights with output channels innermost"),
    cl::init(true), cl::Hidden);

cl::opt<int64_t> maxEmbeddedConstantBytes(
    "osprey-max-embedded-constant-bytes",
    cl::desc("Constants of at most this many bytes are embedded in the "
             "executable; larger ones are bound from module rodata"),
    cl::init(dispatch::kMaxEmbeddedConstantBytes), cl::Hidden);

} // namespace

structured::FusionOptions
fusionOptionsFromFlags(structured::FusionOptions options) {
  structured::DepthwisePrologueOptions &prologue = options.depthwisePrologue;
  prologue.enabled = fuseDepthwisePrologue;
  prologue.maxReduction = prologueMaxReduction;
  prologue.minWidth = prologueMinWidth;
  prologue.minStridedWidth = prologueMinStridedWidth;
  prologue.mathMinWidth = prologueMathMinWidth;
  structured::WinogradOptions &w = options.winograd;
  w.enabled = winograd;
  w.minPixels = winogradMinPixels;
  w.minF4Width = winogradMinF4Width;
  w.blockRows = winogradBlockRows;
  w.transposed = winogradTransposed;
  options.transposeGemmWeights = transposeGemmWeights;
  return options;
}

dispatch::PlanOptions planOptionsFromFlags(dispatch::PlanOptions defaults) {
  if (maxEmbeddedConstantBytes.getNumOccurrences() > 0) {
    defaults.maxEmbeddedConstantBytes = maxEmbeddedConstantBytes;
  }
  return defaults;
}

} // namespace osprey::compiler::tools
