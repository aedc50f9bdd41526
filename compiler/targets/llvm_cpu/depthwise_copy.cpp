// Copies input rows into the zero-padded, stride-phase-split scratch
// planes of the depthwise path.
#include "compiler/targets/llvm_cpu/depthwise_emitter.h"

namespace osprey::compiler::llvm_cpu {

using structured::StructuredOp;

// Stores |value| (a scalar) to dst[from, to).
void DepthwiseConvEmitter::fillScalars(llvm::Value *dst, llvm::Value *from,
                                       llvm::Value *to, llvm::Value *value) {
  loop(from, to, [&](llvm::Value *c) {
    b_.CreateAlignedStore(value, at(dst, c), llvm::Align(4));
  });
}

// Stores vectors of |value| over dst[0, n) rounded up to whole vectors.
void DepthwiseConvEmitter::fillVectors(llvm::Value *dst, llvm::Value *n,
                                       llvm::Value *value) {
  llvm::Value *v = splat(value);
  stepLoop(idx(0), n, vw_, LoopHint::kNoVectorize, [&](llvm::Value *c) {
    b_.CreateAlignedStore(v, at(dst, c), llvm::Align(4));
  });
}

// Copies src[from, from + n) to dst[to, to + n): whole vectors in
// increasing order, then a masked tail.
void DepthwiseConvEmitter::copySpan(llvm::Value *dst, llvm::Value *to,
                                    llvm::Value *src, llvm::Value *from,
                                    llvm::Value *n, llvm::Type *srcTy) {
  srcTy = srcTy ? srcTy : f32_;
  llvm::Type *srcVec =
      vw_ > 1 ? llvm::FixedVectorType::get(srcTy, vw_) : srcTy;
  llvm::Align align(srcTy == f32_ ? 4 : 1);
  auto widened = [&](llvm::Value *v) { return srcTy == f32_ ? v : widen(v); };
  llvm::Value *full = b_.CreateMul(b_.CreateUDiv(n, idx(vw_)), idx(vw_));
  stepLoop(idx(0), full, vw_, LoopHint::kNoVectorize, [&](llvm::Value *c) {
    b_.CreateAlignedStore(
        widened(b_.CreateAlignedLoad(
            srcVec, b_.CreateGEP(srcTy, src, b_.CreateAdd(from, c)), align)),
        at(dst, b_.CreateAdd(to, c)), llvm::Align(4));
  });
  if (vw_ == 1) {
    return;
  }
  llvm::Value *rem = b_.CreateTrunc(b_.CreateSub(n, full), b_.getInt32Ty());
  std::vector<llvm::Constant *> steps;
  for (unsigned i = 0; i < vw_; ++i) {
    steps.push_back(b_.getInt32(i));
  }
  llvm::Value *mask = b_.CreateICmpULT(llvm::ConstantVector::get(steps),
                                       b_.CreateVectorSplat(vw_, rem));
  llvm::Value *v = b_.CreateMaskedLoad(
      srcVec, b_.CreateGEP(srcTy, src, b_.CreateAdd(from, full)), align,
      mask);
  b_.CreateMaskedStore(widened(v), at(dst, b_.CreateAdd(to, full)),
                       llvm::Align(4), mask);
}

// Copies the input rows of output rows [r0, r0 + rb) into the planes.
void DepthwiseConvEmitter::copyPlanes(llvm::Value *r0, llvm::Value *rb) {
  const StructuredOp &op = root();
  const structured::OperandAccess &in = op.inputs[plan_.b];
  llvm::ArrayRef<int64_t> dims = p_.program.tensors[in.tensor].type.dims();
  size_t last = dims.size() - 1;
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t k = last; k-- > 0;) {
    strides[k] = strides[k + 1] * dims[k + 1];
  }
  // Offset of the plane and whether it is inside the input (results other
  // than rows and columns read only loops set in ivs_).
  llvm::Value *base = idx(0);
  llvm::Value *inside = b_.getTrue();
  for (size_t k = 0; k < last; ++k) {
    if (k == plan_.rowResult) {
      continue;
    }
    llvm::Value *v = evalExpr(in.map.results[k]);
    base = b_.CreateAdd(base, b_.CreateMul(v, idx(strides[k])));
    if (in.padValue) {
      inside = b_.CreateAnd(inside, b_.CreateICmpULT(v, idx(dims[k])));
    }
  }
  // The padding value in the planes' type, and as an input element.
  llvm::Value *pad = constant(in.padValue ? *in.padValue : 0.0);
  llvm::Value *srcPad =
      int_ ? llvm::ConstantInt::get(srcTy_, int64_t(in.padValue ? *in.padValue
                                                                : 0.0))
           : pad;
  llvm::Type *srcVec =
      vw_ > 1 ? llvm::FixedVectorType::get(srcTy_, vw_) : srcTy_;
  llvm::Align srcAlign(int_ ? 1 : 4);
  int64_t height = dims[plan_.rowResult], width = dims[last];
  int64_t rowConst = in.map.results[plan_.rowResult].constant;
  // Row copies go straight into the plane without column phases, else
  // into row_ first and are split from there.
  int64_t len = sw_ * wq_;
  llvm::Value *colBase = b_.CreateAdd(b_.CreateMul(lo_[plan_.col], idx(sw_)),
                                      idx(in.map.results[last].constant));
  llvm::Value *c0 = smin(smax(b_.CreateSub(idx(0), colBase), idx(0)), idx(len));
  llvm::Value *c1 = smin(smax(b_.CreateSub(idx(width), colBase), c0), idx(len));
  // Plain (not inbounds) address arithmetic: the left padding puts the
  // row start before the tensor.
  llvm::Value *src =
      b_.CreateGEP(srcTy_, hooks_.base(in.tensor), b_.CreateAdd(base, colBase));
  loop(idx(0), b_.CreateAdd(rb, idx(khx_)), [&](llvm::Value *r) {
    for (int64_t rph = 0; rph < sh_; ++rph) {
      llvm::Value *inRow = b_.CreateAdd(
          b_.CreateMul(b_.CreateAdd(r0, r), idx(sh_)), idx(rph + rowConst));
      llvm::Value *ok =
          b_.CreateAnd(inside, b_.CreateICmpULT(inRow, idx(height)));
      llvm::Value *rowOff = b_.CreateMul(r, idx(wq_));
      if (vw_ > 1 && sw_ <= 2) {
        // Vector rows: masked loads (padding lanes and rows outside the
        // input read nothing) split into column phases in registers.
        llvm::Value *safeRow = b_.CreateSelect(ok, inRow, idx(0));
        llvm::Value *rowSrc = b_.CreateGEP(
            srcTy_, src, b_.CreateMul(safeRow, idx(strides[plan_.rowResult])));
        llvm::Value *hiCol = b_.CreateSelect(ok, c1, c0);
        auto load = [&](llvm::Value *t) {
          llvm::Type *i32 = b_.getInt32Ty();
          std::vector<llvm::Constant *> steps;
          for (unsigned i = 0; i < vw_; ++i) {
            steps.push_back(b_.getInt32(i));
          }
          llvm::Value *lanes =
              b_.CreateAdd(b_.CreateVectorSplat(vw_, b_.CreateTrunc(t, i32)),
                           llvm::ConstantVector::get(steps));
          llvm::Value *mask = b_.CreateAnd(
              b_.CreateICmpSGE(
                  lanes, b_.CreateVectorSplat(vw_, b_.CreateTrunc(c0, i32))),
              b_.CreateICmpSLT(lanes, b_.CreateVectorSplat(
                                          vw_, b_.CreateTrunc(hiCol, i32))));
          return widen(b_.CreateMaskedLoad(
              srcVec, b_.CreateGEP(srcTy_, rowSrc, t), srcAlign, mask,
              splat(srcPad)));
        };
        if (sw_ == 1) {
          stepLoop(idx(0), idx(wq_), vw_, LoopHint::kNoVectorize,
                   [&](llvm::Value *c) {
                     b_.CreateAlignedStore(
                         load(c), planeAt(rph, b_.CreateAdd(rowOff, c)),
                         llvm::Align(4));
                   });
          continue;
        }
        std::vector<int> even, odd;
        for (unsigned i = 0; i < vw_; ++i) {
          even.push_back(2 * i);
          odd.push_back(2 * i + 1);
        }
        stepLoop(
            idx(0), idx(wq_), vw_, LoopHint::kNoVectorize, [&](llvm::Value *c) {
              llvm::Value *t = b_.CreateMul(c, idx(2));
              llvm::Value *x0 = load(t);
              llvm::Value *x1 = load(b_.CreateAdd(t, idx(vw_)));
              llvm::Value *to = b_.CreateAdd(rowOff, c);
              b_.CreateAlignedStore(b_.CreateShuffleVector(x0, x1, even),
                                    planeAt(rph * 2, to), llvm::Align(4));
              b_.CreateAlignedStore(b_.CreateShuffleVector(x0, x1, odd),
                                    planeAt(rph * 2 + 1, to), llvm::Align(4));
            });
        continue;
      }
      llvm::Value *dst =
          sw_ == 1 ? planeAt(rph, rowOff) : static_cast<llvm::Value *>(row_);
      ifElse(
          ok, "dw_copy",
          [&] {
            fillScalars(dst, idx(0), c0, pad);
            copySpan(dst, c0,
                     b_.CreateGEP(
                         srcTy_, src,
                         b_.CreateMul(inRow, idx(strides[plan_.rowResult]))),
                     c0, b_.CreateSub(c1, c0), srcTy_);
            fillScalars(dst, c1, idx(len), pad);
          },
          "dw_pad_row", [&] { fillVectors(dst, idx(len), pad); }, "dw_row");
      if (sw_ > 1) {
        splitPhases(rph, rowOff);
      }
    }
  });
  // Vectors of the last rows read up to lanes_ elements past the rows.
  llvm::Value *end = b_.CreateMul(b_.CreateAdd(rb, idx(khx_)), idx(wq_));
  for (int64_t ph = 0; ph < phases_; ++ph) {
    for (int64_t k = 0; k < roundUp(lanes_, vw_); k += vw_) {
      b_.CreateAlignedStore(splat(constant(0.0)),
                            planeAt(ph, b_.CreateAdd(end, idx(k))),
                            llvm::Align(4));
    }
  }
}

