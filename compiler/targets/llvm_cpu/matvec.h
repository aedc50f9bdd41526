// Integer matrix-vector products (fully connected layers at batch 1) on
// targets with the Arm DSP extension or AVX-512 VNNI.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_MATVEC_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_MATVEC_H_

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/tile_emitter.h"
#include "llvm/IR/IRBuilder.h"

namespace osprey::compiler::llvm_cpu {

// If the region's root has a structured::MatVecPlan whose weights have rows
// of k (structured::hasMatVecRows) and the target has the DSP extension,
// emits the workgroup's tile (loop ranges [lo[d], hi[d]) per root loop) at
// the builder's insertion point inside |fn|:
//   per vector x (mLoops): its k steps sign-extended once into words of i16
//     pairs, steps (4g, 4g+2) then (4g+1, 4g+3), zero past K;
//   per block of kMatVecRows outputs n: one 32-bit load of four weight
//     steps per row, SXTB16 and SXTB16 ROR 8 give the same two pairs, two
//     SMLADs add their products, the x pairs loaded once for all rows;
//   then the region's epilogue per output.
// With AVX-512 VNNI (constant weights): x is stored once as bytes x + 128,
// each row's dot product is one VPDPBUSD per 64 steps (unsigned x bytes
// times signed weights), and -128 * (sum of the row), computed at compile
// time, is added back: exact in wrapping i32 arithmetic.
// Returns false, emitting nothing, otherwise. Errors come from |hooks|.
absl::StatusOr<bool> emitMatVec(const dispatch::DispatchProgram &program,
                                const dispatch::DispatchRegion &region,
                                llvm::IRBuilder<> &builder, llvm::Function *fn,
                                llvm::ArrayRef<llvm::Value *> lo,
                                llvm::ArrayRef<llvm::Value *> hi,
                                const TileHooks &hooks,
                                const CodegenOptions &options);

// Whether targets with triple |triple| and CPU features |features| run
// emitMatVec (structured::FusionOptions::matVecRows).
bool hasMatVecKernel(llvm::StringRef triple, llvm::StringRef features);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_MATVEC_H_
