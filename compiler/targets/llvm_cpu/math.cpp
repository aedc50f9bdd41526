// Inline float32 math expansions.
#include "compiler/targets/llvm_cpu/math.h"

#include <cmath>
#include <cstdint>
#include <iterator>

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

// Horner evaluation of sum coeffs[i] * x^i, in x's type.
llvm::Value *poly(llvm::IRBuilder<> &b, llvm::Value *x,
                  std::initializer_list<double> coeffs) {
  auto c = [&](double v) { return llvm::ConstantFP::get(x->getType(), v); };
  const double *k = coeffs.end();
  llvm::Value *acc = c(*--k);
  while (k != coeffs.begin()) {
    acc = mulAdd(b, acc, x, c(*--k));
  }
  return acc;
}

llvm::Value *d(llvm::IRBuilder<> &b, double v) {
  return llvm::ConstantFP::get(b.getDoubleTy(), v);
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

llvm::Value *bitsOf(llvm::IRBuilder<> &b, llvm::Value *v) {
  return b.CreateBitCast(v, b.getInt32Ty());
}

llvm::Value *fromBits(llvm::IRBuilder<> &b, llvm::Value *v) {
  return b.CreateBitCast(v, b.getFloatTy());
}

// |y| with the sign bit of |x| (-0 and NaN keep theirs).
llvm::Value *withSignOf(llvm::IRBuilder<> &b, llvm::Value *y, llvm::Value *x) {
  return fromBits(
      b, b.CreateOr(b.CreateAnd(bitsOf(b, y), b.getInt32(0x7fffffff)),
                    b.CreateAnd(bitsOf(b, x), b.getInt32(0x80000000u))));
}

// y with its sign flipped where |x|'s sign bit is set.
llvm::Value *timesSignOf(llvm::IRBuilder<> &b, llvm::Value *y,
                         llvm::Value *x) {
  return fromBits(
      b, b.CreateXor(bitsOf(b, y),
                     b.CreateAnd(bitsOf(b, x), b.getInt32(0x80000000u))));
}

// log(1 + u) without the cancellation of forming 1 + u for small u: the
// rounding of w = 1 + u is undone by the factor u / (w - 1).
llvm::Value *log1p(llvm::IRBuilder<> &b, llvm::Value *u) {
  llvm::Value *w = b.CreateFAdd(f(b, 1.0), u);
  llvm::Value *d = b.CreateFSub(w, f(b, 1.0));
  llvm::Value *y =
      b.CreateFMul(emitLog(b, w), b.CreateFDiv(u, d)); // d == 0: not used
  y = b.CreateSelect(b.CreateFCmpOEQ(d, f(b, 0.0)), u, y);
  return b.CreateSelect(b.CreateFCmpOEQ(u, f(b, INFINITY)), u, y);
}

// The bits of 2/pi after the binary point, 32 to a word, after a zero word
// (the bits above the point).
constexpr uint32_t kTwoOverPiWords[] = {
    0,          0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0,
    0xdb629599, 0x3c439041, 0xfe5163ab, 0xdebbc561};

// |x| = q * pi/2 + r (modulo 2 pi) for |ax| = |x|, with q in 0..3 (i32)
// and |r| <= pi/4. ax = m * 2^s with m the 24-bit mantissa; x * 2/pi
// modulo 4 is m times (2^s * 2/pi modulo 4), whose 96 bits from weight 2
// down are read from the table at bit s + 30 (the bits above weight 2 only
// add multiples of 4). The 24 x 96-bit product, modulo 2^64, holds the
// quadrant in its top two bits and r / (pi/2) in the other 62 (error below
// 2^-70): exact reduction for every float, with integer operations only.
struct Quadrant {
  llvm::Value *r;
  llvm::Value *q;
};

Quadrant reduceQuadrant(llvm::IRBuilder<> &b, llvm::Value *ax) {
  llvm::Type *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
  llvm::Value *bits = bitsOf(b, ax);
  llvm::Value *e = b.CreateSub(b.CreateLShr(bits, 23), b.getInt32(127));
  // |x| <= pi/4 takes no reduction; clamping keeps the other exponents'
  // table reads in range (infinities and NaN are replaced by the callers).
  e = b.CreateSelect(b.CreateICmpSLT(e, b.getInt32(-7)), b.getInt32(-7), e);
  e = b.CreateSelect(b.CreateICmpSGT(e, b.getInt32(127)), b.getInt32(127), e);
  llvm::Value *m = b.CreateZExt(
      b.CreateOr(b.CreateAnd(bits, b.getInt32(0x7fffff)), b.getInt32(0x800000)),
      i64);
  llvm::Value *start = b.CreateAdd(e, b.getInt32(7)); // s + 30, s = e - 23
  llvm::Value *w = b.CreateLShr(start, 5);
  llvm::Value *sh = b.CreateZExt(b.CreateAnd(start, b.getInt32(31)), i64);
  auto word = [&](unsigned k) {
    llvm::Value *index = b.CreateAdd(w, b.getInt32(k));
    llvm::Value *v = b.getInt32(0);
    for (unsigned j = 1; j < std::size(kTwoOverPiWords); ++j) {
      v = b.CreateSelect(b.CreateICmpEQ(index, b.getInt32(j)),
                         b.getInt32(kTwoOverPiWords[j]), v);
    }
    return b.CreateZExt(v, i64);
  };
  llvm::Value *w0 = word(0), *w1 = word(1), *w2 = word(2), *w3 = word(3);
  auto pair = [&](llvm::Value *hi, llvm::Value *lo) {
    return b.CreateOr(b.CreateShl(hi, 32), lo);
  };
  llvm::Value *t = b.CreateOr(
      b.CreateShl(pair(w0, w1), sh),
      b.CreateLShr(pair(w1, w2), b.CreateSub(b.getInt64(32), sh)));
  llvm::Value *tNext = b.CreateLShr(b.CreateShl(pair(w2, w3), sh), 32);
  llvm::Value *p = b.CreateAdd(b.CreateMul(m, t),
                               b.CreateLShr(b.CreateMul(m, tNext), 32));
  // The fraction centred on the nearest quadrant, in [-2^61, 2^61).
  llvm::Value *frac = b.CreateAShr(b.CreateShl(p, 2), 2);
  llvm::Value *q = b.CreateTrunc(b.CreateLShr(b.CreateSub(p, frac), 62), i32);
  llvm::Value *hi = b.CreateTrunc(b.CreateAShr(frac, 32), i32);
  llvm::Value *lo = b.CreateTrunc(frac, i32);
  llvm::Value *fr = b.CreateFAdd(
      b.CreateFMul(b.CreateSIToFP(hi, b.getFloatTy()), f(b, 0x1p-30)),
      b.CreateFMul(b.CreateUIToFP(lo, b.getFloatTy()), f(b, 0x1p-62)));
  // r = fr * pi/2, with pi/2 as a float and its remainder.
  constexpr float kHalfPi = 1.57079637f;
  llvm::Value *r = mulAdd(b, fr, f(b, kHalfPi),
                          b.CreateFMul(fr, f(b, M_PI_2 - double(kHalfPi))));
  llvm::Value *small = b.CreateFCmpOLE(ax, f(b, M_PI_4));
  return {b.CreateSelect(small, ax, r),
          b.CreateSelect(small, b.getInt32(0), q)};
}

// sin and cos on [-pi/4, pi/4] (Cephes's minimax coefficients).
llvm::Value *sinKernel(llvm::IRBuilder<> &b, llvm::Value *r) {
  llvm::Value *z = b.CreateFMul(r, r);
  return mulAdd(b, b.CreateFMul(r, z),
                poly(b, z, {-1.6666654611e-1, 8.3321608736e-3,
                            -1.9515295891e-4}),
                r);
}

llvm::Value *cosKernel(llvm::IRBuilder<> &b, llvm::Value *r) {
  llvm::Value *z = b.CreateFMul(r, r);
  llvm::Value *tail = b.CreateFMul(
      b.CreateFMul(z, z),
      poly(b, z, {4.166664568298827e-2, -1.388731625493765e-3,
                  2.443315711809948e-5}));
  return b.CreateFAdd(mulAdd(b, z, f(b, -0.5), f(b, 1.0)), tail);
}

// sin (|cosine| false) or cos of x.
llvm::Value *sinOrCos(llvm::IRBuilder<> &b, llvm::Value *x, bool cosine) {
  llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Quadrant qr = reduceQuadrant(b, ax);
  llvm::Value *odd = b.CreateTrunc(qr.q, b.getInt1Ty());
  llvm::Value *s = sinKernel(b, qr.r), *c = cosKernel(b, qr.r);
  // sin(q pi/2 + r) is sin r, cos r, -sin r, -cos r for q = 0..3; cos is
  // the same one quadrant on.
  llvm::Value *q = cosine ? b.CreateAdd(qr.q, b.getInt32(1)) : qr.q;
  llvm::Value *y = b.CreateSelect(odd, cosine ? s : c, cosine ? c : s);
  llvm::Value *negative =
      b.CreateICmpNE(b.CreateAnd(q, b.getInt32(2)), b.getInt32(0));
  y = b.CreateSelect(negative, b.CreateFNeg(y), y);
  if (!cosine) {
    y = timesSignOf(b, y, x); // sin is odd
  }
  return b.CreateSelect(b.CreateFCmpUGE(ax, f(b, INFINITY)), f(b, NAN), y);
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

llvm::Value *emitExpF64(llvm::IRBuilder<> &b, llvm::Value *x) {
  // e^x = 2^n e^r, n = round(x / ln2), |r| <= ln2 / 2; e^r by its Taylor
  // series to r^13 (the next term is below 2^-56). Clamping to [-746, 710]
  // keeps n in [-1076, 1025]; 2^n is applied as two normal powers, so the
  // one rounding is the last multiply: gradual underflow to subnormals and
  // zero, and overflow to +inf, come out of the arithmetic. NaN stays NaN.
  llvm::Value *xc = b.CreateSelect(b.CreateFCmpOLT(x, d(b, -746.0)),
                                   d(b, -746.0), x);
  xc = b.CreateSelect(b.CreateFCmpOGT(xc, d(b, 710.0)), d(b, 710.0), xc);
  constexpr double kShift = 6755399441055744.0; // 1.5 * 2^52
  llvm::Value *t = mulAdd(b, xc, d(b, M_LOG2E), d(b, kShift));
  llvm::Value *nf = b.CreateFSub(t, d(b, kShift));
  // ln2 in a high part whose product with n is exact, and the rest.
  llvm::Value *r = mulAdd(b, nf, d(b, -6.93147180369123816490e-01), xc);
  r = mulAdd(b, nf, d(b, -1.90821492927058770002e-10), r);
  llvm::Value *p =
      poly(b, r,
           {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720,
            1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800,
            1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800});
  llvm::Type *i64 = b.getInt64Ty();
  llvm::Value *n = b.CreateSub(b.CreateBitCast(t, i64),
                               b.getInt64(0x4338000000000000)); // kShift
  auto pow2 = [&](llvm::Value *k) { // 2^k for k in [-1022, 1023]
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(k, b.getInt64(1023)), 52),
                           b.getDoubleTy());
  };
  llvm::Value *n1 = b.CreateAShr(n, 1);
  llvm::Value *n2 = b.CreateSub(n, n1);
  return b.CreateFMul(b.CreateFMul(p, pow2(n1)), pow2(n2));
}

