// Recognition of convolutions computed as Winograd F(2x2, 3x3) or
// F(4x4, 3x3) and the compile-time transform of their weights.
#ifndef OSPREY_COMPILER_STRUCTURED_WINOGRAD_H_
#define OSPREY_COMPILER_STRUCTURED_WINOGRAD_H_

#include <optional>
#include <vector>

#include "compiler/structured/fusion.h"
#include "compiler/structured/structured_ir.h"

namespace osprey::compiler::structured {

// A convolution root that Winograd F(2x2, 3x3) computes exactly (up to
// rounding): out[co][oh][ow] = init + sum over ci, kh, kw of
// w[co][ci][kh][kw] * in[ci][oh + kh - padH][ow + kw - padW] with
//  - a GemmPlan whose A (the weights) is a constant f32 tensor read without
//    padding and whose B (the input) is read with zero padding (or none);
//  - reduction loops ci (bound cin), kh and kw (bound 3 each);
//  - B's last result ow + kw - padW (contiguous input columns) and one
//    other result oh + kh - padH (input rows); its other results read no
//    loop but ci (one result equal to ci) and parallel loops of bound 1;
//  - parallel loops co (the plan's mLoop, bound cout), oh and ow (the
//    output's last two results), every other parallel loop of bound 1.
// Stride, dilation and group are thus 1 and the window 3x3.
struct WinogradPlan {
  GemmPlan gemm;
  unsigned co = 0, oh = 0, ow = 0; // parallel root loops
  unsigned ci = 0, kh = 0, kw = 0; // reduction root loops
  unsigned rowResult = 0;          // B's result reading oh + kh
  int64_t padH = 0, padW = 0;      // B's zero padding above and left
  int64_t cin = 0, cout = 0;
  // Output tile edge: F(m x m, 3x3) reads (m + 2) x (m + 2) input patches
  // and multiplies (m + 2)^2 transformed values per tile and channel pair
  // (16 per 4 outputs for m = 2, 36 per 16 for m = 4).
  int64_t m = 2;
  int64_t patch() const { return m + 2; }
  int64_t positions() const { return patch() * patch(); }
};

// The plan of |root| when it has the form above and Winograd pays for its
// size (enough input and output channels and output pixels, see
// winograd.cpp; off with --osprey-winograd=false). Code generators decide
// whether their target gains (vector targets only).
std::optional<WinogradPlan> planWinograd(const StructuredProgram &program,
                                         const StructuredOp &root);

// Most bytes of transformed input panels per workgroup (code generators
// keep them on the stack; 256 channels x 64 tiles take 1 MiB).
inline constexpr int64_t kWinogradMaxPanelBytes = int64_t{1} << 20;

// Tiles for a root with |plan| when plan.m is 4 (others keep their tiles):
// all output channels and columns, and bands of whole rows of m x m tiles
// whose panels fit kWinogradMaxPanelBytes, chosen for the fewest panel
// columns computed over all bands (tiles per band padded to 32-wide
// panels, or 16 for a last part of at most 16), then the fewest bands.
// Sets the entries of |tiles| for loops co, oh and ow.
void chooseWinogradTiles(const StructuredOp &root, const WinogradPlan &plan,
                         std::vector<int64_t> &tiles);

// The transformed weights U[k][co][ci] = (G g[co][ci] G^T)[k / n][k % n]
// of |root| (n = plan.patch(); plan.positions() * cout * cin floats),
// computed in double precision from the constant A of |plan|. Requires |plan|
// from planWinograd(|program|, |root|).
std::vector<float> winogradWeights(const StructuredProgram &program,
                                   const StructuredOp &root,
                                   const WinogradPlan &plan);

} // namespace osprey::compiler::structured

#endif // OSPREY_COMPILER_STRUCTURED_WINOGRAD_H_
