// Packed-panel matrix product for convolution and contraction roots.
//
// Matrix product, per workgroup tile (batch indices fixed, M rows [m0, m1),
// N box flattened to j in [0, nTile)):
//   acc[Mpad][Npad] = init
//   for each chunk of kc reduction steps:
//     pack B into panel[k][Npad] (padding, stride, dilation resolved here,
//     once per tile; columns past nTile are zeroed once per tile)
//     for each NR-wide column chunk, for each block of MR rows (rows
//     outermost when the tile has at most two chunks):
//       microkernel: acc block (MR x NR, in registers) += A rows x panel
//   epilogue: fused ops and store, element by element.
// A (weights of a convolution, the left matrix of a matmul) is read in place
// with one broadcast per row and reduction step.
//
// Integer roots (i8/i16 operands, i32 accumulators; GemmElements::kI16Pairs)
// run the same loops on 32-bit words holding two reduction steps as i16:
// the panel rows are pairs of steps, A is packed the same way (at compile
// time on vector targets, else per chunk and block of MR rows), and the
// microkernel does one pair multiply-add per word. Rows of A are always the
// outer loop there, so a packed block meets every column chunk. With i8
// operands and constant A on AVX-512 VNNI (GemmElements::kI8Quads), a word
// holds four steps as bytes and each multiply-add is one VPDPBUSD.
//
// Transposed tiles: when A has its M axis innermost (constant weights of
// small pixel tiles get such a copy from structured::relayoutGemmOperands),
// vector targets compute C^T instead, vectors along M: the kernel
// broadcasts a block of mrT pixels from the panel (or, for a 1x1
// convolution, from B itself: no packing) and loads a panel of channels of
// a row of A (2 or 3 vectors on AVX-512, see transposedVectors; 2 on AVX2),
// so 49 pixels are 7 blocks of 7 instead of 64 vector columns. Per chunk of
// kc reduction steps, each channel panel of A is read from memory once and
// reused from L1 by every pixel block.
#include "compiler/targets/llvm_cpu/packed_gemm.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "compiler/structured/fusion.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsARM.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Module.h"
#include "llvm/TargetParser/Triple.h"

namespace osprey::compiler::llvm_cpu {

using structured::GemmPlan;
using structured::StructuredOp;

unsigned preferredVectorBits(llvm::StringRef triple,
                             llvm::StringRef features) {
  return gemmKernelShape(triple, features).vectorWidth == 16 ? 512 : 0;
}

std::optional<GemmKernelShape>
gemmKernelShape(llvm::StringRef triple, llvm::StringRef features,
                GemmElements elements) {
  if (elements == GemmElements::kF32) {
    return gemmKernelShape(triple, features);
  }
  llvm::Triple t(triple);
  GemmKernelShape shape;
  if (t.getArch() == llvm::Triple::x86_64 && features.contains("+avx512bw") &&
      !features.contains("-evex512")) {
    // 8 x 32 lanes as for f32: 16 zmm accumulators, each multiply-add
    // two reduction steps (four with quads).
    shape = {/*vectorWidth=*/16, /*mr=*/8, /*nv=*/2, /*kc=*/512,
             /*maxScratch=*/512 * 1024};
  } else if (t.getArch() == llvm::Triple::x86_64 &&
             features.contains("+avx2")) {
    shape = {/*vectorWidth=*/8, /*mr=*/6, /*nv=*/2, /*kc=*/512,
             /*maxScratch=*/512 * 1024};
  } else if (t.isARM() || t.isThumb()) {
    if (t.getSubArch() != llvm::Triple::ARMSubArch_v7em &&
        !features.contains("+dsp")) {
      return std::nullopt;
    }
    // 2 x 2 accumulators: the two words of A and of the panel per step
    // load as pairs (LDRD), then four SMLADs: 6 instructions per 8
    // multiply-adds, with the registers of the pointers to spare.
    shape = {/*vectorWidth=*/1, /*mr=*/2, /*nv=*/2, /*kc=*/64,
             /*maxScratch=*/16 * 1024};
  } else {
    return std::nullopt;
  }
  shape.elements = elements;
  if (elements == GemmElements::kI8Quads &&
      (shape.vectorWidth != 16 || !features.contains("+avx512vnni"))) {
    return std::nullopt; // VPDPBUSD on 512-bit vectors only
  }
  return shape;
}

GemmKernelShape gemmKernelShape(llvm::StringRef triple,
                                llvm::StringRef features) {
  llvm::Triple t(triple);
  if (t.getArch() == llvm::Triple::x86_64 && features.contains("+avx512f") &&
      !features.contains("-evex512")) {
    // 8 x 32 floats: 16 zmm accumulators, 2 panel vectors, 1 broadcast.
    // Kernel loop on the reference machine (two 512-bit FMA ports): 84
    // GMAC/s against 45 for the AVX2 6x16 kernel.
    return {/*vectorWidth=*/16, /*mr=*/8, /*nv=*/2, /*kc=*/256,
            /*maxScratch=*/512 * 1024};
  }
  if (t.getArch() == llvm::Triple::x86_64) {
    // 6 x 16 floats: 12 ymm accumulators, 2 panel vectors, 1 broadcast.
    return {/*vectorWidth=*/8, /*mr=*/6, /*nv=*/2, /*kc=*/256,
            /*maxScratch=*/512 * 1024};
  }
  // Scalar FPUs with 32 single-precision registers (Cortex-M4F, RV32F):
  // 4 x 4 accumulators; small chunks keep the stack use low.
  return {/*vectorWidth=*/1, /*mr=*/4, /*nv=*/4, /*kc=*/32,
          /*maxScratch=*/16 * 1024};
}

namespace {

// acc + lo16(a) * lo16(b) + hi16(a) * hi16(b) per 32-bit lane of |acc|,
// |a| and |b| (i32 or vectors of it), in wrapping i32 arithmetic, with the
// target's pair multiply-add instruction. With |elements| kI8Quads: acc +
// the four products of the signed bytes of |a| and the unsigned bytes of
// |x| (VPDPBUSD).
llvm::Value *wordMultiplyAdd(llvm::IRBuilder<> &b, llvm::Module &m,
                             GemmElements elements, llvm::Value *acc,
                             llvm::Value *a, llvm::Value *x) {
  llvm::Triple t(m.getTargetTriple());
  llvm::StringRef features = targetFeatures(m);
  auto *vec = llvm::dyn_cast<llvm::FixedVectorType>(acc->getType());
  unsigned lanes = vec ? vec->getNumElements() : 1;
  if (elements == GemmElements::kI8Quads) {
    // gemmKernelShape offers quads only with AVX-512 VNNI.
    return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_vpdpbusd_512, {},
                             {acc, x, a});
  }
  if (t.getArch() == llvm::Triple::x86_64 && lanes == 16) {
    if (features.contains("+avx512vnni")) {
      return b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_vpdpwssd_512, {},
                               {acc, a, x});
    }
    auto *halves = llvm::FixedVectorType::get(b.getInt16Ty(), 32);
    return b.CreateAdd(
        acc, b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_pmaddw_d_512, {},
                               {b.CreateBitCast(a, halves),
                                b.CreateBitCast(x, halves)}));
  }
  if (t.getArch() == llvm::Triple::x86_64 && lanes == 8) {
    auto *halves = llvm::FixedVectorType::get(b.getInt16Ty(), 16);
    return b.CreateAdd(
        acc, b.CreateIntrinsic(llvm::Intrinsic::x86_avx2_pmadd_wd, {},
                               {b.CreateBitCast(a, halves),
                                b.CreateBitCast(x, halves)}));
  }
  if ((t.isARM() || t.isThumb()) && lanes == 1) {
    return b.CreateIntrinsic(llvm::Intrinsic::arm_smlad, {}, {a, x, acc});
  }
  // Portable form (gemmKernelShape does not choose it; kept so the
  // kernel is defined on every target).
  llvm::Value *sixteen = llvm::ConstantInt::get(acc->getType(), 16);
  auto lo = [&](llvm::Value *v) {
    return b.CreateAShr(b.CreateShl(v, sixteen), sixteen);
  };
  auto hi = [&](llvm::Value *v) { return b.CreateAShr(v, sixteen); };
  return b.CreateAdd(acc, b.CreateAdd(b.CreateMul(lo(a), lo(x)),
                                      b.CreateMul(hi(a), hi(x))));
}