llvm::Value *emitLogF64(llvm::IRBuilder<> &b, llvm::Value *x) {
  // As emitLog: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(m) =
  // 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its odd series to
  // s^23; e * ln2 in two parts. Subnormals are scaled by 2^54 first.
  llvm::Type *i64 = b.getInt64Ty();
  llvm::Value *subnormal = b.CreateFCmpOLT(x, d(b, 0x1p-1022));
  llvm::Value *xs = b.CreateSelect(subnormal, b.CreateFMul(x, d(b, 0x1p54)), x);
  llvm::Value *bits = b.CreateBitCast(xs, i64);
  llvm::Value *e = b.CreateSub(b.CreateLShr(bits, 52),
                               b.CreateSelect(subnormal, b.getInt64(1023 + 54),
                                              b.getInt64(1023)));
  llvm::Value *m = b.CreateBitCast(
      b.CreateOr(b.CreateAnd(bits, b.getInt64(0xfffffffffffffULL)),
                 b.getInt64(0x3ff0000000000000ULL)),
      b.getDoubleTy());
  llvm::Value *big = b.CreateFCmpOGT(m, d(b, M_SQRT2));
  m = b.CreateSelect(big, b.CreateFMul(m, d(b, 0.5)), m);
  e = b.CreateAdd(e, b.CreateZExt(big, i64));
  llvm::Value *fm = b.CreateFSub(m, d(b, 1.0)); // exact
  llvm::Value *s = b.CreateFDiv(fm, b.CreateFAdd(m, d(b, 1.0)));
  llvm::Value *s2 = b.CreateFMul(s, s);
  // log(m) = 2s + s^3 (2/3 + 2/5 s^2 + ... + 2/23 s^20), and 2s = f - s f
  // with f = m - 1: f is exact, so only the smaller terms carry rounding.
  llvm::Value *tail = b.CreateFMul(
      b.CreateFMul(s, s2),
      poly(b, s2, {2.0 / 3, 2.0 / 5, 2.0 / 7, 2.0 / 9, 2.0 / 11, 2.0 / 13,
                   2.0 / 15, 2.0 / 17, 2.0 / 19, 2.0 / 21, 2.0 / 23}));
  llvm::Value *logm = b.CreateFSub(fm, b.CreateFSub(b.CreateFMul(s, fm), tail));
  llvm::Value *ef = b.CreateSIToFP(e, b.getDoubleTy());
  llvm::Value *y = mulAdd(b, ef, d(b, 6.93147180369123816490e-01),
                          mulAdd(b, ef, d(b, 1.90821492927058770002e-10), logm));
  y = b.CreateSelect(b.CreateFCmpOEQ(x, d(b, 0.0)), d(b, -INFINITY), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, d(b, INFINITY)), x, y);
  return b.CreateSelect(b.CreateFCmpULT(x, d(b, 0.0)), d(b, NAN), y);
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