// Splits row_ by column phase into plane row |rowOff| of the planes of
// row phase |rph|: plane[rph * sw + cph][j] = row_[sw * j + cph].
void DepthwiseConvEmitter::splitPhases(int64_t rph, llvm::Value *rowOff,
                                       llvm::Value *src) {
  llvm::Value *row = src ? src : row_;
  if (vw_ > 1 && sw_ == 2) {
    std::vector<int> even, odd;
    for (unsigned i = 0; i < vw_; ++i) {
      even.push_back(2 * i);
      odd.push_back(2 * i + 1);
    }
    stepLoop(
        idx(0), idx(wq_), vw_, LoopHint::kNoVectorize, [&](llvm::Value *j) {
          llvm::Value *from = b_.CreateMul(j, idx(2));
          llvm::Value *x0 =
              b_.CreateAlignedLoad(vecTy_, at(row, from), llvm::Align(4));
          llvm::Value *x1 = b_.CreateAlignedLoad(
              vecTy_, at(row, b_.CreateAdd(from, idx(vw_))), llvm::Align(4));
          llvm::Value *to = b_.CreateAdd(rowOff, j);
          b_.CreateAlignedStore(b_.CreateShuffleVector(x0, x1, even),
                                planeAt(rph * 2, to), llvm::Align(4));
          b_.CreateAlignedStore(b_.CreateShuffleVector(x0, x1, odd),
                                planeAt(rph * 2 + 1, to), llvm::Align(4));
        });
    return;
  }
  loop(idx(0), idx(wq_), [&](llvm::Value *j) {
    for (int64_t cph = 0; cph < sw_; ++cph) {
      llvm::Value *x = b_.CreateAlignedLoad(
          f32_, at(row, b_.CreateAdd(b_.CreateMul(j, idx(sw_)), idx(cph))),
          llvm::Align(4));
      b_.CreateAlignedStore(
          x, planeAt(rph * sw_ + cph, b_.CreateAdd(rowOff, j)), llvm::Align(4));
    }
  });
}

} // namespace osprey::compiler::llvm_cpu
