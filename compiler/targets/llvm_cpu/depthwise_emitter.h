// The depthwise convolution emitter (see depthwise_conv.h), internal to the
// LLVM CPU backend. Its parts live in one file each:
//   depthwise_geometry.cpp  static geometry: blocks, scratch, vector shape
//   depthwise_conv.cpp      the workgroup: planes, blocks, batches, stages
//   depthwise_copy.cpp      input rows copied into padded, phase-split planes
//   depthwise_rows.cpp      window sums of a block, epilogue
//   depthwise_prologue.cpp  input rows computed by a fused 1x1 expansion
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_DEPTHWISE_EMITTER_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_DEPTHWISE_EMITTER_H_

#include <vector>

#include "absl/status/status.h"
#include "compiler/structured/fusion.h"
#include "compiler/targets/llvm_cpu/codegen_options.h"
#include "compiler/targets/llvm_cpu/tile_emitter.h"

namespace osprey::compiler::llvm_cpu {

inline int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

class DepthwiseConvEmitter : public TileEmitter {
public:
  DepthwiseConvEmitter(const dispatch::DispatchProgram &p,
                       const dispatch::DispatchRegion &r, llvm::IRBuilder<> &b,
                       llvm::Function *fn, const structured::RowConvPlan &plan,
                       const TileHooks &hooks, const DepthwiseOptions &options)
      : TileEmitter(p, r, b, fn, hooks), plan_(plan), options_(options) {}

  // Static geometry for |vectorWidth| lanes and a scratch budget of
  // |maxScratch| bytes; false when one output row does not fit.
  bool size(unsigned vectorWidth, uint64_t maxScratch);
  // Checks the prologue's form (see structured::fuseAndTile) and records
  // its access arithmetic; an error when this emitter cannot compute it.
  absl::Status preparePrologue();
  // Emits the workgroup's tile (loop ranges [lo[d], hi[d])); size() must
  // have succeeded (and preparePrologue() with a prologue).
  absl::Status emit(llvm::ArrayRef<llvm::Value *> lo,
                    llvm::ArrayRef<llvm::Value *> hi);

private:
  //===--------------------------------------------------------------------===//
  // Geometry (depthwise_geometry.cpp)
  //===--------------------------------------------------------------------===//

  // Vector targets: flattened rows or v_ rows per iteration, by cost.
  void chooseVectorShape(int64_t ow);
  // Whether the epilogue may run over flattened positions of a block.
  bool flatEpilogue();

  //===--------------------------------------------------------------------===//
  // Workgroup (depthwise_conv.cpp)
  //===--------------------------------------------------------------------===//

  // The tile's planes in batches of batch_, each stage over the whole batch.
  void emitBatches(llvm::ArrayRef<llvm::Value *> lo,
                   llvm::ArrayRef<llvm::Value *> hi, absl::Status &status);

  //===--------------------------------------------------------------------===//
  // Plane copy (depthwise_copy.cpp)
  //===--------------------------------------------------------------------===//

  // Stores |value| (a scalar) to dst[from, to).
  void fillScalars(llvm::Value *dst, llvm::Value *from, llvm::Value *to,
                   llvm::Value *value);
  // Stores vectors of |value| over dst[0, n) rounded up to whole vectors.
  void fillVectors(llvm::Value *dst, llvm::Value *n, llvm::Value *value);
  // Copies src[from, from + n) to dst[to, to + n); |srcTy|, when given,
  // is the type of src's elements (the input's i8/i16, widened).
  void copySpan(llvm::Value *dst, llvm::Value *to, llvm::Value *src,
                llvm::Value *from, llvm::Value *n,
                llvm::Type *srcTy = nullptr);
  // Copies the input rows of output rows [r0, r0 + rb) into the planes.
  void copyPlanes(llvm::Value *r0, llvm::Value *rb);
  // Splits a row buffer (|src|, else row_) by column phase into plane row
  // |rowOff| of the planes of row phase |rph|.
  void splitPhases(int64_t rph, llvm::Value *rowOff,
                   llvm::Value *src = nullptr);

  //===--------------------------------------------------------------------===//
  // Row computation and epilogue (depthwise_rows.cpp)
  //===--------------------------------------------------------------------===//

