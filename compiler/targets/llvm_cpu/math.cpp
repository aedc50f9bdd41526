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

// Whether |v| is a constant (scalar or splat vector) that is not NaN.
bool knownNotNaN(llvm::Value *v) {
  auto *c = llvm::dyn_cast<llvm::Constant>(v);
  if (c && c->getType()->isVectorTy()) {
    c = c->getSplatValue();
  }
  auto *fp = llvm::dyn_cast_or_null<llvm::ConstantFP>(c);
  return fp && !fp->isNaN();
}

// max (or min, |isMax| false) with NaN from either operand propagated, as
// numpy's maximum/minimum (the ONNX reference) do. A select on an ordered
// compare keeps its second operand for a NaN, so the operand that may be
// NaN goes second; when neither is a constant, a NaN in the other one is
// selected explicitly.
llvm::Value *minMax(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y,
                    bool isMax) {
  if (knownNotNaN(x)) {
    std::swap(x, y);
  }
  llvm::Value *keepY = isMax ? b.CreateFCmpOLT(x, y) : b.CreateFCmpOGT(x, y);
  llvm::Value *m = b.CreateSelect(keepY, y, x);
  if (knownNotNaN(y)) {
    return m;
  }
  return b.CreateSelect(b.CreateFCmpUNO(y, y), y, m);
}


// e^x for x clamped to [lo, hi] (a NaN stays NaN), as
// 2^n * e^r with n = round(x / ln2), |r| <= ln2 / 2, e^r by a degree-6
// polynomial fitted for minimax relative error (2e-9 before rounding; 0.74
// ulp measured in float). Branch-free and call-free, so loops over it
// vectorize. n is rounded by adding 1.5 * 2^23: the sum's low mantissa bits
// are n (no float-to-int conversion, which scalar and vector code lack).
// The polynomial carries a factor 2, so 2^(n-1) is built from exponent
// bits: in one factor when n >= -125 (|wide| false), else in two factors,
// which reaches the subnormal results down to n = -150.
llvm::Value *expClamped(llvm::IRBuilder<> &b, llvm::Value *x, double lo,
                        double hi, bool wide) {
  x = b.CreateSelect(b.CreateFCmpOLT(x, f(b, lo)), f(b, lo), x);
  x = b.CreateSelect(b.CreateFCmpOGT(x, f(b, hi)), f(b, hi), x);
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
  auto pow2 = [&](llvm::Value *k) { // 2^k for k in [-126, 127]
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(k, b.getInt32(127)), 23),
                           b.getFloatTy());
  };
  if (!wide) {
    return b.CreateFMul(p, pow2(b.CreateSub(n, b.getInt32(1))));
  }
  llvm::Value *n1 = b.CreateAShr(n, 1);
  llvm::Value *n2 = b.CreateSub(b.CreateSub(n, n1), b.getInt32(1));
  return b.CreateFMul(b.CreateFMul(p, pow2(n1)), pow2(n2));
}

// e^x saturated to finite values (e^-86.64 below -86.64, about FLT_MAX
// above 88.72), for expressions such as 1 / (1 + e^-x) whose refined
// reciprocal estimate would turn an infinity into NaN.
llvm::Value *expFinite(llvm::IRBuilder<> &b, llvm::Value *x) {
  return expClamped(b, x, -86.64, 88.72283, /*wide=*/false);
}

} // namespace

llvm::Value *emitMax(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  return minMax(b, x, y, /*isMax=*/true);
}

llvm::Value *emitMin(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  return minMax(b, x, y, /*isMax=*/false);
}

llvm::Value *emitExp(llvm::IRBuilder<> &b, llvm::Value *x) {
  // Below -104 the result rounds to +0; above ln(FLT_MAX) it is +inf.
  llvm::Value *y = expClamped(b, x, -104.0, 88.72283, /*wide=*/true);
  return b.CreateSelect(b.CreateFCmpOGT(x, f(b, 88.7228394)), f(b, INFINITY),
                        y);
}