// The microkernel |name| with |mr| rows and |nv| vectors per row, one per
// module:
//   void k(const float* a, idx lda, idx ka, idx rows, const float* b,
//          float* c, idx kc)
// c[r][0..nv*VW) += sum_k a[min(r, rows-1)*lda + k*ka] * b[k][..]
// for r < mr; rows of b are |ldb| and rows of c |ldc| elements apart.
// |prefetchRows| > 0 prefetches rows of b that many steps ahead (b streams
// from memory). With integer words (|elements| i16 pairs or i8 quads), a,
// b and c hold 32-bit words, k counts words, a is a packed block with the
// words of step k at a[k*mr .. k*mr+mr) (lda, ka and rows are not read:
// rows past the matrix are zeros) and each step is one word multiply-add.
llvm::Function *microkernelFor(llvm::Module &m, unsigned vw,
                               GemmElements elements,
                               const std::string &name, unsigned mr,
                               unsigned nv, int64_t ldb, int64_t ldc,
                               int64_t prefetchRows) {
  if (llvm::Function *f = m.getFunction(name)) {
    return f;
  }
  // Integer words: pairs of i16 or quads of i8.
  bool words = elements != GemmElements::kF32;
  llvm::LLVMContext &ctx = m.getContext();
  llvm::IRBuilder<> types(ctx); // for types and constants only
  llvm::Type *idxTy = m.getDataLayout().getIntPtrType(ctx);
  llvm::Type *ptr = types.getPtrTy();
  llvm::Type *f32 = words ? types.getInt32Ty() : types.getFloatTy();
  llvm::Type *vec =
      vw == 1 ? f32 : llvm::FixedVectorType::get(f32, vw);
  auto *fnTy = llvm::FunctionType::get(
      types.getVoidTy(), {ptr, idxTy, idxTy, idxTy, ptr, ptr, idxTy},
      false);
  llvm::Function *f = llvm::Function::Create(
      fnTy, llvm::GlobalValue::InternalLinkage, name, m);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->addFnAttr("no-builtins");
  // One out-of-line copy per shape: a call costs nothing next to kc steps
  // of MR x NR multiply-adds, and the regions stay small.
  f->addFnAttr(llvm::Attribute::NoInline);
  if (vw * 32 > 256) {
    // CPUs tuned to prefer 256-bit vectors would split the 512-bit
    // accumulators in two.
    std::string bits = std::to_string(vw * 32);
    f->addFnAttr("prefer-vector-width", bits);
    f->addFnAttr("min-legal-vector-width", bits);
  }
  for (unsigned i : {0u, 4u, 5u}) {
    f->addParamAttr(i, llvm::Attribute::NoAlias);
  }
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value *a = f->getArg(0), *lda = f->getArg(1), *ka = f->getArg(2),
              *rows = f->getArg(3), *panel = f->getArg(4),
              *c = f->getArg(5), *kc = f->getArg(6);
  std::vector<llvm::Value *> aRows;
  llvm::Value *last = b.CreateSub(rows, llvm::ConstantInt::get(idxTy, 1));
  for (unsigned r = 0; r < mr; ++r) {
    llvm::Value *rr = llvm::ConstantInt::get(idxTy, r);
    rr = b.CreateSelect(b.CreateICmpSLT(rr, rows), rr, last);
    aRows.push_back(b.CreateInBoundsGEP(f32, a, b.CreateMul(rr, lda)));
  }
  auto cSlot = [&](unsigned r, unsigned v) {
    return b.CreateInBoundsGEP(
        f32, c, llvm::ConstantInt::get(idxTy, int64_t(r) * ldc + v * vw));
  };
  std::vector<llvm::Value *> init;
  for (unsigned r = 0; r < mr; ++r) {
    for (unsigned v = 0; v < nv; ++v) {
      init.push_back(b.CreateAlignedLoad(vec, cSlot(r, v), llvm::Align(4)));
    }
  }
  llvm::BasicBlock *pre = b.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx, "k", f);
  llvm::BasicBlock *body = llvm::BasicBlock::Create(ctx, "k_body", f);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx, "k_exit", f);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode *k = b.CreatePHI(idxTy, 2);
  k->addIncoming(llvm::ConstantInt::get(idxTy, 0), pre);
  std::vector<llvm::PHINode *> acc;
  for (llvm::Value *v : init) {
    llvm::PHINode *phi = b.CreatePHI(vec, 2);
    phi->addIncoming(v, pre);
    acc.push_back(phi);
  }
  // Scalar pair kernels step pointers to the panel row and A's pair block
  // instead of indexing by k: from k * ldb the Arm backend's strength
  // reduction kept two extra bases and reloaded them from the stack every
  // iteration (DS-CNN's pointwise layers 1.24 -> 0.9 instructions per
  // multiply-add).
  bool stepPointers = words && vw == 1;
  llvm::PHINode *bPtr = nullptr, *aPtr = nullptr;
  if (stepPointers) {
    bPtr = b.CreatePHI(ptr, 2);
    bPtr->addIncoming(panel, pre);
    aPtr = b.CreatePHI(ptr, 2);
    aPtr->addIncoming(a, pre);
  }
  b.CreateCondBr(b.CreateICmpSLT(k, kc), body, exit);
  b.SetInsertPoint(body);
  std::vector<llvm::Value *> bv;
  llvm::Value *bRow =
      stepPointers
          ? static_cast<llvm::Value *>(bPtr)
          : b.CreateInBoundsGEP(
                f32, panel, b.CreateMul(k, llvm::ConstantInt::get(idxTy, ldb)));
  for (unsigned v = 0; v < nv; ++v) {
    bv.push_back(b.CreateAlignedLoad(
        vec,
        b.CreateInBoundsGEP(f32, bRow, llvm::ConstantInt::get(idxTy, v * vw)),
        llvm::Align(4)));
  }
  if (prefetchRows > 0) {
    // Rows of b prefetchRows steps ahead: they are a few KiB apart, too
    // far for the hardware's stride prefetcher (1.84 -> 1.74 ms on the
    // 512-channel 7x7 convolution). Prefetches never fault.
    llvm::Value *ahead = b.CreateGEP(
        f32, panel,
        b.CreateMul(
            b.CreateAdd(k, llvm::ConstantInt::get(idxTy, prefetchRows)),
            llvm::ConstantInt::get(idxTy, ldb)));
    for (unsigned v = 0; v < nv; ++v) {
      b.CreateIntrinsic(
          llvm::Intrinsic::prefetch, {b.getPtrTy()},
          {b.CreateGEP(f32, ahead, llvm::ConstantInt::get(idxTy, v * vw)),
           b.getInt32(0), b.getInt32(3), b.getInt32(1)});
    }
  }
  llvm::Value *aAt = b.CreateMul(k, ka);
  llvm::Value *aBlock =
      stepPointers ? static_cast<llvm::Value *>(aPtr)
      : words      ? b.CreateInBoundsGEP(
                    f32, a, b.CreateMul(k, llvm::ConstantInt::get(idxTy, mr)))
                   : nullptr;
  std::vector<llvm::Value *> next(acc.size());
  // A's words of one pair step are adjacent: two rows load as one 64-bit
  // value (LDRD on Arm; the backend split them into two LDRs).
  std::vector<llvm::Value *> aWords;
  if (stepPointers && mr % 2 == 0) {
    for (unsigned r = 0; r < mr; r += 2) {
      llvm::Value *both = b.CreateAlignedLoad(
          b.getInt64Ty(),
          b.CreateInBoundsGEP(f32, aBlock, llvm::ConstantInt::get(idxTy, r)),
          llvm::Align(4));
      aWords.push_back(b.CreateTrunc(both, f32));
      aWords.push_back(b.CreateTrunc(b.CreateLShr(both, 32), f32));
    }
  }
  for (unsigned r = 0; r < mr; ++r) {
    llvm::Value *s =
        !aWords.empty() ? aWords[r]
        : words         ? b.CreateLoad(f32, b.CreateInBoundsGEP(
                                        f32, aBlock,
                                        llvm::ConstantInt::get(idxTy, r)))
                : b.CreateLoad(f32, b.CreateInBoundsGEP(f32, aRows[r], aAt));
    llvm::Value *splat = vw == 1 ? s : b.CreateVectorSplat(vw, s);
    for (unsigned v = 0; v < nv; ++v) {
      next[r * nv + v] =
          words ? wordMultiplyAdd(b, m, elements, acc[r * nv + v], splat,
                                  bv[v])
                : b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec},
                                    {splat, bv[v], acc[r * nv + v]});
    }
  }
  llvm::Value *kNext =
      b.CreateAdd(k, llvm::ConstantInt::get(idxTy, 1), "", true, true);
  k->addIncoming(kNext, b.GetInsertBlock());
  if (stepPointers) {
    bPtr->addIncoming(
        b.CreateInBoundsGEP(f32, bPtr, llvm::ConstantInt::get(idxTy, ldb)),
        b.GetInsertBlock());
    aPtr->addIncoming(
        b.CreateInBoundsGEP(f32, aPtr, llvm::ConstantInt::get(idxTy, mr)),
        b.GetInsertBlock());
  }
  for (size_t i = 0; i < acc.size(); ++i) {
    acc[i]->addIncoming(next[i], b.GetInsertBlock());
  }
  llvm::BranchInst *latch = b.CreateBr(header);
  if (vw == 1) {
    // Scalar FPUs: four reduction steps per iteration so the row-pointer
    // increments and the branch are paid once per 4 x MR x NR products.
    // The Arm backend unrolls like this on its own; generic RV32 does not
    // (30 -> 25.5 instructions per step of 16 products). Integer pair
    // kernels take 16: on Cortex-M4 their loop counter lives on the stack
    // (ResNet-8 23.11 -> 21.84 M instructions; 8 gave 22.03 M).
    llvm::Metadata *count[] = {
        llvm::MDString::get(ctx, "llvm.loop.unroll.count"),
        llvm::ConstantAsMetadata::get(b.getInt32(words ? 16 : 4))};
    setLoopProperties(latch, {llvm::MDNode::get(ctx, count)});
  }
  b.SetInsertPoint(exit);
  for (unsigned r = 0; r < mr; ++r) {
    for (unsigned v = 0; v < nv; ++v) {
      b.CreateAlignedStore(acc[r * nv + v], cSlot(r, v), llvm::Align(4));
    }
  }
  b.CreateRetVoid();
  return f;
}

