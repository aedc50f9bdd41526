// Requantization, saturating addition and rounding half to even as IR.
#include "compiler/targets/llvm_cpu/requantize.h"

#include "llvm/IR/Intrinsics.h"

namespace osprey::compiler::llvm_cpu {

llvm::Value *emitRequantize(llvm::IRBuilderBase &b, llvm::Value *x,
                            llvm::Value *m, llvm::Value *s) {
  llvm::Type *i32 = x->getType();
  llvm::Type *i64 = b.getInt64Ty();
  auto c32 = [&](int64_t v) { return llvm::ConstantInt::getSigned(i32, v); };
  auto c64 = [&](int64_t v) { return llvm::ConstantInt::getSigned(i64, v); };
  llvm::Value *left = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, s, c32(0));
  llvm::Value *right = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::smax, b.CreateSub(c32(0), s), c32(0));
  llvm::Value *a =
      b.CreateBinaryIntrinsic(llvm::Intrinsic::sshl_sat, x, left);
  // (a * m + nudge) / 2^31 truncating toward zero, nudge = +-2^30 rounding
  // half away from zero; |a * m| < 2^62, and the quotient fits 32 bits.
  llvm::Value *p = b.CreateMul(b.CreateSExt(a, i64), b.CreateSExt(m, i64), "",
                               /*HasNUW=*/false, /*HasNSW=*/true);
  llvm::Value *nudge = b.CreateSelect(b.CreateICmpSGE(p, c64(0)),
                                      c64(int64_t{1} << 30),
                                      c64(1 - (int64_t{1} << 30)));
  // Division by 2^31 toward zero as shifts (no 64-bit division helper):
  // negative values are biased by 2^31 - 1 before the arithmetic shift.
  llvm::Value *t = b.CreateAdd(p, nudge, "", false, true);
  llvm::Value *bias =
      b.CreateAnd(b.CreateAShr(t, c64(63)), c64((int64_t{1} << 31) - 1));
  llvm::Value *high =
      b.CreateTrunc(b.CreateAShr(b.CreateAdd(t, bias), c64(31)), i32);
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
  llvm::Value *two23 = llvm::ConstantFP::get(t, 8388608.0);
  llvm::Value *magnitude = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // From 2^23 on every float is integral; below it adding 2^23 leaves no
  // fraction bits, so the addition rounds (to even) and the subtraction is
  // exact. No fast-math flags: the two must not be folded.
  llvm::Value *rounded = b.CreateFSub(b.CreateFAdd(magnitude, two23), two23);
  llvm::Value *small = b.CreateFCmpOLT(magnitude, two23);
  llvm::Value *r = b.CreateSelect(small, rounded, magnitude);
  return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
}

} // namespace osprey::compiler::llvm_cpu
