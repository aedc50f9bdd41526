// Inline float32 math (exp, log, tanh, erf, sigmoid, the trigonometric and
// hyperbolic functions and their inverses) as polynomials built
// from basic instructions, so dispatch code never calls libm: bare-metal
// libraries link with --no-undefined against nothing.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_MATH_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_MATH_H_

#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// Each takes and returns an f32 value (scalar; the loop vectorizer widens
// them: no branches or calls). NaN inputs give NaN, and zeros, infinities
// and subnormals give what C's expf/logf/powf/tanhf/erff do. Accuracy on
// normal inputs: exp, log within 2 ulp; pow within 2 ulp times
// |y * log(x)| (it is exp(y * log|x|)); tanh and sigmoid within 1e-6
// absolute; erf within 2e-7 absolute (Abramowitz-Stegun 7.1.26). Sigmoid,
// tanh and erf divide with allow-reciprocal, so vector code may use a
// refined reciprocal estimate.
llvm::Value *emitExp(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitLog(llvm::IRBuilder<> &b, llvm::Value *x);
// exp and log of an f64 value (for 64-bit targets with a double-precision
// unit), within 1.5 ulp of the value, with exp's and log's special values
// (gradual underflow, overflow to +inf, log(0) = -inf, log(x < 0) = NaN).
llvm::Value *emitExpF64(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitLogF64(llvm::IRBuilder<> &b, llvm::Value *x);
// x^y with powf's special cases: a negative x to an integral y has the
// sign of y's parity, to a finite non-integral y is NaN; x^0 = 1^y = 1.
llvm::Value *emitPow(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y);
llvm::Value *emitTanh(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitSigmoid(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitErf(llvm::IRBuilder<> &b, llvm::Value *x);
// sin, cos and tan of any finite float (an infinity or NaN gives NaN), with
// the argument reduced modulo pi/2 exactly over the whole float range (the
// product of x's mantissa with 128 bits of 2/pi, Payne-Hanek style), then
// polynomials on [-pi/4, pi/4]: within 2.5 ulp of the value (tan: 4.5).
llvm::Value *emitSin(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitCos(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitTan(llvm::IRBuilder<> &b, llvm::Value *x);
// atan within 3 ulp (atan(+-inf) = +-pi/2).
llvm::Value *emitAtan(llvm::IRBuilder<> &b, llvm::Value *x);
// The hyperbolic functions and their inverses, without cancellation near
// zero (odd series and log1p forms) and without overflow in intermediate
// squares and exponentials: within 5 ulp. Outside the domain (acosh below
// 1, atanh beyond +-1) the result is NaN, at the poles +-inf.
llvm::Value *emitSinh(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitCosh(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitAsinh(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitAcosh(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitAtanh(llvm::IRBuilder<> &b, llvm::Value *x);
// Half-precision storage: f16 and bf16 bits (i16) to the f32 of the same
// value (exact; NaN stays NaN), and f32 to those bits rounded to nearest
// even (overflow to infinity, NaN to a quiet NaN). Integer and f32
// operations only (no conversion instructions or libcalls).
llvm::Value *emitHalfToFloat(llvm::IRBuilder<> &b, llvm::Value *bits);
llvm::Value *emitFloatToHalf(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitBFloat16ToFloat(llvm::IRBuilder<> &b, llvm::Value *bits);
llvm::Value *emitFloatToBFloat16(llvm::IRBuilder<> &b, llvm::Value *x);
// max/min as compare + select (no fmaxf/fminf calls on cores without
// them); NaN in either operand gives NaN, as numpy's maximum/minimum.
llvm::Value *emitMax(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y);
llvm::Value *emitMin(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_MATH_H_