llvm::Value *emitLog(llvm::IRBuilder<> &b, llvm::Value *x) {
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s) with
  // s = (m - 1) / (m + 1), |s| < 0.172, by its odd series to s^11.
  // Subnormal inputs are scaled by 2^23 first (their exponent field is 0).
  llvm::Value *subnormal = b.CreateFCmpOLT(x, f(b, 0x1p-126));
  llvm::Value *xs = b.CreateSelect(subnormal, b.CreateFMul(x, f(b, 0x1p23)), x);
  llvm::Value *bits = b.CreateBitCast(xs, b.getInt32Ty());
  llvm::Value *e = b.CreateSub(b.CreateLShr(bits, 23),
                               b.CreateSelect(subnormal, b.getInt32(127 + 23),
                                              b.getInt32(127)));
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

llvm::Value *emitPow(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  llvm::Value *one = f(b, 1.0);
  llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *ay = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, y);
  llvm::Value *magnitude = emitExp(b, b.CreateFMul(y, emitLog(b, ax)));
  // y is integral when adding and subtracting 2^23 keeps it (every float
  // of magnitude 2^23 or more is), odd when its last integer bit is set
  // (all floats from 2^24 on are even). No trunc: Cortex-M4 has no
  // instruction for it.
  llvm::Value *big = b.CreateFCmpOGE(ay, f(b, 0x1p23));
  llvm::Value *rounded =
      b.CreateFSub(b.CreateFAdd(ay, f(b, 0x1p23)), f(b, 0x1p23));
  llvm::Value *integral =
      b.CreateOr(big, b.CreateFCmpOEQ(rounded, ay)); // false for NaN
  llvm::Value *small =
      b.CreateSelect(b.CreateFCmpOLT(ay, f(b, 0x1p24)), ay, f(b, 0.0));
  llvm::Value *oddBit = b.CreateTrunc(
      b.CreateFPToUI(small, b.getInt32Ty()), b.getInt1Ty());
  llvm::Value *odd = b.CreateAnd(integral, oddBit);
  // A negative base (or -0) to an odd power is negative.
  llvm::Value *signBit = b.CreateICmpSLT(
      b.CreateBitCast(x, b.getInt32Ty()), b.getInt32(0));
  llvm::Value *r = b.CreateSelect(b.CreateAnd(signBit, odd),
                                  b.CreateFNeg(magnitude), magnitude);
  // A finite negative base to a finite non-integral power is NaN.
  llvm::Value *finiteNegative = b.CreateAnd(
      b.CreateFCmpOLT(x, f(b, 0.0)), b.CreateFCmpOGT(x, f(b, -INFINITY)));
  llvm::Value *finiteY = b.CreateFCmpOLT(ay, f(b, INFINITY));
  r = b.CreateSelect(
      b.CreateAnd(finiteNegative,
                  b.CreateAnd(finiteY, b.CreateNot(integral))),
      f(b, NAN), r);
  // x^0 = 1 (also for a NaN x), 1^y = 1 (also for a NaN y), and
  // (-1)^+-inf = 1.
  llvm::Value *unit = b.CreateOr(
      b.CreateFCmpOEQ(y, f(b, 0.0)),
      b.CreateOr(b.CreateFCmpOEQ(x, one),
                 b.CreateAnd(b.CreateFCmpOEQ(ax, one),
                             b.CreateFCmpOEQ(ay, f(b, INFINITY)))));
  return b.CreateSelect(unit, one, r);
}

llvm::Value *emitSigmoid(llvm::IRBuilder<> &b, llvm::Value *x) {
  return reciprocal(b, b.CreateFAdd(f(b, 1.0), expFinite(b, b.CreateFNeg(x))));
}

llvm::Value *emitTanh(llvm::IRBuilder<> &b, llvm::Value *x) {
  // Odd polynomial near zero (where 1 - 2 / (e^2x + 1) cancels), the exp
  // form elsewhere.
  llvm::Value *x2 = b.CreateFMul(x, x);
  llvm::Value *small = b.CreateFMul(
      x, poly(b, x2,
              {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835,
               -1382.0 / 155925}));
  llvm::Value *e = expFinite(b, b.CreateFMul(x, f(b, 2.0)));
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
      b.CreateFMul(p, expFinite(b, b.CreateFNeg(b.CreateFMul(ax, ax)))));
  return b.CreateSelect(neg, b.CreateFNeg(y), y);
}

} // namespace osprey::compiler::llvm_cpu