  // Flattened end of the computed lanes of a block of |rb| rows.
  llvm::Value *computeEnd(llvm::Value *rb);
  // Accumulates the window of the current planes into the sums of a block
  // of |rb| output rows; with |status| (direct_), the accumulators of output
  // rows [r0, r0 + rb) go through the epilogue instead.
  void compute(llvm::Value *rb, bool accumulate, llvm::Value *r0 = nullptr,
               absl::Status *status = nullptr);
  // Drops the junk columns of flattened sums for a dense epilogue.
  void compact(llvm::Value *rb);
  // Applies the fused ops to the sums of output rows [r0, r0 + rb).
  absl::Status epilogue(llvm::Value *r0, llvm::Value *rb);

  //===--------------------------------------------------------------------===//
  // Prologue: rows computed by a fused 1x1 expansion (depthwise_prologue.cpp)
  //===--------------------------------------------------------------------===//

  // Per slot of a batch: plane scratch, row buffer, A (weights) pointer,
  // weights hoisted per reduction step (unrolled reductions) and the
  // prologue epilogue's operands loaded at the slot's channel (per op, per
  // input; null for values the prologue computes).
  struct PrologueSlots {
    std::vector<llvm::Value *> planes, rows, aPtrs;
    std::vector<std::vector<llvm::Value *>> weights;
    std::vector<std::vector<std::vector<llvm::Value *>>> loaded;
  };
  // The input row being computed: its index, its columns [c0, c1) inside
  // the input of the row's |len| positions starting at input column
  // |colBase|, the padding value, the expansion's B operand and each slot's
  // destination.
  struct PrologueRow {
    llvm::Value *inRow = nullptr, *colBase = nullptr, *c0 = nullptr,
                *c1 = nullptr, *pad = nullptr, *bBase = nullptr;
    int64_t width = 0, len = 0;
    std::vector<llvm::Value *> dst;
  };
  // Accumulators [vector of the span][slot].
  using Accumulators = std::vector<std::vector<llvm::Value *>>;

  // The prologue's epilogue ops on |value|.
  llvm::Value *
  prologueEpilogue(llvm::Value *value, llvm::Type *ty,
                   const std::vector<std::vector<llvm::Value *>> &loaded);
  // The tile's planes in batches whose input rows are computed together.
  void emitPrologue(llvm::ArrayRef<llvm::Value *> lo,
                    llvm::ArrayRef<llvm::Value *> hi, absl::Status &status);
  // Fills the planes of the batch's slots with the prologue's value at the
  // input rows of output rows [r0, r0 + rb).
  void
  computeRows(llvm::Value *b0, llvm::Value *n, llvm::Value *r0, llvm::Value *rb,
              llvm::function_ref<void(llvm::Value *, llvm::Value *)> setSlot);
  // Points each slot of the batch at its plane and loads what the slot's
  // rows share (weights, per-channel operands).
  PrologueSlots
  loadSlots(llvm::Value *b0, llvm::Value *n,
            llvm::function_ref<void(llvm::Value *, llvm::Value *)> setSlot);
  // Computes input row |row| inside the input for every slot.
  void computeRow(const PrologueSlots &slots, const PrologueRow &row);
  // The dot products of |xs| vectors at column c0 + x (the last masked by
  // |mask| if set) for every slot.
  Accumulators dotProducts(const PrologueSlots &slots, llvm::Value *bPtr,
                           llvm::Value *x, int64_t xs, llvm::Value *mask);
  // Stores |acc| (through the prologue's epilogue unless it runs later
  // over the row) at column c0 + x of each slot's row.
  void storeDots(const PrologueSlots &slots, const PrologueRow &row,
                 llvm::Value *x, int64_t xs, llvm::Value *mask,
                 const Accumulators &acc);

  //===--------------------------------------------------------------------===//
  // Shared helpers and state
  //===--------------------------------------------------------------------===//