// How many reduction steps ahead the transposed kernels prefetch the rows
// of b (rows of the weights, which stream from memory).
constexpr int64_t kTransposedPrefetchRows = 16;

class PackedGemmEmitter : public TileEmitter {
public:
  PackedGemmEmitter(const dispatch::DispatchProgram &p,
                    const dispatch::DispatchRegion &r, llvm::IRBuilder<> &b,
                    llvm::Function *fn, const GemmPlan &plan,
                    const GemmKernelShape &shape, const TileHooks &hooks,
                    const GemmOptions &options)
      : TileEmitter(p, r, b, fn, hooks), plan_(plan), shape_(shape),
        options_(options) {
    nr_ = shape.vectorWidth * shape.nv;
  }

  // Static sizes; false when the scratch does not fit the budget.
  bool size() {
    if (shape_.elements == GemmElements::kI8Quads &&
        (!i8(root().inputs[plan_.a]) || !i8(root().inputs[plan_.b]) ||
         !canPrepackA())) {
      // Quads need bytes and A's row sums at compile time; the pair kernel
      // has the same blocking.
      shape_.elements = GemmElements::kI16Pairs;
    }
    words_ = shape_.elements != GemmElements::kF32;
    steps_ = shape_.elements == GemmElements::kI8Quads ? 4 : words_ ? 2 : 1;
    int64_t nMax = 1;
    for (unsigned d : plan_.nLoops) {
      nMax *= maxExtent(d);
    }
    k_ = 1;
    for (unsigned d : plan_.kLoops) {
      k_ *= root().bounds[d];
    }
    int64_t mMax = maxExtent(plan_.mLoop);
    if (nMax <= 0 || k_ <= 0 || mMax <= 0) {
      return false;
    }
    mPad_ = (mMax + shape_.mr - 1) / shape_.mr * shape_.mr;
    kc_ = std::min<int64_t>(shape_.kc, k_);
    // Rows of the panel: reduction steps, or words of steps_ of them
    // (chunks of shape_.kc steps start at whole words).
    kRows_ = (kc_ + steps_ - 1) / steps_;
    auto fits = [&](int64_t pixels) {
      int64_t pad = (pixels + nr_ - 1) / nr_ * nr_;
      int64_t aPanel = words_ ? shape_.mr * kRows_ : 0;
      return uint64_t(kRows_ * pad + mPad_ * pad + aPanel) * 4 <=
             shape_.maxScratch;
    };
    if (!fits(nMax)) {
      // Runs the tile in sub-tiles of the outermost N loop that is not 1
      // (targets with small stacks).
      for (unsigned d : plan_.nLoops) {
        int64_t e = maxExtent(d);
        if (e <= 1) {
          continue;
        }
        int64_t rest = nMax / e;
        for (int64_t s = e - 1; s >= 1 && subLoop_ < 0; --s) {
          if (fits(rest * s)) {
            subLoop_ = static_cast<int>(d);
            subSize_ = s;
            nMax = rest * s;
          }
        }
        break;
      }
      if (subLoop_ < 0) {
        return false;
      }
    }
    chunks_ = (nMax + nr_ - 1) / nr_;
    nPad_ = chunks_ * nr_;
    nvT_ = transposedVectors(mMax);
    nrT_ = shape_.vectorWidth * nvT_;
    if (!words_ && subLoop_ < 0 && columnPanelsOfA(mMax)) {
      // Pixel blocks of mrT_ rows with the least padding (ties: larger).
      int64_t best = std::numeric_limits<int64_t>::max();
      for (int64_t r = shape_.mr; r >= 2; --r) {
        int64_t waste = (nMax + r - 1) / r * r - nMax;
        if (waste < best) {
          best = waste;
          mrT_ = r;
        }
      }
      nRowsT_ = (nMax + mrT_ - 1) / mrT_ * mrT_;
      mPadT_ = (mMax + nrT_ - 1) / nrT_ * nrT_;
      // Half chunks: an NR x kc block of A (16 KiB for 32 channels, 24 for
      // 48) and the pixel columns the blocks broadcast from then share L1
      // (512-channel 3x3 7x7 convolution 1.95 -> 1.84 ms against chunks of
      // 256 with 32 channels; with 48, chunks of 96 or 64 were slower:
      // 1.80-1.85 ms against 1.71-1.74).
      int64_t kc = std::min<int64_t>(kTransposedKc, k_);
      bool direct = bReadsInPlace();
      if (uint64_t((direct ? 0 : kc * nPad_) + nRowsT_ * mPadT_) * 4 <=
          shape_.maxScratch) {
        transposed_ = true;
        directB_ = direct;
        kc_ = kc;
        kRows_ = kc_;
      }
    }
    return true;
  }

  absl::Status emit(llvm::ArrayRef<llvm::Value *> lo,
                    llvm::ArrayRef<llvm::Value *> hi) {
    llvm::Type *f32 = elementType();
    if (!directB_) {
      panel_ = b_.CreateAlloca(llvm::ArrayType::get(f32, kRows_ * nPad_),
                               nullptr, "panel");
      panel_->setAlignment(llvm::Align(64));
    }
    if (words_) {
      prepacked_ = prepackedA();
      if (!prepacked_) {
        aPanel_ = b_.CreateAlloca(
            llvm::ArrayType::get(f32, shape_.mr * kRows_), nullptr, "a_panel");
        aPanel_->setAlignment(llvm::Align(64));
      }
    }
    int64_t accSize = transposed_ ? nRowsT_ * mPadT_ : mPad_ * nPad_;
    accs_ = b_.CreateAlloca(llvm::ArrayType::get(f32, accSize), nullptr,
                            "acc_tile");
    accs_->setAlignment(llvm::Align(64));
    if (subLoop_ < 0) {
      return emitTile(lo, hi);
    }
    unsigned d = static_cast<unsigned>(subLoop_);
    llvm::Value *count = b_.CreateUDiv(
        b_.CreateAdd(b_.CreateSub(hi[d], lo[d]), idx(subSize_ - 1)),
        idx(subSize_));
    absl::Status status = absl::OkStatus();
    loop(idx(0), count, [&](llvm::Value *i) {
      std::vector<llvm::Value *> subLo(lo.begin(), lo.end());
      std::vector<llvm::Value *> subHi(hi.begin(), hi.end());
      subLo[d] = b_.CreateAdd(lo[d], b_.CreateMul(i, idx(subSize_)));
      llvm::Value *end = b_.CreateAdd(subLo[d], idx(subSize_));
      subHi[d] = b_.CreateSelect(b_.CreateICmpSLT(end, hi[d]), end, hi[d]);
      if (status.ok()) {
        status = emitTile(subLo, subHi);
      }
    });
    return status;
  }

