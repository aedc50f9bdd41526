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
// winograd.cpp and |options|; none when options.enabled is off), whatever
// the target (transformWinogradWeights applies it on vector targets only).
std::optional<WinogradPlan> planWinograd(const StructuredProgram &program,
                                         const StructuredOp &root,
                                         const WinogradOptions &options);

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

// The scratch layout of one workgroup of a Winograd root, for a target
// whose matrix-product microkernel has |options|' shape (see
// llvm_cpu/winograd_conv.cpp for how each array is used). Sizes in floats.
struct WinogradSchedule {
  int64_t m = 2;            // output tile edge
  int64_t vf = 1;           // tiles per transform vector
  int64_t twMax = 0;        // tiles of the widest row
  int64_t rowsPerChunk = 0; // tile rows per chunk
  int64_t tPad = 0;         // panel width (tiles per chunk, padded)
  int64_t vK = 0, mK = 0;   // distance of two positions' panels, products
  int64_t blockRows = 0;    // output channels per product block
  bool transposed = false;  // products with vectors along channels
  int64_t mrT = 0;          // transposed: tiles per block
  int64_t coPad = 0;        // transposed: channels padded to panels
  int64_t uPitch = 0;       // transposed: floats per row of U^T
  int64_t cin = 0;

  // Floats per input plane row, output rows per chunk, floats per output
  // row, floats per input plane, floats one wide load of a patch row reads.
  int64_t pitch() const { return m * twMax + 2; }
  int64_t zRows() const { return m * rowsPerChunk; }
  int64_t zPitch() const {
    // Rows of untransposed outputs hold whole vectors of tiles.
    return m * (transposed ? twMax : (twMax + vf - 1) / vf * vf);
  }
  int64_t planeSize() const { return (zRows() + 2) * pitch(); }
  int64_t wideLoad() const { return (m * vf + 2 + vf - 1) / vf * vf; }
  int64_t positions() const { return (m + 2) * (m + 2); }
  // Stack bytes of all scratch arrays of a workgroup.
  int64_t stackBytes() const {
    return 4 * (cin * planeSize() + wideLoad() + positions() * vK + vf +
                positions() * mK + vf +
                (transposed ? coPad : blockRows) * zRows() * zPitch());
  }
};

// Most stack bytes of a workgroup's scratch arrays (the CPU drivers run
// workgroups on threads with the platform's default stack, 8 MiB on
// Linux; ResNet-18's largest, a 256-channel 14x14 layer transposed, takes
// 2.1 MiB).
inline constexpr int64_t kWinogradMaxStackBytes = int64_t{3} << 20;

// The schedule of a workgroup of at most |maxCo| output channels,
// |maxOh| rows and |maxOw| columns of a root with |plan| on a target with
// |options| (vectorWidth > 1), or nullopt when it does not fit
// kWinogradMaxPanelBytes and kWinogradMaxStackBytes (transposed products
// that do not fit fall back to untransposed ones first).
std::optional<WinogradSchedule> scheduleWinograd(const WinogradPlan &plan,
                                                 int64_t maxCo, int64_t maxOh,
                                                 int64_t maxOw,
                                                 const FusionOptions &options);

// The schedule of |root|'s fusion group |group| (tiles from the group).
std::optional<WinogradSchedule> scheduleWinograd(const StructuredOp &root,
                                                 const FusionGroup &group,
                                                 const WinogradPlan &plan,
                                                 const FusionOptions &options);

// On targets with vectors (options.vectorWidth > 1), makes every group
// root with an all-f32 planWinograd plan and a schedule a Winograd root:
// its weights operand reads a new constant holding winogradWeights (as
// U^T with zero-padded rows of uPitch floats when the schedule is
// transposed), shared by roots transforming the same weights the same way,
// and StructuredOp::winograd records the plan. The 3x3 weights stay for
// their other readers; with none, nothing binds them and they are not
// emitted. Code generators then must compute such roots as Winograd
// convolutions (with the same schedule). Needs the groups' tile sizes.
void transformWinogradWeights(StructuredProgram &program,
                              const FusionOptions &options);

// The plan of a root marked by transformWinogradWeights (its gemm has a,
// b and kLoops = {ci, kh, kw} set; aStrides are empty).
WinogradPlan winogradPlanOf(const StructuredOp &root);

} // namespace osprey::compiler::structured

#endif // OSPREY_COMPILER_STRUCTURED_WINOGRAD_H_
