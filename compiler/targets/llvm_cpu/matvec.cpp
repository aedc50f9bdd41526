// Integer matrix-vector products with SMLAD (see matvec.h).
//
// Instructions per four reduction steps of a block of R rows: two loads of
// x's pair words (shared by the rows), per row one load, two SXTB16 and two
// SMLAD, and the loop's decrement and branch: 5R + 4, 1.5 per multiply-add
// with R = 4 (the generic loops took 4.7).
#include "compiler/targets/llvm_cpu/matvec.h"

#include "compiler/structured/fusion.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"
#include "llvm/IR/IntrinsicsARM.h"
#include "llvm/TargetParser/Triple.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using structured::MatVecPlan;

// Outputs per block: R accumulators, x's two pair words, a weight word and
// its two halves, and the pointers fit the 13 allocatable registers (with 6
// rows the FC autoencoder took 0.79 M instructions against 0.61 M, with 2
// rows 0.67 M).
constexpr int64_t kMatVecRows = 4;

class MatVecEmitter : public TileEmitter {
public:
  MatVecEmitter(const dispatch::DispatchProgram &p,
                const dispatch::DispatchRegion &r, llvm::IRBuilder<> &b,
                llvm::Function *fn, const TileHooks &hooks,
                const MatVecPlan &plan)
      : TileEmitter(p, r, b, fn, hooks), plan_(plan) {
    ivs_.assign(root().bounds.size(), nullptr);
    for (unsigned d : plan_.kLoops) {
      k_ *= root().bounds[d];
    }
    kPad_ = p.program.tensors[root().inputs[plan_.w].tensor].type.dims()[1];
  }

  absl::Status emit(llvm::ArrayRef<llvm::Value *> lo,
                    llvm::ArrayRef<llvm::Value *> hi) {
    i32_ = b_.getInt32Ty();
    xPairs_ = b_.CreateAlloca(llvm::ArrayType::get(i32_, kPad_ / 2), nullptr,
                              "x_pairs");
    xPairs_->setAlignment(llvm::Align(8));
    for (size_t d = 0; d < ivs_.size(); ++d) {
      ivs_[d] = lo[d];
    }
    for (unsigned d : plan_.kLoops) {
      ivs_[d] = idx(0);
    }
    absl::Status status = absl::OkStatus();
    nest(plan_.mLoops, 0, lo, hi, [&] {
      expandX();
      unsigned n = plan_.nLoop;
      llvm::Value *count = b_.CreateSub(hi[n], lo[n]);
      llvm::Value *blocksEnd = b_.CreateAdd(
          lo[n], b_.CreateMul(b_.CreateUDiv(count, idx(kMatVecRows)),
                              idx(kMatVecRows)));
      stepLoop(lo[n], blocksEnd, kMatVecRows, LoopHint::kNoVectorize,
               [&](llvm::Value *n0) { block(n0, kMatVecRows, status); });
      loop(blocksEnd, hi[n], [&](llvm::Value *n0) { block(n0, 1, status); },
           LoopHint::kNoVectorize);
    });
    return status;
  }

private:
  llvm::Value *sxtb16(llvm::Value *word) {
    return b_.CreateIntrinsic(llvm::Intrinsic::arm_sxtb16, {}, {word});
  }
  llvm::Value *sxtb16Odd(llvm::Value *word) {
    llvm::Value *rotated = b_.CreateIntrinsic(llvm::Intrinsic::fshr, {i32_},
                                              {word, word, b_.getInt32(8)});
    return sxtb16(rotated);
  }
  llvm::Value *pairWord(int64_t index) {
    return b_.CreateConstInBoundsGEP1_64(i32_, xPairs_, index);
  }