llvm::Value *emitSin(llvm::IRBuilder<> &b, llvm::Value *x) {
  return sinOrCos(b, x, /*cosine=*/false);
}

llvm::Value *emitCos(llvm::IRBuilder<> &b, llvm::Value *x) {
  return sinOrCos(b, x, /*cosine=*/true);
}

llvm::Value *emitTan(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Quadrant qr = reduceQuadrant(b, ax);
  llvm::Value *odd = b.CreateTrunc(qr.q, b.getInt1Ty());
  llvm::Value *s = sinKernel(b, qr.r), *c = cosKernel(b, qr.r);
  // tan(r) for even q, tan(r + pi/2) = -cos r / sin r for odd.
  llvm::Value *y = b.CreateFDiv(b.CreateSelect(odd, c, s),
                                b.CreateSelect(odd, s, c));
  y = timesSignOf(b, b.CreateSelect(odd, b.CreateFNeg(y), y), x);
  return b.CreateSelect(b.CreateFCmpUGE(ax, f(b, INFINITY)), f(b, NAN), y);
}

llvm::Value *emitAtan(llvm::IRBuilder<> &b, llvm::Value *x) {
  // a = |x| reduced to |t| <= tan(pi/8): atan a = pi/2 + atan(-1/a) above
  // tan(3pi/8), pi/4 + atan((a-1)/(a+1)) above tan(pi/8); odd polynomial
  // on t (Cephes's coefficients).
  llvm::Value *a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *big = b.CreateFCmpOGT(a, f(b, 2.414213562373095));
  llvm::Value *mid = b.CreateFCmpOGT(a, f(b, 0.4142135623730950));
  llvm::Value *t = b.CreateSelect(
      big, b.CreateFDiv(f(b, -1.0), a),
      b.CreateSelect(mid,
                     b.CreateFDiv(b.CreateFSub(a, f(b, 1.0)),
                                  b.CreateFAdd(a, f(b, 1.0))),
                     a));
  llvm::Value *base = b.CreateSelect(
      big, f(b, M_PI_2), b.CreateSelect(mid, f(b, M_PI_4), f(b, 0.0)));
  llvm::Value *z = b.CreateFMul(t, t);
  llvm::Value *p = poly(b, z, {-3.33329491539e-1, 1.99777106478e-1,
                               -1.38776856032e-1, 8.05374449538e-2});
  llvm::Value *y =
      b.CreateFAdd(base, mulAdd(b, b.CreateFMul(z, t), p, t));
  return withSignOf(b, y, x);
}

