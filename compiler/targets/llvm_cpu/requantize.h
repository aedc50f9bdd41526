// Integer quantization arithmetic as inline IR: docs/npu.md's Requantize,
// saturating addition and float rounding half to even, built from basic
// instructions so that no compiler-runtime helper is called on any target
// (the 64-bit product is a 32 x 32 -> 64-bit signed multiply: one SMULL on
// Cortex-M4, MUL and MULH on RV32).
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_REQUANTIZE_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_REQUANTIZE_H_

#include <cstdint>
#include <optional>

#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// Requantize(x, m, s) on i32 values (scalars; the loop vectorizer widens
// them): saturating left shift by max(s, 0), rounding doubling high multiply
// by m, rounding right shift by max(-s, 0) (ties away from zero). |m| must
// be in [0, 2^31 - 1] and |s| in [-31, 30], which the canonical ops'
// verifier guarantees, so the one overflowing product (INT32_MIN *
// INT32_MIN) cannot occur. Bit-exact with drivers/npu/reference.
// |range|, when given, bounds every value |s| takes (e.g. the per-channel
// shifts of a constant tensor); code for shift directions outside it is
// left out.
struct ShiftRange {
  int64_t min, max;
};
llvm::Value *emitRequantize(llvm::IRBuilderBase &b, llvm::Value *x,
                            llvm::Value *m, llvm::Value *s,
                            std::optional<ShiftRange> range = std::nullopt);
// a + b saturated to the range of their integer type.
llvm::Value *emitAddSat(llvm::IRBuilderBase &b, llvm::Value *a,
                        llvm::Value *c);
// f32 |x| rounded to an integral value, ties to even (ONNX
// QuantizeLinear); NaN stays NaN, infinities stay. Computed as
// (|x| + 2^23) - 2^23 under the default rounding mode (no vrint/fround on
// Cortex-M4 or RV32F, and no libm call).
llvm::Value *emitRoundHalfEven(llvm::IRBuilderBase &b, llvm::Value *x);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_REQUANTIZE_H_
