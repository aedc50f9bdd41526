// Depthwise convolutions through padded, stride-phase-split scratch planes.
//
// Per workgroup (whole planes of one or a few channels), per plane and block
// of rb output rows starting at r0 (blocks fit the scratch budget):
//   copy: every input row the block needs is copied once into scratch plane
//     rows of pitch Wq, with the padding value left and right and in rows
//     outside the input (masked vector loads). With strides sh x sw the rows
//     and columns are split by phase while copying: plane[ph_r * sw +
//     ph_c][i][j] holds input (sh * (r0 + i) + ph_r + c_r, sw * j + ph_c +
//     c_c), c_r and c_c being the (negative) padding offsets.
//   compute: output (oh, ow) of the block sits at q = oh * Wq + ow and tap
//     (kh, kw) reads plane[phase(kh, kw)][q + offset(kh, kw)] with a constant
//     offset, so a vector of outputs costs one unaligned vector load and one
//     FMA per tap, weights hoisted into registers. Short rows are computed in
//     the flattened q space (a vector spans several rows; columns
//     q mod Wq >= OW are junk that is never stored), wide stride-1 rows up
//     to 4 rows per iteration sharing the loads of overlapping window rows;
//     a cost model picks the shape. Planes are padded at the end so vectors
//     past the block read initialized scratch.
//   epilogue: the region's fused ops through hooks.finish in a loop the loop
//     vectorizer turns into vector code: over all rb * OW outputs at once
//     when the fused ops' addresses allow it (the sums compacted first),
//     else row by row.
// On vector targets, planes of one block run stage by stage over a batch
// of planes (copy all, compute all, epilogues), so no stage reads scratch
// just written (failed store forwarding stalled small planes).
// Scalar targets (vector width 1) compute several outputs of a row per
// iteration instead, so neighbouring taps share their loads, and apply the
// epilogue straight from the accumulators.
// With a prologue (a 1x1 expansion fused into the convolution, see
// structured::fuseAndTile), the copy becomes a computation: per block of
// rows, every input row of a batch of planes is a dot product over the
// expansion's input channels, all planes of the batch at once (each input
// vector loaded feeds one FMA per plane), followed by the expansion's
// epilogue (bias, activation) and stored into the planes, which are shifted
// so those stores are aligned; the stages then run per plane as above.
#include "compiler/targets/llvm_cpu/depthwise_conv.h"

#include "compiler/structured/fusion.h"
#include "compiler/targets/llvm_cpu/depthwise_emitter.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"

