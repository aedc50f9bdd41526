// Integer matrix-vector products with SMLAD or VPDPBUSD (see matvec.h).
//
// Arm: instructions per four reduction steps of a block of R rows: two
// loads of x's pair words (shared by the rows), per row one load, two
// SXTB16 and two SMLAD, and the loop's decrement and branch: 5R + 4, 1.5
// per multiply-add with R = 4 (the generic loops took 4.7).
//
// AVX-512 VNNI: 64 reduction steps of R rows per x vector load, R weight
// loads and R VPDPBUSDs; each row's 16 lanes add up once at the end.
#include "compiler/targets/llvm_cpu/matvec.h"

#include "compiler/structured/fusion.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"
#include "llvm/IR/IntrinsicsARM.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/TargetParser/Triple.h"

namespace osprey::compiler::llvm_cpu {
namespace {

using structured::MatVecPlan;

// Outputs per block: R accumulators, x's two pair words, a weight word and
// its two halves, and the pointers fit the 13 allocatable registers (with 6
// rows the FC autoencoder took 0.79 M instructions against 0.61 M, with 2
// rows 0.67 M).
constexpr int64_t kMatVecRows = 4;

// Bytes of k per VPDPBUSD (one zmm).
constexpr int64_t kVnniBytes = 64;

bool hasVnni(llvm::StringRef triple, llvm::StringRef features) {
  return llvm::Triple(triple).getArch() == llvm::Triple::x86_64 &&
         features.contains("+avx512vnni") && features.contains("+avx512bw") &&
         !features.contains("-evex512");
}

class MatVecEmitter : public TileEmitter {
public:
  MatVecEmitter(const dispatch::DispatchProgram &p,
                const dispatch::DispatchRegion &r, llvm::IRBuilder<> &b,
                llvm::Function *fn, const TileHooks &hooks,
                const MatVecPlan &plan, bool vnni)
      : TileEmitter(p, r, b, fn, hooks), plan_(plan), vnni_(vnni) {
    ivs_.assign(root().bounds.size(), nullptr);
    for (unsigned d : plan_.kLoops) {
      k_ *= root().bounds[d];
    }
    kPad_ = p.program.tensors[root().inputs[plan_.w].tensor].type.dims()[1];
  }

