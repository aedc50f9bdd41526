// Code generation for 3x3 stride-1 convolutions as Winograd F(2x2, 3x3) or
// F(4x4, 3x3) matrix products through the packed path's microkernels.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_WINOGRAD_CONV_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_WINOGRAD_CONV_H_

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/structured/fusion.h"
#include "compiler/targets/llvm_cpu/packed_gemm.h"
#include "compiler/targets/llvm_cpu/target.h"
#include "compiler/targets/llvm_cpu/tile_emitter.h"
#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// If the region's root is a Winograd root (structured::WinogradRoot, set
// by structured::transformWinogradWeights), emits the workgroup's tile
// (loop ranges [lo[d], hi[d]) per root loop) at the builder's insertion
// point inside |fn| and returns true: the input's patches of each m x m
// output tile are transformed into (m + 2)^2 panels, that many matrix
// products with the transformed weights (the region's binding of the
// root's weights operand) run through packedGemmKernel or
// packedGemmTransposedKernel, and the products are transformed back into
// output rows that the epilogue applies the region's fused ops to through
// |hooks|; the schedule is derived with options.winograd, which must be
// the options the program was fused with. Returns false, emitting
// nothing, for other roots. Errors:
// INTERNAL when the root cannot be emitted as planned (a target without
// vectors, or a schedule or weight shape other than the structured pass
// chose: the program was fused with other FusionOptions); those of |hooks|.
absl::StatusOr<bool> emitWinogradConv(const dispatch::DispatchProgram &program,
                                      const dispatch::DispatchRegion &region,
                                      llvm::IRBuilder<> &builder,
                                      llvm::Function *fn,
                                      llvm::ArrayRef<llvm::Value *> lo,
                                      llvm::ArrayRef<llvm::Value *> hi,
                                      const TileHooks &hooks,
                                      const CodegenOptions &options);

// |tuning| with the microkernel fields of FusionOptions set for a target
// with GEMM kernel |shape|, or for |target|: what structured::fuseAndTile
// needs to make Winograd decisions this code generator implements.
structured::FusionOptions
fusionOptionsFor(const GemmKernelShape &shape,
                 structured::FusionOptions tuning = {});
structured::FusionOptions
fusionOptionsFor(const CpuTarget &target,
                 structured::FusionOptions tuning = {});

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_WINOGRAD_CONV_H_
