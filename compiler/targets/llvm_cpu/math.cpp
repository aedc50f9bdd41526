// Inline float32 math expansions.
#include "compiler/targets/llvm_cpu/math.h"

#include <cmath>

namespace osprey::compiler::llvm_cpu {
namespace {

llvm::Value *f(llvm::IRBuilder<> &b, double v) {
  return llvm::ConstantFP::get(b.getFloatTy(), v);
}

// Horner evaluation of sum coeffs[i] * x^i.
llvm::Value *poly(llvm::IRBuilder<> &b, llvm::Value *x,
                  std::initializer_list<double> coeffs) {
  const double *c = coeffs.end();
  llvm::Value *acc = f(b, *--c);
  while (c != coeffs.begin()) {
    acc = b.CreateFAdd(b.CreateFMul(acc, x), f(b, *--c));
  }
  return acc;
}

// floor(x) for |x| < 2^31 without calling floorf.
llvm::Value *floorToInt(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *t = b.CreateFPToSI(x, b.getInt32Ty());
  llvm::Value *back = b.CreateSIToFP(t, b.getFloatTy());
  llvm::Value *adjust = b.CreateZExt(b.CreateFCmpOLT(x, back), b.getInt32Ty());
  return b.CreateSub(t, adjust);
}

} // namespace

llvm::Value *emitMax(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  return b.CreateSelect(b.CreateFCmpOGT(x, y), x, y);
}

llvm::Value *emitMin(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  return b.CreateSelect(b.CreateFCmpOLT(x, y), x, y);
}

llvm::Value *emitExp(llvm::IRBuilder<> &b, llvm::Value *x) {
  // e^x = 2^n * e^r with n = round(x / ln2), |r| <= ln2 / 2; e^r by its
  // Taylor series to degree 7 (remainder < 2e-9 relative).
  x = emitMin(b, emitMax(b, x, f(b, -87.33654)), f(b, 88.72283));
  llvm::Value *n = floorToInt(
      b, b.CreateFAdd(b.CreateFMul(x, f(b, M_LOG2E)), f(b, 0.5)));
  llvm::Value *nf = b.CreateSIToFP(n, b.getFloatTy());
  // ln2 split in a high part exact in float and a low correction.
  llvm::Value *r = b.CreateFSub(x, b.CreateFMul(nf, f(b, 0.693145751953125)));
  r = b.CreateFSub(r, b.CreateFMul(nf, f(b, 1.428606765330187e-06)));
  llvm::Value *p = poly(b, r,
                        {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120,
                         1.0 / 720, 1.0 / 5040});
  // 2^n for n in [-126, 127]; the clamp above keeps n in [-126, 128], and
  // n = 128 is split as 2 * 2^127.
  llvm::Value *over = b.CreateICmpSGT(n, b.getInt32(127));
  llvm::Value *nc = b.CreateSelect(over, b.getInt32(127), n);
  nc = b.CreateSelect(b.CreateICmpSLT(nc, b.getInt32(-126)), b.getInt32(-126),
                      nc);
  llvm::Value *scale = b.CreateBitCast(
      b.CreateShl(b.CreateAdd(nc, b.getInt32(127)), 23), b.getFloatTy());
  llvm::Value *y = b.CreateFMul(p, scale);
  return b.CreateSelect(over, b.CreateFMul(y, f(b, 2.0)), y);
}

llvm::Value *emitLog(llvm::IRBuilder<> &b, llvm::Value *x) {
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s) with
  // s = (m - 1) / (m + 1), |s| < 0.172, by its odd series to s^11.
  llvm::Value *bits = b.CreateBitCast(x, b.getInt32Ty());
  llvm::Value *e = b.CreateSub(b.CreateLShr(bits, 23), b.getInt32(127));
  llvm::Value *m = b.CreateBitCast(
      b.CreateOr(b.CreateAnd(bits, b.getInt32(0x7fffff)),
                 b.getInt32(0x3f800000)),
      b.getFloatTy());
  llvm::Value *big = b.CreateFCmpOGT(m, f(b, M_SQRT2));
  m = b.CreateSelect(big, b.CreateFMul(m, f(b, 0.5)), m);
  e = b.CreateAdd(e, b.CreateZExt(big, b.getInt32Ty()));
  llvm::Value *s = b.CreateFDiv(b.CreateFSub(m, f(b, 1.0)),
                                b.CreateFAdd(m, f(b, 1.0)));
  llvm::Value *s2 = b.CreateFMul(s, s);
  llvm::Value *series = b.CreateFMul(
      s, poly(b, s2, {2.0, 2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11}));
  llvm::Value *y = b.CreateFAdd(
      b.CreateFMul(b.CreateSIToFP(e, b.getFloatTy()), f(b, M_LN2)), series);
  // Zero, negative, infinite and NaN inputs follow logf.
  y = b.CreateSelect(b.CreateFCmpOEQ(x, f(b, 0.0)), f(b, -INFINITY), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, f(b, INFINITY)), x, y);
  return b.CreateSelect(b.CreateFCmpULT(x, f(b, 0.0)), f(b, NAN), y);
}

llvm::Value *emitSigmoid(llvm::IRBuilder<> &b, llvm::Value *x) {
  return b.CreateFDiv(f(b, 1.0),
                      b.CreateFAdd(f(b, 1.0), emitExp(b, b.CreateFNeg(x))));
}

llvm::Value *emitTanh(llvm::IRBuilder<> &b, llvm::Value *x) {
  // Odd polynomial near zero (where 1 - 2 / (e^2x + 1) cancels), the exp
  // form elsewhere.
  llvm::Value *x2 = b.CreateFMul(x, x);
  llvm::Value *small = b.CreateFMul(
      x, poly(b, x2,
              {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835,
               -1382.0 / 155925}));
  llvm::Value *e = emitExp(b, b.CreateFMul(x, f(b, 2.0)));
  llvm::Value *large = b.CreateFSub(
      f(b, 1.0), b.CreateFDiv(f(b, 2.0), b.CreateFAdd(e, f(b, 1.0))));
  llvm::Value *ax = b.CreateSelect(b.CreateFCmpOLT(x, f(b, 0.0)),
                                   b.CreateFNeg(x), x);
  return b.CreateSelect(b.CreateFCmpOLT(ax, f(b, 0.25)), small, large);
}

llvm::Value *emitErf(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *neg = b.CreateFCmpOLT(x, f(b, 0.0));
  llvm::Value *ax = b.CreateSelect(neg, b.CreateFNeg(x), x);
  llvm::Value *t = b.CreateFDiv(
      f(b, 1.0), b.CreateFAdd(f(b, 1.0), b.CreateFMul(ax, f(b, 0.3275911))));
  llvm::Value *p = b.CreateFMul(
      t, poly(b, t,
              {0.254829592, -0.284496736, 1.421413741, -1.453152027,
               1.061405429}));
  llvm::Value *y = b.CreateFSub(
      f(b, 1.0),
      b.CreateFMul(p, emitExp(b, b.CreateFNeg(b.CreateFMul(ax, ax)))));
  return b.CreateSelect(neg, b.CreateFNeg(y), y);
}

} // namespace osprey::compiler::llvm_cpu
