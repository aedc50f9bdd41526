// Code generation for 3x3 stride-1 convolutions as Winograd F(2x2, 3x3) or
// F(4x4, 3x3) matrix products through the packed path's microkernels.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_WINOGRAD_CONV_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_WINOGRAD_CONV_H_

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/tile_emitter.h"
#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// If the target has vectors and the region's root has a
// structured::WinogradPlan whose scratch fits the stack budget, emits the
// workgroup's tile (loop ranges [lo[d], hi[d]) per root loop) at the
// builder's insertion point inside |fn| and returns true: the input's
// patches of each m x m output tile are transformed into (m + 2)^2
// panels, that many matrix products with the compile-time transformed
// weights (an internal constant of the module, "osprey_winograd_u*") run
// through packedGemmKernel or packedGemmTransposedKernel, and the products
// are transformed back into output rows that the epilogue applies the
// region's fused ops to through |hooks|. Returns false, emitting nothing,
// otherwise. Errors come from |hooks|.
absl::StatusOr<bool> emitWinogradConv(const dispatch::DispatchProgram &program,
                                      const dispatch::DispatchRegion &region,
                                      llvm::IRBuilder<> &builder,
                                      llvm::Function *fn,
                                      llvm::ArrayRef<llvm::Value *> lo,
                                      llvm::ArrayRef<llvm::Value *> hi,
                                      const TileHooks &hooks);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_WINOGRAD_CONV_H_