  // One (sub-)tile with the N box [lo, hi).
  absl::Status emitTile(llvm::ArrayRef<llvm::Value *> lo,
                        llvm::ArrayRef<llvm::Value *> hi) {
    const StructuredOp &op = root();
    llvm::Type *f32 = elementType();
    size_t n = op.bounds.size();
    ivs_.assign(lo.begin(), lo.end());
    // Extents of the N box and the flattened index strides (innermost 1).
    std::vector<llvm::Value *> nExt, nStride(plan_.nLoops.size());
    for (unsigned d : plan_.nLoops) {
      nExt.push_back(b_.CreateSub(hi[d], lo[d]));
    }
    llvm::Value *nTile = idx(1);
    for (size_t i = plan_.nLoops.size(); i-- > 0;) {
      nStride[i] = nTile;
      nTile = b_.CreateMul(nTile, nExt[i]);
    }
    llvm::Value *mExt = b_.CreateSub(hi[plan_.mLoop], lo[plan_.mLoop]);
    llvm::Value *aBase = hooks_.base(op.inputs[plan_.a].tensor);
    int64_t aK = plan_.aStrides[plan_.kLoops.front()];
    for (unsigned d : plan_.kLoops) {
      if (root().bounds[d] > 1) {
        aK = plan_.aStrides[d]; // stride of the fastest non-unit loop
      }
    }
    (void)n;
    absl::Status status = absl::OkStatus();
    // Visits the N box in order; |body| gets the flattened index j.
    auto forBox = [&](llvm::function_ref<void(llvm::Value *)> body) {
      std::function<void(size_t, llvm::Value *)> rec = [&](size_t i,
                                                          llvm::Value *j) {
        if (i == plan_.nLoops.size()) {
          body(j);
          return;
        }
        unsigned d = plan_.nLoops[i];
        loop(lo[d], hi[d], [&](llvm::Value *iv) {
          ivs_[d] = iv;
          rec(i + 1, b_.CreateAdd(
                         j, b_.CreateMul(b_.CreateSub(iv, lo[d]), nStride[i])));
        });
        ivs_[d] = lo[d];
      };
      rec(0, idx(0));
    };
    nestBatch(0, lo, hi, [&] {
      // Accumulators start at the reduction's initial value.
      int64_t accSize = transposed_ ? nRowsT_ * mPadT_ : mPad_ * nPad_;
      llvm::Constant *init =
          words_ ? llvm::ConstantInt::get(f32, int64_t(*op.init))
                 : llvm::ConstantFP::get(f32, *op.init);
      loop(idx(0), idx(accSize), [&](llvm::Value *i) {
        b_.CreateStore(init, b_.CreateInBoundsGEP(f32, accs_, i));
      });
      if (!transposed_) {
        // Zero the columns past the tile in its last column chunk, once: the
        // packing below writes only columns [0, nTile). (The transposed
        // kernel broadcasts from columns below nTile only.)
        llvm::Value *end = b_.CreateMul(
            b_.CreateUDiv(b_.CreateAdd(nTile, idx(nr_ - 1)), idx(nr_)),
            idx(nr_));
        loop(idx(0), idx(kRows_), [&](llvm::Value *kk) {
          llvm::Value *row = b_.CreateMul(kk, idx(nPad_));
          loop(nTile, end, [&](llvm::Value *j) {
            b_.CreateStore(
                llvm::Constant::getNullValue(f32),
                b_.CreateInBoundsGEP(f32, panel_, b_.CreateAdd(row, j)));
          });
        });
      }
      int64_t kChunks = (k_ + kc_ - 1) / kc_;
      loop(idx(0), idx(kChunks), [&](llvm::Value *chunk) {
        llvm::Value *k0 = b_.CreateMul(chunk, idx(kc_));
        llvm::Value *kc = b_.CreateSub(idx(k_), k0);
        kc = b_.CreateSelect(b_.CreateICmpSLT(kc, idx(kc_)), kc, idx(kc_));
        // Pack B: panel[kk][j].
        auto pack = [&](llvm::Value *kk) {
          llvm::Value *rest = b_.CreateAdd(k0, kk);
          for (size_t i = plan_.kLoops.size(); i-- > 0;) {
            unsigned d = plan_.kLoops[i];
            int64_t bound = root().bounds[d];
            ivs_[d] = bound == 1 ? idx(0) : b_.CreateURem(rest, idx(bound));
            rest = bound == 1 ? rest : b_.CreateUDiv(rest, idx(bound));
          }
          llvm::Value *row = b_.CreateMul(kk, idx(nPad_));
          forRows(lo, hi, nStride, [&](llvm::Value *j) {
            packRow(lo[plan_.nLoops.back()], hi[plan_.nLoops.back()],
                    b_.CreateAdd(row, j));
          });
        };
        if (words_) {
          loop(idx(0), ceilDiv(kc, steps_), [&](llvm::Value *word) {
            packWords(k0, kc, word, lo, hi, nStride);
          });
        } else if (!directB_) {
          loop(idx(0), kc, pack);
        }
        for (unsigned d : plan_.kLoops) {
          ivs_[d] = idx(0);
        }
        // A offset of the chunk's first reduction step at the batch indices.
        llvm::Value *aOff = b_.CreateAdd(idx(plan_.aOffset),
                                         b_.CreateMul(k0, idx(aK)));
        for (unsigned d : plan_.batchLoops) {
          aOff = b_.CreateAdd(aOff,
                              b_.CreateMul(ivs_[d], idx(plan_.aStrides[d])));
        }
        int64_t lda = plan_.aStrides[plan_.mLoop];
        llvm::Value *mBlocks = b_.CreateUDiv(
            b_.CreateAdd(mExt, idx(shape_.mr - 1)), idx(shape_.mr));
        llvm::Value *nChunks = b_.CreateUDiv(
            b_.CreateAdd(nTile, idx(nr_ - 1)), idx(nr_));
        // One MR x NR block of C: A rows times column chunk |c|.
        auto block = [&](llvm::Value *c, llvm::Value *mb) {
          llvm::Value *bp =
              b_.CreateInBoundsGEP(f32, panel_, b_.CreateMul(c, idx(nr_)));
          llvm::Value *wide = nullptr;
          if (shape_.nv > 1) {
            // A last chunk no wider than one vector runs the narrow kernel.
            llvm::Value *width =
                b_.CreateSub(nTile, b_.CreateMul(c, idx(nr_)));
            wide = b_.CreateICmpSGT(width, idx(shape_.vectorWidth));
          }
          llvm::Value *m0 = b_.CreateMul(mb, idx(shape_.mr));
          llvm::Value *rows = b_.CreateSub(mExt, m0);
          rows = b_.CreateSelect(b_.CreateICmpSLT(rows, idx(shape_.mr)),
                                 rows, idx(shape_.mr));
          llvm::Value *aRow =
              words_ ? aPairs_
                     : b_.CreateInBoundsGEP(
                           f32, aBase,
                           b_.CreateAdd(
                               aOff,
                               b_.CreateMul(
                                   b_.CreateAdd(lo[plan_.mLoop], m0),
                                   idx(lda))));
          llvm::Value *cp = b_.CreateInBoundsGEP(
              f32, accs_,
              b_.CreateAdd(b_.CreateMul(m0, idx(nPad_)),
                           b_.CreateMul(c, idx(nr_))));
          llvm::SmallVector<llvm::Value *, 8> args = {
              aRow, idx(lda), idx(aK), rows, bp, cp,
              words_ ? ceilDiv(kc, steps_) : kc};
          if (!wide) {
            b_.CreateCall(kernel(shape_.nv), args);
            return;
          }
          ifElse(
              wide, "gemm_wide",
              [&] { b_.CreateCall(kernel(shape_.nv), args); }, "gemm_narrow",
              [&] { b_.CreateCall(kernel(1), args); }, "gemm_join");
        };
        if (transposed_) {
          emitTransposedChunk(aBase, aOff, k0, kc, lo, mExt, nTile);
          return;
        }
        if (words_) {
          // The block's rows of A are packed once, then meet every column
          // chunk (the panel streams from L2).
          loop(idx(0), mBlocks, [&](llvm::Value *mb) {
            if (prepacked_) {
              // Block (lo / MR + mb), word k0 / steps_ of the compile-time
              // copy.
              llvm::Value *blockIndex = b_.CreateAdd(
                  b_.CreateUDiv(lo[plan_.mLoop], idx(shape_.mr)), mb);
              aPairs_ = b_.CreateInBoundsGEP(
                  b_.getInt32Ty(), prepacked_,
                  b_.CreateMul(
                      b_.CreateAdd(b_.CreateMul(blockIndex, idx(kWords_)),
                                   b_.CreateUDiv(k0, idx(steps_))),
                      idx(shape_.mr)));
            } else {
              packA(aBase, aOff, aK, lda, lo[plan_.mLoop], mExt, mb, kc);
              aPairs_ = aPanel_;
            }
            loop(idx(0), nChunks, [&](llvm::Value *c) { block(c, mb); });
          });
        } else if (chunks_ <= kRowsOuterChunks) {
          // Few column chunks (7x7 maps): the rows of A, often too many to
          // stay in L2 (a 512-channel 3x3 layer has 9 MB of weights), are
          // read from memory once and reused from L1 for every chunk.
          loop(idx(0), mBlocks, [&](llvm::Value *mb) {
            loop(idx(0), nChunks, [&](llvm::Value *c) { block(c, mb); });
          });
        } else {
          // Column chunks outermost: one chunk of the panel (kc x NR) stays
          // in L1 while the rows of A stream past it.
          loop(idx(0), nChunks, [&](llvm::Value *c) {
            loop(idx(0), mBlocks, [&](llvm::Value *mb) { block(c, mb); });
          });
        }
      });
      // Epilogue: fused ops and store per element.
      loop(idx(0), mExt, [&](llvm::Value *m) {
        ivs_[plan_.mLoop] = b_.CreateAdd(lo[plan_.mLoop], m);
        llvm::Value *row = b_.CreateMul(m, idx(transposed_ ? 1 : nPad_));
        int64_t colStride = transposed_ ? mPadT_ : 1;
        // Quads: -128 * (sum of the row of A) undoes B's +128.
        llvm::Value *offset =
            rowOffsets_ ? b_.CreateLoad(f32, b_.CreateInBoundsGEP(
                                                 f32, rowOffsets_,
                                                 ivs_[plan_.mLoop]))
                        : nullptr;
        forBox([&](llvm::Value *j) {
          if (!status.ok()) {
            return;
          }
          llvm::Value *v = b_.CreateLoad(
              f32, b_.CreateInBoundsGEP(
                       f32, accs_,
                       b_.CreateAdd(row, b_.CreateMul(j, idx(colStride)))));
          if (offset) {
            v = b_.CreateAdd(v, offset);
          }
          status = hooks_.finish(v, ivs_);
        });
        ivs_[plan_.mLoop] = lo[plan_.mLoop];
      });
    });
    return status;
  }

private:
  // What the panels and accumulators hold: f32, or 32-bit words (pairs of
  // i16 or quads of bytes in the panels, i32 accumulators).
  llvm::Type *elementType() {
    return words_ ? b_.getInt32Ty() : b_.getFloatTy();
  }