namespace osprey::compiler::llvm_cpu {

using structured::StructuredOp;

absl::Status DepthwiseConvEmitter::emit(llvm::ArrayRef<llvm::Value *> loIn,
                                        llvm::ArrayRef<llvm::Value *> hiIn) {
  const StructuredOp &op = root();
  graph::ElementType in =
      p_.program.tensors[op.inputs[plan_.b].tensor].type.elementType();
  int_ = in != graph::ElementType::F32;
  f32_ = int_ ? b_.getInt32Ty() : b_.getFloatTy();
  srcTy_ = in == graph::ElementType::I8    ? b_.getInt8Ty()
           : in == graph::ElementType::I16 ? b_.getInt16Ty()
                                           : f32_;
  vecTy_ = vw_ > 1 ? llvm::FixedVectorType::get(f32_, vw_) : f32_;
  std::vector<llvm::Value *> lo(loIn.begin(), loIn.end());
  std::vector<llvm::Value *> hi(hiIn.begin(), hiIn.end());
  // A loop covered by one tile starts at 0: constant bounds let LLVM fold
  // the copy's border arithmetic.
  for (unsigned d : {plan_.col, plan_.row}) {
    if (maxExtent(d) == op.bounds[d]) {
      lo[d] = idx(0);
      hi[d] = idx(op.bounds[d]);
    }
  }
  lo_ = lo;
  hi_ = hi;
  {
    llvm::BasicBlock &entry = fn_->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.begin());
    auto scratch = [&](int64_t n, const char *name) {
      llvm::AllocaInst *a =
          eb.CreateAlloca(llvm::ArrayType::get(f32_, n), nullptr, name);
      a->setAlignment(llvm::Align(64));
      return a;
    };
    plane_ = scratch(batch_ * phases_ * planeStride_, "dw_plane");
    sums_ = scratch(batch_ * sLen_, "dw_sums");
    if (tLen_) {
      row_ = scratch(prologue() ? batch_ * tLen_ : tLen_, "dw_row");
    }
  }
  planeBase_ = plane_;
  sumsBase_ = sums_;
  ivs_.assign(lo.begin(), lo.end());
  std::vector<llvm::Value *> zero(op.bounds.size(), idx(0)), bound;
  for (int64_t v : op.bounds) {
    bound.push_back(idx(v));
  }
  for (unsigned d : rolled_) {
    ivs_[d] = idx(0);
  }
  absl::Status status = absl::OkStatus();
  if (prologue()) {
    emitPrologue(lo, hi, status);
    return status;
  }
  if (batch_ > 1) {
    emitBatches(lo, hi, status);
    return status;
  }
  nest(outer_, 0, lo, hi, [&] {
    stepLoop(
        lo[plan_.row], hi[plan_.row], rows_, LoopHint::kDefault,
        [&](llvm::Value *r0) {
          llvm::Value *left = b_.CreateSub(hi[plan_.row], r0);
          llvm::Value *rb = b_.CreateSelect(b_.CreateICmpSLT(left, idx(rows_)),
                                            left, idx(rows_));
          if (rolledCount_ > 1) {
            // Several planes sum into one output (grouped
            // convolutions): the sums start at init, every lane a pass
            // reads (flattened rows, or the rows of the last iteration
            // of v_ rows at sPitch_ each).
            llvm::Value *count =
                flat_ ? computeEnd(rb)
                      : b_.CreateMul(b_.CreateAdd(rb, idx(v_ - 1)),
                                     idx(sPitch_));
            llvm::Value *init = splat(constant(*op.init));
            stepLoop(idx(0), count, vw_, LoopHint::kNoVectorize,
                     [&](llvm::Value *q) {
                       b_.CreateAlignedStore(init, sumsAt(q), llvm::Align(4));
                     });
          }
          if (direct_) {
            copyPlanes(r0, rb);
            compute(rb, false, r0, &status);
            return;
          }
          nest(rolled_, 0, zero, bound, [&] {
            copyPlanes(r0, rb);
            compute(rb, rolledCount_ > 1);
          });
          compact(rb);
          if (status.ok()) {
            status = epilogue(r0, rb);
          }
        });
  });
  return status;
}

// The tile's planes (outer loop iterations) in batches of batch_, each
// stage over the whole batch; plane j of a batch uses scratch slot j.
void DepthwiseConvEmitter::emitBatches(llvm::ArrayRef<llvm::Value *> lo,
                                       llvm::ArrayRef<llvm::Value *> hi,
                                       absl::Status &status) {
  const StructuredOp &op = root();
  // Extents of the outer loops in the tile: constants when the tile
  // divides the loop, so the plane index splits with cheap divisions.
  std::vector<llvm::Value *> extent;
  llvm::Value *total = idx(1);
  for (unsigned d : outer_) {
    int64_t tile = maxExtent(d);
    extent.push_back(op.bounds[d] % tile == 0 ? idx(tile)
                                              : b_.CreateSub(hi[d], lo[d]));
    total = b_.CreateMul(total, extent.back());
  }
  llvm::Value *r0 = lo[plan_.row];
  llvm::Value *rb = b_.CreateSub(hi[plan_.row], lo[plan_.row]);
  stepLoop(idx(0), total, batch_, LoopHint::kDefault, [&](llvm::Value *b0) {
    llvm::Value *n = smin(idx(batch_), b_.CreateSub(total, b0));
    auto stage = [&](bool setOuter, llvm::function_ref<void()> body) {
      loop(idx(0), n, [&](llvm::Value *j) {
        if (setOuter) {
          llvm::Value *linear = b_.CreateAdd(b0, j);
          for (size_t k = outer_.size(); k-- > 0;) {
            unsigned d = outer_[k];
            if (maxExtent(d) == 1) {
              ivs_[d] = lo[d];
              continue;
            }
            ivs_[d] = b_.CreateAdd(lo[d], b_.CreateURem(linear, extent[k]));
            linear = b_.CreateUDiv(linear, extent[k]);
          }
        }
        planeBase_ = at(plane_, b_.CreateMul(j, idx(phases_ * planeStride_)));
        sumsBase_ = at(sums_, b_.CreateMul(j, idx(sLen_)));
        body();
      });
    };
    stage(true, [&] { copyPlanes(r0, rb); });
    stage(true, [&] { compute(rb, false); });
    if (dense_ && sPitch_ != op.bounds[plan_.col]) {
      stage(false, [&] { compact(rb); });
    }
    stage(true, [&] {
      if (status.ok()) {
        status = epilogue(r0, rb);
      }
    });
  });
  planeBase_ = plane_;
  sumsBase_ = sums_;
}