  absl::Status emit(llvm::ArrayRef<llvm::Value *> lo,
                    llvm::ArrayRef<llvm::Value *> hi) {
    i32_ = b_.getInt32Ty();
    if (vnni_) {
      rowOffsets_ = rowOffsets();
      if (!rowOffsets_) {
        return absl::InternalError(
            "matrix-vector product without constant rows of weights");
      }
      int64_t bytes = (kPad_ + kVnniBytes - 1) / kVnniBytes * kVnniBytes;
      xPairs_ = b_.CreateAlloca(llvm::ArrayType::get(b_.getInt8Ty(), bytes),
                                nullptr, "x_bytes");
      xPairs_->setAlignment(llvm::Align(64));
    } else {
      xPairs_ = b_.CreateAlloca(llvm::ArrayType::get(i32_, kPad_ / 2),
                                nullptr, "x_pairs");
      xPairs_->setAlignment(llvm::Align(8));
    }
    for (size_t d = 0; d < ivs_.size(); ++d) {
      ivs_[d] = lo[d];
    }
    for (unsigned d : plan_.kLoops) {
      ivs_[d] = idx(0);
    }
    absl::Status status = absl::OkStatus();
    nest(plan_.mLoops, 0, lo, hi, [&] {
      if (vnni_) {
        biasX();
      } else {
        expandX();
      }
      unsigned n = plan_.nLoop;
      llvm::Value *count = b_.CreateSub(hi[n], lo[n]);
      llvm::Value *blocksEnd = b_.CreateAdd(
          lo[n], b_.CreateMul(b_.CreateUDiv(count, idx(kMatVecRows)),
                              idx(kMatVecRows)));
      auto rows = [&](llvm::Value *n0, int64_t count) {
        if (vnni_) {
          vnniBlock(n0, count, status);
        } else {
          block(n0, count, status);
        }
      };
      stepLoop(lo[n], blocksEnd, kMatVecRows, LoopHint::kNoVectorize,
               [&](llvm::Value *n0) { rows(n0, kMatVecRows); });
      loop(blocksEnd, hi[n], [&](llvm::Value *n0) { rows(n0, 1); },
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
    llvm::Value *x = xBase();
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

  // The start of x's vector at the current mLoops indices.
  llvm::Value *xBase() {
    llvm::Value *offset = idx(plan_.xOffset);
    for (unsigned d : plan_.mLoops) {
      offset = b_.CreateAdd(offset, b_.CreateMul(ivs_[d],
                                                 idx(plan_.xStrides[d])));
    }
    return b_.CreateInBoundsGEP(
        b_.getInt8Ty(), hooks_.base(root().inputs[plan_.x].tensor), offset);
  }

  // VNNI: writes x's steps as unsigned bytes x + 128 (x XOR 0x80), zero
  // past K, so a zero byte meets every weight read past K.
  void biasX() {
    llvm::Value *x = xBase();
    llvm::Type *i8 = b_.getInt8Ty();
    int64_t bytes = (kPad_ + kVnniBytes - 1) / kVnniBytes * kVnniBytes;
    loop(idx(0), idx(bytes), [&](llvm::Value *k) {
      llvm::Value *v = b_.CreateSelect(
          b_.CreateICmpSLT(k, idx(k_)),
          b_.CreateXor(
              b_.CreateLoad(i8, b_.CreateInBoundsGEP(
                                    i8, x,
                                    b_.CreateSelect(
                                        b_.CreateICmpSLT(k, idx(k_)), k,
                                        idx(0)))),
              0x80),
          b_.getInt8(0));
      b_.CreateStore(v, b_.CreateInBoundsGEP(i8, xPairs_, k));
    });
  }

  // VNNI: -128 * (sum of the row) per row of the constant weights (what
  // biasing x by 128 added to each dot product), as a module constant;
  // nullptr if the weights are not a constant.
  llvm::GlobalVariable *rowOffsets() {
    const structured::TensorInfo &info =
        p_.program.tensors[root().inputs[plan_.w].tensor];
    llvm::ArrayRef<int64_t> dims = info.type.dims();
    if (!info.constant ||
        int64_t(info.constant->bytes().size()) != dims[0] * dims[1]) {
      return nullptr;
    }
    std::string name = "constant_" + info.name + "_row_offsets";
    if (llvm::GlobalVariable *g = m_.getNamedGlobal(name)) {
      return g;
    }
    llvm::ArrayRef<uint8_t> data = info.constant->bytes();
    std::vector<uint32_t> offsets(dims[0]);
    for (int64_t n = 0; n < dims[0]; ++n) {
      uint32_t sum = 0;
      for (int64_t k = 0; k < dims[1]; ++k) {
        sum += uint32_t(int32_t(static_cast<int8_t>(data[n * dims[1] + k])));
      }
      offsets[n] = 0u - sum * 128u; // wrapping, like the accumulation
    }
    llvm::Constant *init = llvm::ConstantDataArray::get(ctx_, offsets);
    auto *g = new llvm::GlobalVariable(m_, init->getType(), true,
                                       llvm::GlobalValue::InternalLinkage,
                                       init, name);
    g->setAlignment(llvm::Align(64));
    return g;
  }

  // VNNI: outputs n0 .. n0 + rows: per 64 steps one load of x's bytes and
  // per row one weight load and one VPDPBUSD (a last part of the row below
  // 64 bytes is a masked load), the lanes added up, the row's offset, then
  // the epilogue.
  void vnniBlock(llvm::Value *n0, int64_t rows, absl::Status &status) {
    llvm::Type *i8 = b_.getInt8Ty();
    auto *bytesTy = llvm::FixedVectorType::get(i8, kVnniBytes);
    auto *lanesTy = llvm::FixedVectorType::get(i32_, kVnniBytes / 4);
    std::vector<llvm::Value *> rowPtr = rowPointers(n0, rows);
    int64_t full = kPad_ / kVnniBytes, tail = kPad_ % kVnniBytes;
    auto dot = [&](llvm::Value *acc, llvm::Value *xv, llvm::Value *wv) {
      return b_.CreateIntrinsic(
          llvm::Intrinsic::x86_avx512_vpdpbusd_512, {},
          {acc, b_.CreateBitCast(xv, lanesTy), b_.CreateBitCast(wv, lanesTy)});
    };
    std::vector<llvm::Value *> sums = accumulate(
        full, rows, lanesTy, /*unroll=*/true,
        [&](llvm::Value *g, std::vector<llvm::Value *> &accs) {
          llvm::Value *at = b_.CreateMul(g, idx(kVnniBytes));
          llvm::Value *xv = b_.CreateAlignedLoad(
              bytesTy, b_.CreateInBoundsGEP(i8, xPairs_, at), llvm::Align(64));
          for (int64_t r = 0; r < rows; ++r) {
            llvm::Value *wv = b_.CreateAlignedLoad(
                bytesTy, b_.CreateInBoundsGEP(i8, rowPtr[r], at),
                llvm::Align(1));
            accs[r] = dot(accs[r], xv, wv);
          }
        });
    if (tail != 0) {
      llvm::SmallVector<llvm::Constant *, 64> mask;
      for (int64_t i = 0; i < kVnniBytes; ++i) {
        mask.push_back(b_.getInt1(i < tail));
      }
      llvm::Value *at = idx(full * kVnniBytes);
      llvm::Value *xv = b_.CreateAlignedLoad(
          bytesTy, b_.CreateInBoundsGEP(i8, xPairs_, at), llvm::Align(64));
      for (int64_t r = 0; r < rows; ++r) {
        llvm::Value *wv = b_.CreateMaskedLoad(
            bytesTy, b_.CreateInBoundsGEP(i8, rowPtr[r], at), llvm::Align(1),
            llvm::ConstantVector::get(mask),
            llvm::Constant::getNullValue(bytesTy));
        sums[r] = dot(sums[r], xv, wv);
      }
    }
    for (int64_t r = 0; r < rows && status.ok(); ++r) {
      llvm::Value *n = b_.CreateAdd(n0, idx(r));
      llvm::Value *offset = b_.CreateLoad(
          i32_, b_.CreateInBoundsGEP(i32_, rowOffsets_, n));
      ivs_[plan_.nLoop] = n;
      status = hooks_.finish(
          b_.CreateAdd(b_.CreateAddReduce(sums[r]), offset), ivs_);
    }
  }

  // Outputs n0 .. n0 + rows: the dot products, then the epilogue.
  void block(llvm::Value *n0, int64_t rows, absl::Status &status) {
    std::vector<llvm::Value *> rowPtr = rowPointers(n0, rows);
    // Unrolled, the loop runs out of registers and spills accumulators
    // (FC autoencoder 0.63 -> 0.61 M instructions without unrolling).
    std::vector<llvm::Value *> sums = accumulate(
        kPad_ / 4, rows, i32_, /*unroll=*/false,
        [&](llvm::Value *g, std::vector<llvm::Value *> &accs) {
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
                i32_,
                b_.CreateInBoundsGEP(b_.getInt8Ty(), rowPtr[r], byteOffset),
                llvm::Align(1));
            accs[r] = b_.CreateIntrinsic(llvm::Intrinsic::arm_smlad, {},
                                         {xEven, sxtb16(word), accs[r]});
            accs[r] = b_.CreateIntrinsic(llvm::Intrinsic::arm_smlad, {},
                                         {xOdd, sxtb16Odd(word), accs[r]});
          }
        });
    for (int64_t r = 0; r < rows && status.ok(); ++r) {
      ivs_[plan_.nLoop] = b_.CreateAdd(n0, idx(r));
      status = hooks_.finish(sums[r], ivs_);
    }
  }

  // Pointers to rows n0 .. n0 + rows of the weights.
  std::vector<llvm::Value *> rowPointers(llvm::Value *n0, int64_t rows) {
    llvm::Value *w = hooks_.base(root().inputs[plan_.w].tensor);
    std::vector<llvm::Value *> rowPtr;
    for (int64_t r = 0; r < rows; ++r) {
      llvm::Value *n = b_.CreateAdd(n0, idx(r));
      rowPtr.push_back(b_.CreateInBoundsGEP(b_.getInt8Ty(), w,
                                            b_.CreateMul(n, idx(kPad_))));
    }
    return rowPtr;
  }

  // for (g = 0; g < count; ++g) step(g, accs): |rows| accumulators of
  // |type|, zero at the start, carried as loop values; returns their final
  // values. Without |unroll| the loop is marked to stay rolled.
  std::vector<llvm::Value *> accumulate(
      int64_t count, int64_t rows, llvm::Type *type, bool unroll,
      llvm::function_ref<void(llvm::Value *, std::vector<llvm::Value *> &)>
          step) {
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "mv_loop", fn_);
    llvm::BasicBlock *body = llvm::BasicBlock::Create(ctx_, "mv_body", fn_);
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "mv_exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode *g = b_.CreatePHI(idxTy_, 2);
    g->addIncoming(idx(0), pre);
    std::vector<llvm::PHINode *> phis;
    for (int64_t r = 0; r < rows; ++r) {
      phis.push_back(b_.CreatePHI(type, 2));
      phis.back()->addIncoming(llvm::Constant::getNullValue(type), pre);
    }
    b_.CreateCondBr(b_.CreateICmpSLT(g, idx(count)), body, exit);
    b_.SetInsertPoint(body);
    std::vector<llvm::Value *> accs(phis.begin(), phis.end());
    step(g, accs);
    for (int64_t r = 0; r < rows; ++r) {
      phis[r]->addIncoming(accs[r], b_.GetInsertBlock());
    }
    g->addIncoming(b_.CreateAdd(g, idx(1), "", true, true),
                   b_.GetInsertBlock());
    llvm::BranchInst *latch = b_.CreateBr(header);
    if (!unroll) {
      llvm::Metadata *disable[] = {
          llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")};
      setLoopProperties(latch, {llvm::MDNode::get(ctx_, disable)});
    }
    b_.SetInsertPoint(exit);
    return std::vector<llvm::Value *>(phis.begin(), phis.end());
  }

  const MatVecPlan &plan_;
  // x86 AVX-512 VNNI (else Arm DSP): x is stored in xPairs_ as bytes.
  bool vnni_ = false;
  llvm::GlobalVariable *rowOffsets_ = nullptr;
  int64_t k_ = 1;
  int64_t kPad_ = 0;
  llvm::Type *i32_ = nullptr;
  llvm::AllocaInst *xPairs_ = nullptr;
};

} // namespace

bool hasMatVecKernel(llvm::StringRef triple, llvm::StringRef features) {
  llvm::Triple t(triple);
  return hasVnni(triple, features) ||
         ((t.isARM() || t.isThumb()) && !features.contains("-dsp") &&
          (t.getSubArch() == llvm::Triple::ARMSubArch_v7em ||
           features.contains("+dsp")));
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
  bool vnni = hasVnni(fn->getParent()->getTargetTriple(), features);
  if (vnni && !program.program.tensors[root.inputs[plan->w].tensor].constant) {
    return false; // the row sums are computed at compile time
  }
  MatVecEmitter emitter(program, region, builder, fn, hooks, *plan, vnni);
  absl::Status status = emitter.emit(lo, hi);
  if (!status.ok()) {
    return status;
  }
  return true;
}

} // namespace osprey::compiler::llvm_cpu