  // Whether input |in| holds i8.
  bool i8(const structured::OperandAccess &in) const {
    return p_.program.tensors[in.tensor].type.elementType() ==
           graph::ElementType::I8;
  }

  // The integer type of input |in|'s elements (i8 or i16, see planGemm).
  llvm::Type *integerType(const structured::OperandAccess &in) {
    return p_.program.tensors[in.tensor].type.elementType() ==
                   graph::ElementType::I16
               ? b_.getInt16Ty()
               : b_.getInt8Ty();
  }

  // The word holding |x0| in its low half and |x1| (0 unless |hasSecond|)
  // in its high half, both sign-extended integers.
  llvm::Value *pairWord(llvm::Value *x0, llvm::Value *x1,
                        llvm::Value *hasSecond) {
    llvm::Type *i32 = b_.getInt32Ty();
    llvm::Value *low = b_.CreateAnd(b_.CreateSExt(x0, i32), 0xffff);
    llvm::Value *high = b_.CreateSExt(x1, i32);
    if (hasSecond) {
      high = b_.CreateSelect(hasSecond, high, llvm::ConstantInt::get(i32, 0));
    }
    return b_.CreateOr(low, b_.CreateShl(high, 16));
  }

  // Root loop indices of the reduction loops at flattened step |k|, in
  // kLoops order.
  std::vector<llvm::Value *> reductionIndices(llvm::Value *k) {
    std::vector<llvm::Value *> out(plan_.kLoops.size());
    llvm::Value *rest = k;
    for (size_t i = plan_.kLoops.size(); i-- > 0;) {
      int64_t bound = root().bounds[plan_.kLoops[i]];
      out[i] = bound == 1 ? idx(0) : b_.CreateURem(rest, idx(bound));
      rest = bound == 1 ? rest : b_.CreateUDiv(rest, idx(bound));
    }
    return out;
  }

  void setReduction(llvm::ArrayRef<llvm::Value *> k) {
    for (size_t i = 0; i < k.size(); ++i) {
      ivs_[plan_.kLoops[i]] = k[i];
    }
  }

  // The panel word of B's values |xs| at steps_ consecutive reduction
  // steps: pairs of sign-extended i16, the second 0 unless present
  // (|has|[1]), or quads of bytes x + 128 (what VPDPBUSD multiplies as
  // unsigned), where a step that is not present keeps its value: it is
  // past K, where the compile-time copy of A is zero.
  llvm::Value *panelWord(llvm::ArrayRef<llvm::Value *> xs,
                         llvm::ArrayRef<llvm::Value *> has) {
    if (steps_ == 2) {
      return pairWord(xs[0], xs[1], has[1]);
    }
    llvm::Type *i32 = b_.getInt32Ty();
    llvm::Value *word = nullptr;
    for (unsigned i = 0; i < steps_; ++i) {
      llvm::Value *byte = b_.CreateZExt(
          b_.CreateXor(b_.CreateTrunc(xs[i], b_.getInt8Ty()), 0x80), i32);
      byte = b_.CreateShl(byte, 8 * i);
      word = word ? b_.CreateOr(word, byte) : byte;
    }
    return word;
  }

  // Packs word |word| of the chunk's reduction steps (k0 + steps_ * word and
  // the next steps_ - 1, which read as 0 at or past |kc|) into panel row
  // |word|: one word per pixel, the first step's value in the low bits.
  void packWords(llvm::Value *k0, llvm::Value *kc, llvm::Value *word,
                 llvm::ArrayRef<llvm::Value *> lo,
                 llvm::ArrayRef<llvm::Value *> hi,
                 llvm::ArrayRef<llvm::Value *> nStride) {
    llvm::Value *first = b_.CreateMul(word, idx(steps_));
    // Steps past kc take the first step's indices, so their reads stay in
    // range (the value is dropped). Chunks are whole words but for the
    // last, which has k_ % steps_ steps in its last word: with none, every
    // step is present (no test in the packing loops).
    bool ragged = k_ % steps_ != 0;
    std::vector<std::vector<llvm::Value *>> steps;
    std::vector<llvm::Value *> has;
    for (unsigned i = 0; i < steps_; ++i) {
      llvm::Value *k = b_.CreateAdd(first, idx(i));
      llvm::Value *inside =
          i == 0 || !ragged ? nullptr : b_.CreateICmpSLT(k, kc);
      has.push_back(inside);
      steps.push_back(reductionIndices(b_.CreateAdd(
          k0, inside ? b_.CreateSelect(inside, k, first) : k)));
    }
    llvm::Value *row = b_.CreateMul(word, idx(nPad_));
    unsigned d = plan_.nLoops.back();
    forRows(lo, hi, nStride, [&](llvm::Value *j) {
      packWordRow(lo[d], hi[d], b_.CreateAdd(row, j), steps, has);
    });
    for (unsigned k : plan_.kLoops) {
      ivs_[k] = idx(0);
    }
  }

  // One row of B (the innermost N loop over [lo, hi)) for the reduction
  // steps at |steps| (present where |has|), as words from panel element
  // |at| on. The interior where every step reads inside B uses plain
  // loads; the border the emitter's checked ones (padding).
  void packWordRow(llvm::Value *lo, llvm::Value *hi, llvm::Value *at,
                   llvm::ArrayRef<std::vector<llvm::Value *>> steps,
                   llvm::ArrayRef<llvm::Value *> has) {
    const structured::OperandAccess &in = root().inputs[plan_.b];
    llvm::Type *i32 = b_.getInt32Ty();
    llvm::Type *elem = integerType(in);
    unsigned d = plan_.nLoops.back();
    std::vector<RowSplit> splits;
    llvm::Value *first = nullptr, *last = nullptr;
    for (const std::vector<llvm::Value *> &k : steps) {
      setReduction(k);
      splits.push_back(splitRow(in, d, lo, hi));
      first = first ? smax(first, splits.back().first) : splits.back().first;
      last = last ? smin(last, splits.back().last) : splits.back().last;
    }
    last = smax(last, first);
    auto store = [&](llvm::Value *iv, llvm::Value *word) {
      b_.CreateStore(word, b_.CreateInBoundsGEP(
                               i32, panel_,
                               b_.CreateAdd(at, b_.CreateSub(iv, lo))));
    };
    auto checked = [&](llvm::Value *iv) {
      ivs_[d] = iv;
      std::vector<llvm::Value *> xs;
      for (const std::vector<llvm::Value *> &k : steps) {
        setReduction(k);
        xs.push_back(hooks_.load(in, ivs_));
      }
      store(iv, panelWord(xs, has));
    };
    loop(lo, first, checked);
    loop(first, last, [&](llvm::Value *iv) {
      std::vector<llvm::Value *> xs;
      for (const RowSplit &split : splits) {
        xs.push_back(loadAt(in, split, iv, elem));
      }
      store(iv, panelWord(xs, has));
    });
    loop(last, hi, checked);
    ivs_[d] = lo;
  }

  // Whether A can be packed at compile time (prepackedA): on vector targets
  // (hosts: the copy's size does not matter there), a constant A whose
  // tiles start at whole blocks of MR rows and which does not move with
  // the batch loops.
  bool canPrepackA() {
    const structured::OperandAccess &a = root().inputs[plan_.a];
    const structured::TensorInfo &info = p_.program.tensors[a.tensor];
    int64_t bytes =
        info.type.elementType() == graph::ElementType::I16 ? 2 : 1;
    if (shape_.vectorWidth == 1 || !info.constant ||
        !info.type.hasStaticShape() ||
        int64_t(info.constant->bytes().size()) !=
            info.type.numElements() * bytes ||
        (maxExtent(plan_.mLoop) % shape_.mr != 0 &&
         maxExtent(plan_.mLoop) != root().bounds[plan_.mLoop])) {
      return false;
    }
    for (unsigned d : plan_.batchLoops) {
      if (plan_.aStrides[d] != 0) {
        return false;
      }
    }
    return true;
  }