absl::StatusOr<bool> emitDepthwiseConv(const dispatch::DispatchProgram &program,
                                       const dispatch::DispatchRegion &region,
                                       llvm::IRBuilder<> &builder,
                                       llvm::Function *fn,
                                       llvm::ArrayRef<llvm::Value *> lo,
                                       llvm::ArrayRef<llvm::Value *> hi,
                                       const TileHooks &hooks,
                                       const CodegenOptions &options) {
  const StructuredOp &root = program.program.ops[region.ops[0]];
  if (!allF32(program, root) && !region.prologue.empty()) {
    return absl::UnimplementedError(
        "node '" + root.nodeName +
        "': a non-f32 depthwise convolution with a prologue is not "
        "implemented");
  }
  std::optional<structured::RowConvPlan> plan =
      structured::planRowConv(program.program, root);
  if (!plan) {
    if (!region.prologue.empty()) {
      return absl::UnimplementedError(
          "node '" + root.nodeName +
          "': a prologue on a root that is not a depthwise convolution is "
          "not implemented");
    }
    return false;
  }
  llvm::StringRef features = targetFeatures(*fn->getParent());
  unsigned width =
      gemmKernelShape(fn->getParent()->getTargetTriple(), features).vectorWidth;
  const DepthwiseOptions &tuning = options.depthwise;
  if (tuning.vectorWidth != 0) {
    width = tuning.vectorWidth;
  }
  // Vector targets keep the scratch within L1 (48 KiB on the reference
  // machine) beside the streamed rows; scalar targets have 16 KiB of stack.
  uint64_t maxScratch = width > 1 ? 32 * 1024 : 8 * 1024;
  if (width > 1 && !region.prologue.empty()) {
    // A prologue computes the rows of several planes per block, and each
    // block recomputes the rows its window shares with the next: larger
    // blocks than the copy's, the planes half in L2.
    maxScratch =
        tuning.prologueMaxScratch ? tuning.prologueMaxScratch : 128 * 1024;
  }
  if (tuning.maxScratch != 0) {
    maxScratch = tuning.maxScratch;
  }
  DepthwiseConvEmitter emitter(program, region, builder, fn, *plan, hooks,
                               tuning);
  if (!region.prologue.empty()) {
    // Nothing else computes a prologue: declining would lose it.
    if (absl::Status s = emitter.preparePrologue(); !s.ok()) {
      return s;
    }
    if (!emitter.size(width, maxScratch)) {
      return absl::UnimplementedError(
          "node '" + root.nodeName +
          "': a depthwise convolution with a prologue whose rows do not fit "
          "the scratch budget is not implemented");
    }
  } else if (!emitter.size(width, maxScratch)) {
    return false;
  }
  absl::Status status = emitter.emit(lo, hi);
  if (!status.ok()) {
    return status;
  }
  return true;
}

} // namespace osprey::compiler::llvm_cpu
