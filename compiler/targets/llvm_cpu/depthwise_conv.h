// Code generation for depthwise (and grouped) convolutions through a padded
// scratch copy of each input plane.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_DEPTHWISE_CONV_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_DEPTHWISE_CONV_H_

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/tile_emitter.h"
#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// If the region's root (f32, or i8/i16 operands accumulating in i32, whose
// planes then hold the input widened to i32) has a structured::RowConvPlan
// and one row of
// its planes fits the target's scratch budget, emits the workgroup's tile
// (loop ranges [lo[d], hi[d]) per root loop) at the builder's insertion
// point inside |fn| and returns true: per plane and block of output rows,
// the input rows are copied once into padded scratch planes on the stack
// (split by stride phase), every window tap is then a contiguous vector
// load, and the epilogue runs row by row through |hooks|. Returns false,
// emitting nothing, otherwise. When the region has a prologue
// (DispatchRegion::prologue: ops computing the convolution's input), the
// planes' rows are computed from the prologue's operands instead, and
// UNIMPLEMENTED is returned where that is not possible (nothing else can
// compute the prologue). Other errors come from |hooks|.
absl::StatusOr<bool> emitDepthwiseConv(const dispatch::DispatchProgram &program,
                                       const dispatch::DispatchRegion &region,
                                       llvm::IRBuilder<> &builder,
                                       llvm::Function *fn,
                                       llvm::ArrayRef<llvm::Value *> lo,
                                       llvm::ArrayRef<llvm::Value *> hi,
                                       const TileHooks &hooks,
                                       const CodegenOptions &options);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_DEPTHWISE_CONV_H_