namespace {
// e^|x| / 2 as (e^(|x|/2) / 2) * e^(|x|/2): finite up to sinh's and cosh's
// own overflow at |x| = 89.4 (e^|x| alone overflows at 88.7).
llvm::Value *halfExpAbs(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *h = emitExp(
      b, b.CreateFMul(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                      f(b, 0.5)));
  return b.CreateFMul(b.CreateFMul(h, f(b, 0.5)), h);
}
} // namespace

llvm::Value *emitSinh(llvm::IRBuilder<> &b, llvm::Value *x) {
  // Taylor series below 1 (where e^x - e^-x cancels; the next term is
  // below 2^-32 relative), (e^|x| - e^-|x|) / 2 from there.
  llvm::Value *z = b.CreateFMul(x, x);
  llvm::Value *series = mulAdd(
      b, b.CreateFMul(x, z),
      poly(b, z, {1.0 / 6, 1.0 / 120, 1.0 / 5040, 1.0 / 362880,
                  1.0 / 39916800}),
      x);
  llvm::Value *e = halfExpAbs(b, x);
  llvm::Value *large =
      withSignOf(b, b.CreateFSub(e, b.CreateFDiv(f(b, 0.25), e)), x);
  llvm::Value *a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  return b.CreateSelect(b.CreateFCmpOLT(a, f(b, 1.0)), series, large);
}