  // Writes x's steps as pair words: for each group g of four steps, word
  // 2g holds steps (4g, 4g+2) and word 2g+1 steps (4g+1, 4g+3), as
  // SXTB16 and SXTB16 ROR 8 split a weight word; steps past K are zero.
  void expandX() {
    llvm::Value *offset = idx(plan_.xOffset);
    for (unsigned d : plan_.mLoops) {
      offset = b_.CreateAdd(offset, b_.CreateMul(ivs_[d],
                                                 idx(plan_.xStrides[d])));
    }
    llvm::Value *x = b_.CreateInBoundsGEP(
        b_.getInt8Ty(), hooks_.base(root().inputs[plan_.x].tensor), offset);
    int64_t full = k_ / 4;
    auto store = [&](llvm::Value *g, llvm::Value *word) {
      llvm::Value *at = b_.CreateShl(g, idx(1));
      b_.CreateAlignedStore(sxtb16(word),
                            b_.CreateInBoundsGEP(i32_, xPairs_, at),
                            llvm::Align(4));
      b_.CreateAlignedStore(
          sxtb16Odd(word),
          b_.CreateInBoundsGEP(i32_, xPairs_, b_.CreateAdd(at, idx(1))),
          llvm::Align(4));
    };
    loop(idx(0), idx(full), [&](llvm::Value *g) {
      llvm::Value *word = b_.CreateAlignedLoad(
          i32_, b_.CreateInBoundsGEP(b_.getInt8Ty(), x,
                                     b_.CreateShl(g, idx(2))),
          llvm::Align(1));
      store(g, word);
    }, LoopHint::kNoVectorize);
    if (k_ % 4 != 0) {
      llvm::Value *word = b_.getInt32(0);
      for (int64_t j = 0; j < k_ % 4; ++j) {
        llvm::Value *byte = b_.CreateLoad(
            b_.getInt8Ty(),
            b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), x, full * 4 + j));
        word = b_.CreateOr(word, b_.CreateShl(b_.CreateZExt(byte, i32_),
                                              b_.getInt32(8 * j)));
      }
      store(idx(full), word);
    }
  }

  // Outputs n0 .. n0 + rows: the dot products, then the epilogue.
  void block(llvm::Value *n0, int64_t rows, absl::Status &status) {
    llvm::Value *w = hooks_.base(root().inputs[plan_.w].tensor);
    std::vector<llvm::Value *> rowPtr;
    for (int64_t r = 0; r < rows; ++r) {
      llvm::Value *n = b_.CreateAdd(n0, idx(r));
      rowPtr.push_back(b_.CreateInBoundsGEP(b_.getInt8Ty(), w,
                                            b_.CreateMul(n, idx(kPad_))));
    }
    // for (g = 0; g < Kp / 4; ++g) with the accumulators as loop values.
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "mv_loop", fn_);
    llvm::BasicBlock *body = llvm::BasicBlock::Create(ctx_, "mv_body", fn_);
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "mv_exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode *g = b_.CreatePHI(idxTy_, 2);
    g->addIncoming(idx(0), pre);
    std::vector<llvm::PHINode *> accs;
    for (int64_t r = 0; r < rows; ++r) {
      accs.push_back(b_.CreatePHI(i32_, 2));
      accs.back()->addIncoming(b_.getInt32(0), pre);
    }
    b_.CreateCondBr(b_.CreateICmpSLT(g, idx(kPad_ / 4)), body, exit);
    b_.SetInsertPoint(body);
    llvm::Value *at = b_.CreateShl(g, idx(1));
    llvm::Value *xEven = b_.CreateAlignedLoad(
        i32_, b_.CreateInBoundsGEP(i32_, xPairs_, at), llvm::Align(4));
    llvm::Value *xOdd = b_.CreateAlignedLoad(
        i32_,
        b_.CreateInBoundsGEP(i32_, xPairs_, b_.CreateAdd(at, idx(1))),
        llvm::Align(4));
    llvm::Value *byteOffset = b_.CreateShl(g, idx(2));
    for (int64_t r = 0; r < rows; ++r) {
      llvm::Value *word = b_.CreateAlignedLoad(
          i32_, b_.CreateInBoundsGEP(b_.getInt8Ty(), rowPtr[r], byteOffset),
          llvm::Align(1));
      llvm::Value *acc = b_.CreateIntrinsic(llvm::Intrinsic::arm_smlad, {},
                                            {xEven, sxtb16(word), accs[r]});
      acc = b_.CreateIntrinsic(llvm::Intrinsic::arm_smlad, {},
                               {xOdd, sxtb16Odd(word), acc});
      accs[r]->addIncoming(acc, b_.GetInsertBlock());
    }
    g->addIncoming(b_.CreateAdd(g, idx(1), "", true, true),
                   b_.GetInsertBlock());
    // Unrolled, the loop runs out of registers and spills accumulators
    // (FC autoencoder 0.63 -> 0.61 M instructions without unrolling).
    llvm::BranchInst *latch = b_.CreateBr(header);
    llvm::Metadata *disable[] = {
        llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")};
    setLoopProperties(latch, {llvm::MDNode::get(ctx_, disable)});
    b_.SetInsertPoint(exit);
    for (int64_t r = 0; r < rows && status.ok(); ++r) {
      ivs_[plan_.nLoop] = b_.CreateAdd(n0, idx(r));
      status = hooks_.finish(accs[r], ivs_);
    }
  }

  const MatVecPlan &plan_;
  int64_t k_ = 1;
  int64_t kPad_ = 0;
  llvm::Type *i32_ = nullptr;
  llvm::AllocaInst *xPairs_ = nullptr;
};

} // namespace

bool hasMatVecKernel(llvm::StringRef triple, llvm::StringRef features) {
  llvm::Triple t(triple);
  return (t.isARM() || t.isThumb()) && !features.contains("-dsp") &&
         (t.getSubArch() == llvm::Triple::ARMSubArch_v7em ||
          features.contains("+dsp"));
}

absl::StatusOr<bool> emitMatVec(const dispatch::DispatchProgram &program,
                                const dispatch::DispatchRegion &region,
                                llvm::IRBuilder<> &builder, llvm::Function *fn,
                                llvm::ArrayRef<llvm::Value *> lo,
                                llvm::ArrayRef<llvm::Value *> hi,
                                const TileHooks &hooks,
                                const CodegenOptions &) {
  const structured::StructuredOp &root = program.program.ops[region.ops[0]];
  std::optional<MatVecPlan> plan =
      structured::planMatVec(program.program, root);
  if (!plan || !structured::hasMatVecRows(program.program, root, *plan)) {
    return false;
  }
  llvm::StringRef features = targetFeatures(*fn->getParent());
  if (!hasMatVecKernel(fn->getParent()->getTargetTriple(), features)) {
    return false;
  }
  MatVecEmitter emitter(program, region, builder, fn, hooks, *plan);
  absl::Status status = emitter.emit(lo, hi);
  if (!status.ok()) {
    return status;
  }
  return true;
}

} // namespace osprey::compiler::llvm_cpu