  // A packed at compile time (see canPrepackA), once, instead of per pixel
  // tile: words [block][word][row] over all of K (chunks start at whole
  // words), rows past M and the steps past K zero. With quads, also sets
  // rowOffsets_ to a constant of -128 * (sum of the row) per row of A.
  // Returns the module constant, or nullptr.
  llvm::GlobalVariable *prepackedA() {
    if (!canPrepackA()) {
      return nullptr;
    }
    const structured::OperandAccess &a = root().inputs[plan_.a];
    const structured::TensorInfo &info = p_.program.tensors[a.tensor];
    int64_t mr = shape_.mr, m = root().bounds[plan_.mLoop];
    bool wide = info.type.elementType() == graph::ElementType::I16;
    int64_t bytes = wide ? 2 : 1;
    int64_t aK = plan_.aStrides[plan_.kLoops.front()];
    for (unsigned d : plan_.kLoops) {
      if (root().bounds[d] > 1) {
        aK = plan_.aStrides[d];
      }
    }
    int64_t lda = plan_.aStrides[plan_.mLoop];
    kWords_ = (k_ + steps_ - 1) / steps_;
    std::string name = "constant_" + info.name +
                       (steps_ == 4 ? "_quads" : "_pairs") +
                       std::to_string(mr) + "_" + std::to_string(lda) + "_" +
                       std::to_string(aK) + "_" +
                       std::to_string(plan_.aOffset);
    auto global = [&](llvm::Constant *init, const std::string &symbol) {
      auto *g = new llvm::GlobalVariable(m_, init->getType(), true,
                                         llvm::GlobalValue::InternalLinkage,
                                         init, symbol);
      g->setAlignment(llvm::Align(64));
      return g;
    };
    if (steps_ == 4) {
      rowOffsets_ = m_.getNamedGlobal(name + "_offsets");
    }
    if (llvm::GlobalVariable *g = m_.getNamedGlobal(name)) {
      return g;
    }
    llvm::ArrayRef<uint8_t> data = info.constant->bytes();
    auto element = [&](int64_t row, int64_t k) -> int32_t {
      if (row >= m || k >= k_) {
        return 0;
      }
      int64_t at = (plan_.aOffset + row * lda + k * aK) * bytes;
      if (wide) {
        int16_t v;
        std::memcpy(&v, data.data() + at, 2);
        return v;
      }
      return static_cast<int8_t>(data[at]);
    };
    int64_t blocks = (m + mr - 1) / mr;
    std::vector<uint32_t> words;
    words.reserve(blocks * kWords_ * mr);
    for (int64_t blk = 0; blk < blocks; ++blk) {
      for (int64_t w = 0; w < kWords_; ++w) {
        for (int64_t r = 0; r < mr; ++r) {
          int64_t row = blk * mr + r;
          uint32_t word = 0;
          for (int64_t i = 0; i < steps_; ++i) {
            uint32_t bits = steps_ == 4 ? 0xffu : 0xffffu;
            word |= (uint32_t(element(row, w * steps_ + i)) & bits)
                    << (32 / steps_ * i);
          }
          words.push_back(word);
        }
      }
    }
    if (steps_ == 4) {
      // Wrapping, like the accumulation it corrects.
      std::vector<uint32_t> offsets(m);
      for (int64_t row = 0; row < m; ++row) {
        uint32_t sum = 0;
        for (int64_t k = 0; k < k_; ++k) {
          sum += uint32_t(element(row, k));
        }
        offsets[row] = 0u - sum * 128u;
      }
      rowOffsets_ =
          global(llvm::ConstantDataArray::get(ctx_, offsets), name + "_offsets");
    }
    return global(llvm::ConstantDataArray::get(ctx_, words), name);
  }

  // Packs the chunk's |kc| reduction steps of rows |mb| * MR .. + MR of the
  // tile's |mExt| rows of A (row m at aBase + aOff + (mLo + m) * lda, steps
  // aK elements apart) into aPanel_ as pairs: per pair p, the MR rows' words
  // side by side (what the kernel loads per step). Rows past mExt and the
  // step past kc are zeros.
  void packA(llvm::Value *aBase, llvm::Value *aOff, int64_t aK, int64_t lda,
             llvm::Value *mLo, llvm::Value *mExt, llvm::Value *mb,
             llvm::Value *kc) {
    const structured::OperandAccess &a = root().inputs[plan_.a];
    llvm::Type *i32 = b_.getInt32Ty();
    llvm::Type *elem = integerType(a);
    int64_t mr = shape_.mr;
    llvm::Value *base = b_.CreateInBoundsGEP(
        elem, aBase, b_.CreateAdd(aOff, b_.CreateMul(mLo, idx(lda))));
    llvm::Value *pairs = ceilDiv(kc, 2);
    llvm::Value *m0 = b_.CreateMul(mb, idx(mr));
    loop(idx(0), idx(mr), [&](llvm::Value *r) {
      llvm::Value *m = b_.CreateAdd(m0, r);
      llvm::Value *inside = b_.CreateICmpSLT(m, mExt);
      llvm::Value *row = b_.CreateInBoundsGEP(
          elem, base,
          b_.CreateMul(b_.CreateSelect(inside, m, idx(0)), idx(lda)));
      llvm::Value *slot = r;
      loop(idx(0), pairs, [&](llvm::Value *pr) {
        llvm::Value *even = b_.CreateMul(pr, idx(2));
        llvm::Value *odd = b_.CreateAdd(even, idx(1));
        llvm::Value *hasOdd = b_.CreateICmpSLT(odd, kc);
        llvm::Value *x0 = b_.CreateLoad(
            elem, b_.CreateInBoundsGEP(elem, row, b_.CreateMul(even, idx(aK))));
        llvm::Value *x1 = b_.CreateLoad(
            elem,
            b_.CreateInBoundsGEP(
                elem, row,
                b_.CreateMul(b_.CreateSelect(hasOdd, odd, even), idx(aK))));
        llvm::Value *word =
            b_.CreateSelect(inside, pairWord(x0, x1, hasOdd),
                            llvm::ConstantInt::get(i32, 0));
        b_.CreateStore(word, b_.CreateInBoundsGEP(
                                 i32, aPanel_,
                                 b_.CreateAdd(slot, b_.CreateMul(pr, idx(mr)))));
      });
    });
  }

  // Visits the N box without its innermost loop; |body| gets the flattened
  // index of the row's first element.
  void forRows(llvm::ArrayRef<llvm::Value *> lo,
               llvm::ArrayRef<llvm::Value *> hi,
               llvm::ArrayRef<llvm::Value *> nStride,
               llvm::function_ref<void(llvm::Value *)> body) {
    std::function<void(size_t, llvm::Value *)> rec = [&](size_t i,
                                                        llvm::Value *j) {
      if (i + 1 == plan_.nLoops.size()) {
        body(j);
        return;
      }
      unsigned d = plan_.nLoops[i];
      loop(lo[d], hi[d], [&](llvm::Value *iv) {
        ivs_[d] = iv;
        rec(i + 1,
            b_.CreateAdd(j, b_.CreateMul(b_.CreateSub(iv, lo[d]), nStride[i])));
      });
      ivs_[d] = lo[d];
    };
    rec(0, idx(0));
  }

  // Packs one row of B (the innermost N loop over [lo, hi)) into the panel
  // from element |at| on. Reads that can fall outside B (padding) are split
  // into a border part, read through the emitter's checked load, and an
  // interior range computed once per row, read with plain strided loads.
  void packRow(llvm::Value *lo, llvm::Value *hi, llvm::Value *at) {
    const structured::OperandAccess &in = root().inputs[plan_.b];
    llvm::Type *f32 = b_.getFloatTy();
    unsigned d = plan_.nLoops.back();
    RowSplit split = splitRow(in, d, lo, hi);
    auto slot = [&](llvm::Value *iv) {
      return b_.CreateInBoundsGEP(f32, panel_,
                                  b_.CreateAdd(at, b_.CreateSub(iv, lo)));
    };
    auto checked = [&](llvm::Value *iv) {
      ivs_[d] = iv;
      b_.CreateStore(hooks_.load(in, ivs_), slot(iv));
    };
    loop(lo, split.first, checked);
    llvm::Value *rest = packStride2Interior(in, split, slot);
    loop(
        rest, split.last,
        [&](llvm::Value *iv) { b_.CreateStore(loadAt(in, split, iv), slot(iv)); },
        LoopHint::kNoInterleave);
    loop(split.last, hi, checked);
    ivs_[d] = lo;
  }

