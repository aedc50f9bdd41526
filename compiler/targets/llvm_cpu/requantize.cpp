// Requantization, saturating addition and rounding half to even as IR.
#include "compiler/targets/llvm_cpu/requantize.h"

#include "llvm/IR/Intrinsics.h"

namespace osprey::compiler::llvm_cpu {

llvm::Value *emitRequantize(llvm::IRBuilderBase &b, llvm::Value *x,
                            llvm::Value *m, llvm::Value *s,
                            std::optional<ShiftRange> range) {
  llvm::Type *i32 = x->getType();
  llvm::Type *i64 = b.getInt64Ty();
  auto c32 = [&](int64_t v) { return llvm::ConstantInt::getSigned(i32, v); };
  auto c64 = [&](int64_t v) { return llvm::ConstantInt::getSigned(i64, v); };
  // Shifts known to stay on one side of 0 drop the other side's code (a
  // convolution's per-channel shifts are usually all <= 0).
  bool mayLeft = !range || range->max > 0;
  bool mayRight = !range || range->min < 0;
  if (!mayLeft && range && range->max <= -1) {
    // Every shift is a right shift r = -s >= 1. Both roundings become one
    // floor division of the 64-bit product: with c = 2^(r-1) - [x < 0],
    //   RDBPOT(floor((p + 2^30) / 2^31), r)
    //     = floor((floor((p + 2^30) / 2^31) + c) / 2^r)
    //     = floor((p + 2^30 + c * 2^31) / 2^(31 + r)),
    // as c is an integer. [x < 0] stands for [high < 0]: m >= 0, so they
    // differ only when high = 0, where both c give 0. The quotient is the
    // high word shifted by r - 1, and p + 2^30 + 2^(30 + r) < 2^63. On
    // Cortex-M4: an SMLAL into the per-channel constant, the correction's
    // ADDS/ADC and one shift, against a dozen instructions.
    llvm::Value *r = b.CreateSub(c32(0), s);
    llvm::Value *bias = b.CreateAdd(
        c64(int64_t{1} << 30),
        b.CreateShl(c64(1), b.CreateAdd(b.CreateZExt(r, i64), c64(30))));
    llvm::Value *negative =
        b.CreateShl(b.CreateSExt(b.CreateAShr(x, c32(31)), i64), c64(31));
    llvm::Value *p = b.CreateMul(b.CreateSExt(x, i64), b.CreateSExt(m, i64),
                                 "", /*HasNUW=*/false, /*HasNSW=*/true);
    llvm::Value *sum = b.CreateAdd(
        p, b.CreateAdd(bias, negative, "", false, true), "", false, true);
    llvm::Value *high = b.CreateTrunc(b.CreateAShr(sum, c64(32)), i32);
    return b.CreateAShr(high, b.CreateSub(r, c32(1)));
  }
  llvm::Value *a = x;
  if (mayLeft) {
    llvm::Value *left =
        mayRight ? b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, s, c32(0))
                 : s;
    a = b.CreateBinaryIntrinsic(llvm::Intrinsic::sshl_sat, x, left);
  }
  // The reference's (a * m + nudge) / 2^31 truncating toward zero, with
  // nudge = 2^30 for a * m >= 0 and 1 - 2^30 otherwise, is
  // floor((a * m + 2^30) / 2^31) for every product: for a negative t =
  // a * m + 1 - 2^30 truncation is floor((t + 2^31 - 1) / 2^31). So one add
  // and an arithmetic shift; |a * m| < 2^62 and the quotient fits 32 bits.
  llvm::Value *p = b.CreateMul(b.CreateSExt(a, i64), b.CreateSExt(m, i64), "",
                               /*HasNUW=*/false, /*HasNSW=*/true);
  llvm::Value *high = b.CreateTrunc(
      b.CreateAShr(b.CreateAdd(p, c64(int64_t{1} << 30), "", false, true),
                   c64(31)),
      i32);
  if (!mayRight) {
    return high;
  }
  llvm::Value *right =
      mayLeft ? b.CreateBinaryIntrinsic(llvm::Intrinsic::smax,
                                        b.CreateSub(c32(0), s), c32(0))
              : b.CreateSub(c32(0), s);
  // Rounding right shift: floor(high / 2^right), plus one when the
  // remainder exceeds half (or equals it for negative values' threshold).
  llvm::Value *mask = b.CreateSub(b.CreateShl(c32(1), right), c32(1));
  llvm::Value *remainder = b.CreateAnd(high, mask);
  llvm::Value *threshold = b.CreateAdd(
      b.CreateAShr(mask, c32(1)),
      b.CreateZExt(b.CreateICmpSLT(high, c32(0)), i32));
  return b.CreateAdd(b.CreateAShr(high, right),
                     b.CreateZExt(b.CreateICmpSGT(remainder, threshold), i32));
}

llvm::Value *emitAddSat(llvm::IRBuilderBase &b, llvm::Value *a,
                        llvm::Value *c) {
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_sat, a, c);
}

llvm::Value *emitRoundHalfEven(llvm::IRBuilderBase &b, llvm::Value *x) {
  llvm::Type *t = x->getType();
  // From 2^23 on every float (2^52 every double) is integral; below it
  // adding 2^23 leaves no fraction bits, so the addition rounds (to even)
  // and the subtraction is exact. No fast-math flags: the two must not be
  // folded.
  llvm::Value *integral = llvm::ConstantFP::get(
      t, t->getScalarType()->isDoubleTy() ? 4503599627370496.0 : 8388608.0);
  llvm::Value *magnitude = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *rounded = b.CreateFSub(b.CreateFAdd(magnitude, integral), integral);
  llvm::Value *small = b.CreateFCmpOLT(magnitude, integral);
  llvm::Value *r = b.CreateSelect(small, rounded, magnitude);
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
}

} // namespace osprey::compiler::llvm_cpu
