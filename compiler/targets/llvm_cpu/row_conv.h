// Row-by-row code generation for convolution roots without a matrix-product
// form (depthwise convolutions with long output rows).
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_ROW_CONV_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_ROW_CONV_H_

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/tile_emitter.h"
#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// If the region's root is f32 and has a structured::RowConvPlan, emits the
// workgroup's tile (loop ranges [lo[d], hi[d]) per root loop) at the
// builder's insertion point inside |fn| row by row, then the epilogue, and
// returns true. Returns false, emitting nothing, otherwise. Errors come from
// |hooks|.
absl::StatusOr<bool> emitRowConv(const dispatch::DispatchProgram &program,
                                 const dispatch::DispatchRegion &region,
                                 llvm::IRBuilder<> &builder, llvm::Function *fn,
                                 llvm::ArrayRef<llvm::Value *> lo,
                                 llvm::ArrayRef<llvm::Value *> hi,
                                 const TileHooks &hooks);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_ROW_CONV_H_
