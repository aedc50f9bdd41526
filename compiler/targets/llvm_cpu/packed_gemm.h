// Packed-panel matrix-product code generation for multiply-accumulate roots
// (convolutions and contractions) of dispatch regions.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_PACKED_GEMM_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_PACKED_GEMM_H_

#include <functional>

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// What the packed path needs from the region emitter. The callbacks emit at
// the builder's insertion point and may be called many times.
struct PackedGemmHooks {
  // Base pointer of tensor |tensor| (a binding or an embedded constant).
  std::function<llvm::Value *(unsigned tensor)> base;
  // Loads root input |in| at root loop indices |ivs|, padding applied.
  std::function<llvm::Value *(const structured::OperandAccess &in,
                              llvm::ArrayRef<llvm::Value *> ivs)>
      load;
  // Applies the region's fused ops to the root's value |value| at root loop
  // indices |ivs| and stores the region's result.
  std::function<absl::Status(llvm::Value *value,
                             llvm::ArrayRef<llvm::Value *> ivs)>
      finish;
};

// Register blocking of the microkernel for a target.
struct GemmKernelShape {
  unsigned vectorWidth; // f32 lanes per vector (1: scalar code)
  unsigned mr;          // rows of A per block (broadcast streams)
  unsigned nv;          // vectors of B per block; NR = vectorWidth * nv
  unsigned kc;          // reduction chunk packed at once
  uint64_t maxScratch;  // bytes of stack for panel plus accumulators
};

// Module flag (an MDString) with the target's CPU feature string, e.g.
// "+avx2,+fma,+avx512f"; set by buildExecutableLibrary.
inline constexpr const char kTargetFeaturesFlag[] = "osprey.target-features";

// The blocking used for modules with target triple |triple| and CPU features
// |features|.
GemmKernelShape gemmKernelShape(llvm::StringRef triple,
                                llvm::StringRef features);

// Vector width (bits) every dispatch function should prefer on this target,
// or 0 for the backend's default: 512 on AVX-512 targets, whose CPUs are
// often tuned to prefer 256-bit vectors (MobileNetV2 -10%, ResNet-18 -4%
// with 512).
unsigned preferredVectorBits(llvm::StringRef triple, llvm::StringRef features);

// If the region's root has a structured::GemmPlan and its scratch fits the
// target's budget, emits the workgroup's tile at the builder's insertion
// point (inside |fn|, loop ranges [lo[d], hi[d]) per root loop) as packed
// panels of B times A through a register-blocked microkernel (an internal
// function of the module, one per shape), then the epilogue, and returns
// true. A root with a structured::RowConvPlan instead (depthwise
// convolutions with rows of 16+ outputs) is emitted row by row. Returns
// false, emitting nothing, when the root qualifies for neither or is not
// f32. Errors come from |hooks|.
absl::StatusOr<bool> emitPackedGemm(const dispatch::DispatchProgram &program,
                                    const dispatch::DispatchRegion &region,
                                    llvm::IRBuilder<> &builder,
                                    llvm::Function *fn,
                                    llvm::ArrayRef<llvm::Value *> lo,
                                    llvm::ArrayRef<llvm::Value *> hi,
                                    const PackedGemmHooks &hooks);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_PACKED_GEMM_H_