llvm::Value *emitCosh(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *e = halfExpAbs(b, x);
  return b.CreateFAdd(e, b.CreateFDiv(f(b, 0.25), e));
}

llvm::Value *emitAsinh(llvm::IRBuilder<> &b, llvm::Value *x) {
  // log1p(a + a^2 / (1 + sqrt(1 + a^2))) = log(a + sqrt(1 + a^2)); above
  // 2^12, log(2a) = log a + log 2 within float precision (no a^2).
  llvm::Value *a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *a2 = b.CreateFMul(a, a);
  llvm::Value *root = b.CreateUnaryIntrinsic(
      llvm::Intrinsic::sqrt, b.CreateFAdd(f(b, 1.0), a2));
  llvm::Value *y = log1p(
      b, b.CreateFAdd(a, b.CreateFDiv(a2, b.CreateFAdd(f(b, 1.0), root))));
  llvm::Value *far = b.CreateFAdd(emitLog(b, a), f(b, M_LN2));
  y = b.CreateSelect(b.CreateFCmpOGT(a, f(b, 0x1p12)), far, y);
  return withSignOf(b, y, x);
}

llvm::Value *emitAcosh(llvm::IRBuilder<> &b, llvm::Value *x) {
  // log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact near 1).
  llvm::Value *t = b.CreateFSub(x, f(b, 1.0));
  llvm::Value *root = b.CreateUnaryIntrinsic(
      llvm::Intrinsic::sqrt, b.CreateFMul(t, b.CreateFAdd(t, f(b, 2.0))));
  llvm::Value *y = log1p(b, b.CreateFAdd(t, root));
  llvm::Value *far = b.CreateFAdd(emitLog(b, x), f(b, M_LN2));
  y = b.CreateSelect(b.CreateFCmpOGT(x, f(b, 0x1p12)), far, y);
  return b.CreateSelect(b.CreateFCmpOLT(x, f(b, 1.0)), f(b, NAN), y);
}

llvm::Value *emitAtanh(llvm::IRBuilder<> &b, llvm::Value *x) {
  // log1p(2a / (1 - a)) / 2: infinite at a = 1, NaN beyond.
  llvm::Value *a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *u = b.CreateFDiv(b.CreateFMul(a, f(b, 2.0)),
                                b.CreateFSub(f(b, 1.0), a));
  return withSignOf(b, b.CreateFMul(log1p(b, u), f(b, 0.5)), x);
}