  // Whether the region computes its input rows (structured::FusionGroup::
  // prologue) instead of copying them.
  bool prologue() const { return !r_.prologue.empty(); }
  llvm::Value *splat(llvm::Value *v) {
    return vw_ > 1 ? b_.CreateVectorSplat(vw_, v) : v;
  }
  // |v| as a constant of the planes' element type.
  llvm::Constant *constant(double v) {
    return int_ ? llvm::ConstantInt::get(f32_, int64_t(v))
                : llvm::ConstantFP::get(f32_, v);
  }
  // An input value (scalar or vector) in the planes' element type: i8/i16
  // inputs of integer convolutions sign-extend to i32.
  llvm::Value *widen(llvm::Value *v) {
    if (!int_) {
      return v;
    }
    auto *vec = llvm::dyn_cast<llvm::VectorType>(v->getType());
    return b_.CreateSExt(v, vec ? llvm::VectorType::get(f32_, vec) : f32_);
  }
  // acc + x * w (f32 multiply-add, or wrapping i32 arithmetic).
  llvm::Value *multiplyAdd(llvm::Value *x, llvm::Value *w, llvm::Value *acc) {
    if (int_) {
      llvm::Value *p = b_.CreateMul(x, w);
      return acc ? b_.CreateAdd(acc, p) : p;
    }
    return acc ? b_.CreateIntrinsic(llvm::Intrinsic::fmuladd,
                                    {x->getType()}, {x, w, acc})
               : b_.CreateFMul(x, w);
  }
  llvm::Value *at(llvm::Value *base, llvm::Value *off) {
    return b_.CreateInBoundsGEP(f32_, base, off);
  }
  llvm::Value *planeAt(int64_t phase, llvm::Value *off) {
    return at(planeBase_, b_.CreateAdd(idx(phase * planeStride_), off));
  }
  llvm::Value *sumsAt(llvm::Value *off) { return at(sumsBase_, off); }

  const structured::RowConvPlan &plan_;
  const DepthwiseOptions &options_;
  // Prologue (see preparePrologue()): rank and dims of its value, the
  // matrix product's A and B operands as linear offsets (constant +
  // coefficient per loop) and their offsets per reduction step.
  unsigned eRank_ = 0, eSplit_ = 0, ea_ = 0, eb_ = 0;
  // Offsets per reduction step when A's and B's are linear in the step
  // (a reduction loop, see computeRows), else 0.
  int64_t aStep_ = 0, bStep_ = 0;
  llvm::AllocaInst *accs_ = nullptr;
  // The prologue's epilogue has exp, tanh or sigmoid.
  bool mathEpilogue_ = false;
  // Elements the prologue's planes or row buffers are shifted by.
  llvm::Value *shift_ = nullptr;
  std::vector<int64_t> eDims_, aCoef_, bCoef_, aSteps_, bSteps_;
  int64_t aConst_ = 0, bConst_ = 0;
  unsigned vw_ = 1;
  int64_t u_ = 1, lanes_ = 1;
  // Output rows per iteration of the row-by-row vector loop.
  int64_t v_ = 1;
  int64_t sw_ = 1, sh_ = 1, kw_ = 1, kh_ = 1, dw_ = 0, dh_ = 0;
  int64_t phases_ = 1, wq_ = 0, khx_ = 0, rows_ = 1;
  int64_t planeStride_ = 0, tLen_ = 0, sLen_ = 0, sPitch_ = 0;
  // Computed in flattened plane coordinates (else row by row); epilogue
  // over flattened output positions (see flatEpilogue()).
  bool flat_ = false, dense_ = false, direct_ = false;
  // Element type of the planes and sums (f32, or i32 for integer
  // convolutions: int_), its vector, and the input's element type.
  llvm::Type *f32_ = nullptr, *vecTy_ = nullptr, *srcTy_ = nullptr;
  bool int_ = false;
  std::vector<llvm::Value *> lo_, hi_;
  llvm::AllocaInst *plane_ = nullptr, *sums_ = nullptr, *row_ = nullptr;
  // Scratch of the current plane (a slot of plane_ and sums_ in batches).
  llvm::Value *planeBase_ = nullptr, *sumsBase_ = nullptr;
  std::vector<unsigned> outer_, rolled_; // plane loops, summed plane loops
  int64_t rolledCount_ = 1, batch_ = 1;
};

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_DEPTHWISE_EMITTER_H_
