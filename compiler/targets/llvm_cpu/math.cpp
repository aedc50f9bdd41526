// Inline float32 math expansions.
#include "compiler/targets/llvm_cpu/math.h"

#include <cmath>

namespace osprey::compiler::llvm_cpu {
namespace {

llvm::Value *f(llvm::IRBuilder<> &b, double v) {
  return llvm::ConstantFP::get(b.getFloatTy(), v);
}

// a * b + c, fused where the target has a fused multiply-add (x86-64 with
// FMA, Cortex-M4F's VFMA, RV32F's fmadd.s), else a multiply and an add;
// never a libm call.
llvm::Value *mulAdd(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y,
                    llvm::Value *z) {
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()},
                           {x, y, z});
}

// Horner evaluation of sum coeffs[i] * x^i.
llvm::Value *poly(llvm::IRBuilder<> &b, llvm::Value *x,
                  std::initializer_list<double> coeffs) {
  const double *c = coeffs.end();
  llvm::Value *acc = f(b, *--c);
  while (c != coeffs.begin()) {
    acc = mulAdd(b, acc, x, f(b, *--c));
  }
  return acc;
}

// 1 / y. The division may be computed as a reciprocal estimate refined by
// Newton steps (allow-reciprocal): x86 vector code then uses rcp14ps/rcpps
// and two FMAs instead of a divide (a 16-lane divide issues once per ~10
// cycles); scalar code keeps the exact divide.
llvm::Value *reciprocal(llvm::IRBuilder<> &b, llvm::Value *y) {
  llvm::Value *r = b.CreateFDiv(f(b, 1.0), y);
  llvm::cast<llvm::Instruction>(r)->setHasAllowReciprocal(true);
  return r;
}

} // namespace

llvm::Value *emitMax(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  return b.CreateSelect(b.CreateFCmpOGT(x, y), x, y);
}

llvm::Value *emitMin(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  return b.CreateSelect(b.CreateFCmpOLT(x, y), x, y);
}

llvm::Value *emitExp(llvm::IRBuilder<> &b, llvm::Value *x) {
  // e^x = 2^n * e^r with n = round(x / ln2), |r| <= ln2 / 2, e^r by a
  // degree-6 polynomial fitted for minimax relative error (2e-9 before
  // rounding; 0.74 ulp measured in float). Branch-free and call-free, so
  // loops over it vectorize:
  //  - x is clamped to [-86.64, ln(FLT_MAX)]: n in [-125, 128], so 2^(n-1)
  //    is a normal float built from its exponent bits, and the polynomial
  //    carries the other factor 2. Inputs below -86.64 (results below
  //    2.4e-38) give e^-86.64; a NaN gives e^-86.64 too.
  //  - n is rounded by adding 1.5 * 2^23: the sum's low mantissa bits are
  //    n (no float-to-int conversion, which scalar and vector code lack).
  x = emitMin(b, emitMax(b, x, f(b, -86.64)), f(b, 88.72283));
  constexpr double kShift = 12582912.0; // 1.5 * 2^23
  llvm::Value *t = mulAdd(b, x, f(b, M_LOG2E), f(b, kShift));
  llvm::Value *nf = b.CreateFSub(t, f(b, kShift));
  // ln2 split in a high part exact in float and a low correction.
  llvm::Value *r = mulAdd(b, nf, f(b, -0.693145751953125), x);
  r = mulAdd(b, nf, f(b, -1.428606765330187e-06), r);
  llvm::Value *p =
      poly(b, r,
           {2 * 1.0000000005541696, 2 * 1.0000000363231951,
            2 * 0.49999992079789896, 2 * 0.16666420169865526,
            2 * 0.0416682255753215, 2 * 0.008374815803500371,
            2 * 0.001383684567922849});
  llvm::Type *i32 = b.getInt32Ty();
  llvm::Value *n =
      b.CreateSub(b.CreateBitCast(t, i32), b.getInt32(0x4b400000)); // kShift
  llvm::Value *scale = b.CreateBitCast(
      b.CreateShl(b.CreateAdd(n, b.getInt32(126)), 23), b.getFloatTy());
  return b.CreateFMul(p, scale);
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
  return reciprocal(b, b.CreateFAdd(f(b, 1.0), emitExp(b, b.CreateFNeg(x))));
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
      f(b, 1.0),
      b.CreateFMul(f(b, 2.0), reciprocal(b, b.CreateFAdd(e, f(b, 1.0)))));
  llvm::Value *ax = b.CreateSelect(b.CreateFCmpOLT(x, f(b, 0.0)),
                                   b.CreateFNeg(x), x);
  return b.CreateSelect(b.CreateFCmpOLT(ax, f(b, 0.25)), small, large);
}

llvm::Value *emitErf(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *neg = b.CreateFCmpOLT(x, f(b, 0.0));
  llvm::Value *ax = b.CreateSelect(neg, b.CreateFNeg(x), x);
  llvm::Value *t = reciprocal(b, mulAdd(b, ax, f(b, 0.3275911), f(b, 1.0)));
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
