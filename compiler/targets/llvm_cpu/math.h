// Inline float32 math (exp, log, tanh, erf, sigmoid) as polynomials built
// from basic instructions, so dispatch code never calls libm: bare-metal
// libraries link with --no-undefined against nothing.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_MATH_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_MATH_H_

#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// Each takes and returns an f32 value (scalar; the loop vectorizer widens
// them: no branches or calls). Accuracy on normal inputs: exp, log within 2
// ulp (exp of inputs below -86.64, results under 2.4e-38, is e^-86.64);
// tanh and sigmoid within 1e-6 absolute; erf within 2e-7 absolute
// (Abramowitz-Stegun 7.1.26). Sigmoid, tanh and erf divide with
// allow-reciprocal, so vector code may use a refined reciprocal estimate.
llvm::Value *emitExp(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitLog(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitTanh(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitSigmoid(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emitErf(llvm::IRBuilder<> &b, llvm::Value *x);
// max/min as compare + select (no fmaxf/fminf calls on cores without them).
llvm::Value *emitMax(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y);
llvm::Value *emitMin(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_MATH_H_