  // Stride-2 interiors (stride-2 convolutions) left to the loop vectorizer
  // become masked gathers, which dominated conv1's packing. Instead each
  // vector of VW panel elements is one contiguous load of 2*VW elements of B
  // and a shuffle keeping the even ones. A vector starting at iv reads up to
  // element 2*(iv + VW) - 1, one past the last element the row needs, so
  // only vectors with iv + VW < last take this path and the remainder
  // (fewer than VW + 1 elements) stays with the generic interior loop.
  // Returns where that remainder starts; other strides and scalar targets
  // return split.first.
  llvm::Value *
  packStride2Interior(const structured::OperandAccess &in,
                      const RowSplit &split,
                      llvm::function_ref<llvm::Value *(llvm::Value *)> slot) {
    unsigned vw = shape_.vectorWidth;
    if (vw == 1 || split.step != 2) {
      return split.first;
    }
    llvm::Type *f32 = b_.getFloatTy();
    llvm::Value *span =
        b_.CreateSub(b_.CreateSub(split.last, split.first), idx(1));
    span = b_.CreateSelect(b_.CreateICmpSGT(span, idx(0)), span, idx(0));
    llvm::Value *count = b_.CreateUDiv(span, idx(vw));
    llvm::SmallVector<int, 32> even;
    for (unsigned i = 0; i < vw; ++i) {
      even.push_back(2 * i);
    }
    auto *wide = llvm::FixedVectorType::get(f32, 2 * vw);
    loop(idx(0), count, [&](llvm::Value *v) {
      llvm::Value *iv =
          b_.CreateAdd(split.first, b_.CreateMul(v, idx(vw), "", true, true),
                       "", true, true);
      llvm::Value *off =
          b_.CreateAdd(split.base, b_.CreateMul(iv, idx(2), "", false, true),
                       "", false, true);
      llvm::Value *src = b_.CreateInBoundsGEP(f32, hooks_.base(in.tensor), off);
      llvm::Value *pair = b_.CreateAlignedLoad(wide, src, llvm::Align(4));
      b_.CreateAlignedStore(b_.CreateShuffleVector(pair, even), slot(iv),
                            llvm::Align(4));
    });
    return b_.CreateAdd(split.first, b_.CreateMul(count, idx(vw)));
  }

  void nestBatch(size_t i, llvm::ArrayRef<llvm::Value *> lo,
                 llvm::ArrayRef<llvm::Value *> hi,
                 llvm::function_ref<void()> inner) {
    if (i == plan_.batchLoops.size()) {
      inner();
      return;
    }
    unsigned d = plan_.batchLoops[i];
    loop(lo[d], hi[d], [&](llvm::Value *iv) {
      ivs_[d] = iv;
      nestBatch(i + 1, lo, hi, inner);
    });
    ivs_[d] = lo[d];
  }

  // The microkernel with |nv| vectors per row over the panel of B, one per
  // module and shape (see kernelFor).
  llvm::Function *kernel(unsigned nv) {
    return packedGemmKernel(m_, shape_, nv, nPad_);
  }

  // Vectors of output channels per transposed kernel block for M tiles of
  // up to |mTile| channels. AVX-512 has registers for 7 pixels x 3 vectors
  // (21 accumulators, 3 rows of A, a broadcast): each pixel broadcast then
  // feeds 3 multiply-adds instead of 2 and the pixels are read once per 48
  // channels instead of 32 (512-channel 3x3 7x7 convolution 1.78-1.87 ->
  // 1.71-1.74 ms, 1x1 160 -> 960 on 7x7 121-125 -> 118-123 us). It is
  // taken when it needs fewer channel panels than 32-wide ones: 64
  // channels as 48 + 16 ran 5% slower than as 2 x 32 (the one-vector
  // kernel broadcasts 7 pixels per 7 multiply-adds).
  unsigned transposedVectors(int64_t mTile) const {
    if (shape_.vectorWidth != 16) {
      return shape_.nv;
    }
    if (options_.transposedVectors >= 1 && options_.transposedVectors <= 3) {
      return options_.transposedVectors;
    }
    auto panels = [&](int64_t nr) { return (mTile + nr - 1) / nr; };
    unsigned wide = shape_.nv + 1;
    return panels(wide * shape_.vectorWidth) <
                   panels(shape_.nv * shape_.vectorWidth)
               ? wide
               : shape_.nv;
  }

  // Whether A can be read as column panels: its M axis is innermost with
  // unit stride and the panels of every M tile (whole NR-wide panels, or
  // one vector for a last panel no wider than that) stay inside the rows of
  // A, which structured::relayoutGemmOperands pads. Only for vector
  // targets: a scalar kernel has no padded vector lanes to save.
  bool columnPanelsOfA(int64_t mTile) const {
    if (shape_.vectorWidth == 1 || !options_.columnPanels ||
        plan_.aStrides[plan_.mLoop] != 1) {
      return false;
    }
    const structured::OperandAccess &a = root().inputs[plan_.a];
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[a.tensor].type.dims();
    if (dims.empty() || a.map.results.back().asDim() != plan_.mLoop) {
      return false;
    }
    for (size_t i = 0; i + 1 < a.map.results.size(); ++i) {
      const structured::AffineExpr &e = a.map.results[i];
      if (plan_.mLoop < e.coeffs.size() && e.coeffs[plan_.mLoop] != 0) {
        return false;
      }
    }
    int64_t m = root().bounds[plan_.mLoop];
    int64_t vw = shape_.vectorWidth;
    for (int64_t m0 = 0; m0 < m; m0 += mTile) {
      int64_t ext = std::min(mTile, m - m0);
      int64_t full = ext / nrT_ * nrT_, rest = ext - full;
      // A last panel runs the kernel with just enough vectors.
      int64_t last = (rest + vw - 1) / vw * vw;
      if (m0 + full + last > dims.back()) {
        return false;
      }
    }
    return true;
  }

  // Element strides of input |in| per root loop.
  std::vector<int64_t> strides(const structured::OperandAccess &in) const {
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[in.tensor].type.dims();
    std::vector<int64_t> out(root().bounds.size(), 0);
    int64_t stride = 1;
    for (size_t k = dims.size(); k-- > 0;) {
      const structured::AffineExpr &e = in.map.results[k];
      for (size_t d = 0; d < out.size() && d < e.coeffs.size(); ++d) {
        out[d] += e.coeffs[d] * stride;
      }
      stride *= dims[k];
    }
    return out;
  }

  // Whether B, in a tile holding all of N, is already the panel: its
  // flattened N index j and reduction step k address element
  // base + k * bK_ + j (a 1x1 convolution with stride 1 in NCHW), so the
  // transposed kernel broadcasts from it in place.
  bool bReadsInPlace() {
    const structured::OperandAccess &in = root().inputs[plan_.b];
    if (in.padValue || in.indirect ||
        in.map.results.size() !=
            p_.program.tensors[in.tensor].type.dims().size()) {
      return false;
    }
    std::vector<int64_t> s = strides(in);
    int64_t flat = 1;
    for (size_t i = plan_.nLoops.size(); i-- > 0;) {
      unsigned d = plan_.nLoops[i];
      if (maxExtent(d) != root().bounds[d] ||
          (root().bounds[d] > 1 && s[d] != flat)) {
        return false;
      }
      flat *= root().bounds[d];
    }
    return bReductionStride(s);
  }

  // Whether B's reduction loops flatten in A's order (kLoops) with B's
  // strides |s|; sets bK_ to the stride of one flattened step.
  bool bReductionStride(const std::vector<int64_t> &s) {
    int64_t next = -1;
    bK_ = 0;
    for (size_t i = plan_.kLoops.size(); i-- > 0;) {
      unsigned d = plan_.kLoops[i];
      if (root().bounds[d] == 1) {
        continue;
      }
      if (next < 0) {
        bK_ = s[d];
        if (bK_ <= 0) {
          return false;
        }
      } else if (s[d] != next) {
        return false;
      }
      next = s[d] * root().bounds[d];
    }
    return bK_ > 0;
  }

