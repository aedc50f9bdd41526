// Code generation for max pooling windows (MaxPool) on vector targets.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_POOL_WINDOW_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_POOL_WINDOW_H_

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/tile_emitter.h"
#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// If the region's root is an f32 max pool (see planPoolWindow in
// pool_window.cpp: body max(out, in0) from init -inf, one input read
// through a 2-D window of dilation 1 and column stride 1 or 2, padding -inf
// or none, every window row range meeting the input), the target has vector
// registers and a row has at least a vector of interior columns (windows
// inside the input), emits the workgroup's tile (loop ranges [lo[d], hi[d])
// per root loop) at the builder's insertion point inside |fn| and returns
// true: each output row's interior columns are computed a vector at a time
// from contiguous loads and shuffles, the border columns element by element
// through |hooks|.load (padding applied); fused ops run through
// |hooks|.finish. Returns false, emitting nothing, otherwise (scalar
// targets keep the generic loop nest). Errors come from |hooks|.
absl::StatusOr<bool> emitPoolWindow(const dispatch::DispatchProgram &program,
                                    const dispatch::DispatchRegion &region,
                                    llvm::IRBuilder<> &builder,
                                    llvm::Function *fn,
                                    llvm::ArrayRef<llvm::Value *> lo,
                                    llvm::ArrayRef<llvm::Value *> hi,
                                    const TileHooks &hooks,
                                    const CodegenOptions &options);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_POOL_WINDOW_H_