llvm::Value *emitHalfToFloat(llvm::IRBuilder<> &b, llvm::Value *bits) {
  // The exponent and mantissa move up 13 bits and the exponent is rebased
  // by 112; infinities and NaN rebase by 112 more (to 255); subnormals
  // (and zeros) are normalized by one float subtraction of 2^-14, which is
  // exact.
  llvm::Value *h = b.CreateZExt(bits, b.getInt32Ty());
  llvm::Value *sign = b.CreateShl(b.CreateAnd(h, b.getInt32(0x8000)), 16);
  llvm::Value *em = b.CreateAnd(h, b.getInt32(0x7fff));
  llvm::Value *o = b.CreateAdd(b.CreateShl(em, 13), b.getInt32(112 << 23));
  llvm::Value *special = b.CreateAdd(o, b.getInt32(112 << 23));
  llvm::Value *small = bitsOf(
      b, b.CreateFSub(fromBits(b, b.CreateAdd(o, b.getInt32(1 << 23))),
                      fromBits(b, b.getInt32(113 << 23))));
  o = b.CreateSelect(b.CreateICmpUGE(em, b.getInt32(0x7c00)), special, o);
  o = b.CreateSelect(b.CreateICmpULT(em, b.getInt32(0x0400)), small, o);
  return fromBits(b, b.CreateOr(o, sign));
}

llvm::Value *emitFloatToHalf(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *u = bitsOf(b, x);
  llvm::Value *sign = b.CreateAnd(u, b.getInt32(0x80000000u));
  u = b.CreateXor(u, sign);
  // Normal results: rebase the exponent, round the 13 dropped bits to
  // nearest even (a carry may reach the exponent, up to infinity).
  llvm::Value *odd = b.CreateAnd(b.CreateLShr(u, 13), b.getInt32(1));
  llvm::Value *normal = b.CreateLShr(
      b.CreateAdd(b.CreateAdd(u, b.getInt32(int32_t(0xc8000fffu))), odd), 13);
  // Below 2^-14 (subnormal results): adding 0.5 aligns the value's bits at
  // the f16 subnormal step and the float addition rounds them to nearest
  // even; the low bits are the result.
  constexpr uint32_t kMagic = 126u << 23; // 0.5
  llvm::Value *sub = b.CreateSub(
      bitsOf(b, b.CreateFAdd(fromBits(b, u), fromBits(b, b.getInt32(kMagic)))),
      b.getInt32(kMagic));
  llvm::Value *o = b.CreateSelect(b.CreateICmpULT(u, b.getInt32(113u << 23)),
                                  sub, normal);
  // From 2^16 (beyond the largest f16 after rounding) infinity; NaN quiet.
  o = b.CreateSelect(b.CreateICmpUGE(u, b.getInt32(143u << 23)),
                     b.getInt32(0x7c00), o);
  o = b.CreateSelect(b.CreateICmpUGT(u, b.getInt32(0x7f800000)),
                     b.getInt32(0x7e00), o);
  return b.CreateTrunc(b.CreateOr(o, b.CreateLShr(sign, 16)), b.getInt16Ty());
}

llvm::Value *emitBFloat16ToFloat(llvm::IRBuilder<> &b, llvm::Value *bits) {
  return fromBits(b, b.CreateShl(b.CreateZExt(bits, b.getInt32Ty()), 16));
}

llvm::Value *emitFloatToBFloat16(llvm::IRBuilder<> &b, llvm::Value *x) {
  llvm::Value *u = bitsOf(b, x);
  llvm::Value *odd = b.CreateAnd(b.CreateLShr(u, 16), b.getInt32(1));
  llvm::Value *rounded = b.CreateLShr(
      b.CreateAdd(b.CreateAdd(u, b.getInt32(0x7fff)), odd), 16);
  llvm::Value *nan = b.CreateFCmpUNO(x, x);
  llvm::Value *quiet =
      b.CreateOr(b.CreateLShr(u, 16), b.getInt32(0x0040)); // keeps the sign
  return b.CreateTrunc(b.CreateSelect(nan, quiet, rounded), b.getInt16Ty());
}

} // namespace osprey::compiler::llvm_cpu