  // One reduction chunk [k0, k0 + kc) of a transposed tile: C^T[j][m] +=
  // B^T[j][k] * A^T[k][m], output channels along the vectors. The kernel
  // broadcasts mrT_ pixels from the panel (or from B itself) and loads NR
  // channels of a row of A; each NR x kc block of A stays in L1 while the
  // pixel blocks pass over it, and is read from memory once per tile.
  void emitTransposedChunk(llvm::Value *aBase, llvm::Value *aOff,
                           llvm::Value *k0, llvm::Value *kc,
                           llvm::ArrayRef<llvm::Value *> lo,
                           llvm::Value *mExt, llvm::Value *nTile) {
    llvm::Type *f32 = b_.getFloatTy();
    int64_t aK = plan_.aStrides[plan_.kLoops.back()];
    for (unsigned d : plan_.kLoops) {
      if (root().bounds[d] > 1) {
        aK = plan_.aStrides[d];
      }
    }
    llvm::Value *xBase, *xStep;
    if (directB_) {
      const structured::OperandAccess &in = root().inputs[plan_.b];
      for (unsigned d : plan_.nLoops) {
        ivs_[d] = lo[d];
      }
      llvm::Value *off = linearOffset(in);
      xBase = b_.CreateInBoundsGEP(
          f32, hooks_.base(in.tensor),
          b_.CreateAdd(off, b_.CreateMul(k0, idx(bK_))));
      xStep = idx(bK_);
    } else {
      xBase = panel_;
      xStep = idx(nPad_);
    }
    unsigned vw = shape_.vectorWidth;
    llvm::Value *panels =
        b_.CreateUDiv(b_.CreateAdd(mExt, idx(nrT_ - 1)), idx(nrT_));
    llvm::Value *blocks =
        b_.CreateUDiv(b_.CreateAdd(nTile, idx(mrT_ - 1)), idx(mrT_));
    llvm::Value *aRow0 = b_.CreateInBoundsGEP(
        f32, aBase, b_.CreateAdd(aOff, lo[plan_.mLoop]));
    loop(idx(0), panels, [&](llvm::Value *c) {
      llvm::Value *cols = b_.CreateSub(mExt, b_.CreateMul(c, idx(nrT_)));
      llvm::Value *w =
          b_.CreateInBoundsGEP(f32, aRow0, b_.CreateMul(c, idx(nrT_)));
      auto blockAt = [&](llvm::Value *pb) {
        llvm::Value *p0 = b_.CreateMul(pb, idx(mrT_));
        llvm::Value *rows = b_.CreateSub(nTile, p0);
        rows = b_.CreateSelect(b_.CreateICmpSLT(rows, idx(mrT_)), rows,
                               idx(mrT_));
        llvm::Value *x = b_.CreateInBoundsGEP(f32, xBase, p0);
        llvm::Value *cp = b_.CreateInBoundsGEP(
            f32, accs_,
            b_.CreateAdd(b_.CreateMul(p0, idx(mPadT_)),
                         b_.CreateMul(c, idx(nrT_))));
        llvm::SmallVector<llvm::Value *, 8> args = {x, idx(1), xStep, rows,
                                                    w, cp, kc};
        auto call = [&](unsigned nv) {
          b_.CreateCall(
              packedGemmTransposedKernel(m_, shape_, mrT_, nv, aK, mPadT_),
              args);
        };
        if (nvT_ == 1) {
          call(1);
          return;
        }
        // A last panel narrower than nrT_ runs the kernel with as many
        // vectors as its channels need.
        llvm::BasicBlock *join =
            llvm::BasicBlock::Create(ctx_, "gemmt_join", fn_);
        for (unsigned nv = 1; nv < nvT_; ++nv) {
          llvm::BasicBlock *thin =
              llvm::BasicBlock::Create(ctx_, "gemmt_narrow", fn_);
          llvm::BasicBlock *next =
              llvm::BasicBlock::Create(ctx_, "gemmt_wide", fn_);
          b_.CreateCondBr(b_.CreateICmpSLE(cols, idx(nv * vw)), thin, next);
          b_.SetInsertPoint(thin);
          call(nv);
          b_.CreateBr(join);
          b_.SetInsertPoint(next);
        }
        call(nvT_);
        b_.CreateBr(join);
        b_.SetInsertPoint(join);
      };
      loop(idx(0), blocks, blockAt);
    });
  }

  // Linear element offset of input |in| at the loop indices ivs_.
  llvm::Value *linearOffset(const structured::OperandAccess &in) {
    llvm::ArrayRef<int64_t> dims = p_.program.tensors[in.tensor].type.dims();
    llvm::Value *off = idx(0);
    int64_t stride = 1;
    for (size_t k = dims.size(); k-- > 0;) {
      off = b_.CreateAdd(off,
                         b_.CreateMul(evalExpr(in.map.results[k]), idx(stride)));
      stride *= dims[k];
    }
    return off;
  }

  const GemmPlan &plan_;
  GemmKernelShape shape_;
  const GemmOptions &options_;
  // Tiles with at most this many column chunks loop over rows of A
  // outermost.
  static constexpr int64_t kRowsOuterChunks = 2;
  // Reduction chunk of transposed tiles (their kernels prefetch the rows of
  // A kTransposedPrefetchRows steps ahead).
  static constexpr int64_t kTransposedKc = 128;
  int64_t nr_ = 0, k_ = 0, kc_ = 0, chunks_ = 0, nPad_ = 0, mPad_ = 0;
  // Integer words (i16 pairs or i8 quads): A is packed too, per chunk and
  // block of MR rows or at compile time; the panels have kRows_ rows
  // (words of steps_ steps; kc_ rows for f32).
  bool words_ = false;
  // Reduction steps per panel word: 1 (f32), 2 (i16 pairs), 4 (i8 quads).
  int64_t steps_ = 1;
  // Quads: -128 * (sum of the row of A) per row, added in the epilogue.
  llvm::GlobalVariable *rowOffsets_ = nullptr;
  int64_t kRows_ = 0;
  llvm::AllocaInst *aPanel_ = nullptr;
  // A packed at compile time (prepackedA()), its words per block row, and
  // the current block's words (aPanel_ or a block of prepacked_).
  llvm::GlobalVariable *prepacked_ = nullptr;
  int64_t kWords_ = 0;
  llvm::Value *aPairs_ = nullptr;
  // Transposed tiles (columnPanelsOfA): pixel blocks of mrT_, nRowsT_ rows
  // of mPadT_ accumulators; directB_ when B is read in place with
  // reduction stride bK_.
  bool transposed_ = false, directB_ = false;
  int64_t mrT_ = 0, nRowsT_ = 0, mPadT_ = 0, bK_ = 0;
  // Vectors of output channels per kernel block of transposed tiles, and
  // the channels they hold.
  unsigned nvT_ = 0;
  int64_t nrT_ = 0;
  // N loop run in sub-tiles of subSize_ when the tile's scratch is too big.
  int subLoop_ = -1;
  int64_t subSize_ = 0;
  llvm::AllocaInst *panel_ = nullptr;
  llvm::AllocaInst *accs_ = nullptr;
};

} // namespace

llvm::Function *packedGemmKernel(llvm::Module &module,
                                const GemmKernelShape &shape, unsigned nv,
                                int64_t ld) {
  const char *kind = shape.elements == GemmElements::kI8Quads    ? "i8x4_"
                     : shape.elements == GemmElements::kI16Pairs ? "i16x2_"
                                                                 : "";
  std::string name = "osprey_gemm_" + std::string(kind) +
                     std::to_string(shape.mr) + "x" +
                     std::to_string(nv * shape.vectorWidth) + "_ld" +
                     std::to_string(ld) + "_" +
                     std::to_string(shape.vectorWidth * shape.nv);
  return microkernelFor(module, shape.vectorWidth, shape.elements, name,
                        shape.mr, nv, ld, ld, 0);
}

llvm::Function *packedGemmTransposedKernel(llvm::Module &module,
                                          const GemmKernelShape &shape,
                                          unsigned mr, unsigned nv,
                                          int64_t ldb, int64_t ldc) {
  std::string name = "osprey_gemmt_" + std::to_string(mr) + "x" +
                     std::to_string(nv * shape.vectorWidth) + "_ld" +
                     std::to_string(ldb) + "_" + std::to_string(ldc);
  return microkernelFor(module, shape.vectorWidth, GemmElements::kF32, name,
                        mr, nv, ldb, ldc, kTransposedPrefetchRows);
}

absl::StatusOr<bool> emitPackedGemm(const dispatch::DispatchProgram &program,
                                    const dispatch::DispatchRegion &region,
                                    llvm::IRBuilder<> &builder,
                                    llvm::Function *fn,
                                    llvm::ArrayRef<llvm::Value *> lo,
                                    llvm::ArrayRef<llvm::Value *> hi,
                                    const TileHooks &hooks,
                                    const CodegenOptions &options) {
  const StructuredOp &root = program.program.ops[region.ops[0]];
  std::optional<GemmPlan> plan = structured::planGemm(program.program, root);
  if (!plan) {
    return false;
  }
  llvm::StringRef features = targetFeatures(*fn->getParent());
  // planGemm's roots are f32 or widen i8/i16 operands into i32; the
  // emitter falls back from quads to pairs where quads do not apply.
  llvm::StringRef triple = fn->getParent()->getTargetTriple();
  std::optional<GemmKernelShape> shape =
      allF32(program, root)
          ? gemmKernelShape(triple, features, GemmElements::kF32)
          : gemmKernelShape(triple, features, GemmElements::kI8Quads);
  if (!shape && !allF32(program, root)) {
    shape = gemmKernelShape(triple, features, GemmElements::kI16Pairs);
  }
  if (!shape) {
    return false;
  }
  if (options.gemm.maxScratch != 0) {
    shape->maxScratch = options.gemm.maxScratch;
  }
  PackedGemmEmitter emitter(program, region, builder, fn, *plan, *shape,
                            hooks, options.gemm);
  if (!emitter.size()) {
    return false;
  }
  absl::Status status = emitter.emit(lo, hi);
  if (!status.ok()) {
    return status;
  }
  return true;
}

} // namespace osprey::compiler::llvm_cpu
