// Packed-panel matrix-product code generation for multiply-accumulate roots
// (convolutions and contractions) of dispatch regions.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_PACKED_GEMM_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_PACKED_GEMM_H_

#include <optional>

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/tile_emitter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

namespace osprey::compiler::llvm_cpu {


// What the packed operands and the accumulators hold.
enum class GemmElements : uint8_t {
  // f32 operands and accumulators, one reduction step per multiply-add.
  kF32,
  // i8/i16 operands packed as pairs of i16 (reduction steps 2k and 2k+1 in
  // one 32-bit word) and i32 accumulators: one instruction multiplies two
  // pairs and adds both products (x86 VPDPWSSD or VPMADDWD + VPADDD per
  // lane, Arm SMLAD), wrapping like the i32 accumulation it replaces.
  kI16Pairs,
  // i8 operands packed as quads of bytes (reduction steps 4k .. 4k+3 in one
  // 32-bit word) and i32 accumulators: one x86 VPDPBUSD per lane multiplies
  // four unsigned bytes of B by four signed bytes of A and adds the four
  // products. B's bytes are stored as x + 128 (x XOR 0x80); A is packed at
  // compile time with its row sums, and the epilogue adds -128 * sum(A row)
  // back. Every step is exact in wrapping i32 arithmetic, so the results
  // are those of the i32 accumulation it replaces, bit for bit.
  kI8Quads,
};

// Register blocking of the microkernel for a target.
struct GemmKernelShape {
  unsigned vectorWidth; // 32-bit lanes per vector (1: scalar code)
  unsigned mr;          // rows of A per block (broadcast streams)
  unsigned nv;          // vectors of B per block; NR = vectorWidth * nv
  unsigned kc;          // reduction chunk packed at once (even for pairs)
  uint64_t maxScratch;  // bytes of stack for panels plus accumulators
  GemmElements elements = GemmElements::kF32;
};

// Module flag (an MDString) with the target's CPU feature string, e.g.
// "+avx2,+fma,+avx512f"; set by buildExecutableLibrary.
inline constexpr const char kTargetFeaturesFlag[] = "osprey.target-features";

// The CPU features of module |m| (its kTargetFeaturesFlag; empty when unset).
inline llvm::StringRef targetFeatures(const llvm::Module &m) {
  if (auto *md = llvm::dyn_cast_or_null<llvm::MDString>(
          m.getModuleFlag(kTargetFeaturesFlag))) {
    return md->getString();
  }
  return {};
}

// The blocking used for modules with target triple |triple| and CPU features
// |features|, or nullopt when the target has no kernel for |elements|
// (i16 pairs need a pair multiply-add instruction: AVX2, AVX-512BW or the
// Arm DSP extension; i8 quads AVX-512 VNNI).
std::optional<GemmKernelShape>
gemmKernelShape(llvm::StringRef triple, llvm::StringRef features,
                GemmElements elements);
// The f32 blocking (every target has one).
GemmKernelShape gemmKernelShape(llvm::StringRef triple,
                                llvm::StringRef features);

// Vector width (bits) every dispatch function should prefer on this target,
// or 0 for the backend's default: 512 on AVX-512 targets, whose CPUs are
// often tuned to prefer 256-bit vectors (MobileNetV2 -10%, ResNet-18 -4%
// with 512).
unsigned preferredVectorBits(llvm::StringRef triple, llvm::StringRef features);

// The packed path's microkernel for |shape| with |nv| vectors per row (nv
// is shape.nv, or 1 for a last column chunk no wider than one vector), one
// internal function of |module| per shape and |ld|:
//   void k(const float* a, idx lda, idx ka, idx rows, const float* b,
//          float* c, idx kc)
//   c[r][0..nv*VW) += sum_k a[min(r, rows-1)*lda + k*ka] * b[k][0..nv*VW)
// for r < shape.mr, rows of b and of c |ld| floats apart. Other tile
// emitters reuse it for their own matrix products.
llvm::Function *packedGemmKernel(llvm::Module &module,
                                 const GemmKernelShape &shape, unsigned nv,
                                 int64_t ld);

// The transposed path's microkernel: the same computation with |mr|
// broadcast rows (pixels), rows of b |ldb| floats apart (rows of weights
// with output channels innermost, prefetched 16 steps ahead) and rows of c
// |ldc| apart.
llvm::Function *packedGemmTransposedKernel(llvm::Module &module,
                                          const GemmKernelShape &shape,
                                          unsigned mr, unsigned nv,
                                          int64_t ldb, int64_t ldc);

// If the region's root has a structured::GemmPlan (f32, or i8/i16 operands
// accumulating in i32 on targets with an i16-pair kernel, whose A is packed
// per chunk as well) and its scratch fits the
// target's budget, emits the workgroup's tile at the builder's insertion
// point (inside |fn|, loop ranges [lo[d], hi[d]) per root loop) as packed
// panels of B times A through a register-blocked microkernel (an internal
// function of the module, one per shape), then the epilogue, and returns
// true. On vector targets, roots whose A has its M axis innermost (see
// structured::relayoutGemmOperands) and whose N fits one tile run
// transposed, vectors along M. Returns false, emitting nothing, when the
// root has no GemmPlan, its scratch does not fit or the target has no
// kernel for its element types. Errors
// come from |hooks|.
absl::StatusOr<bool> emitPackedGemm(const dispatch::DispatchProgram &program,
                                    const dispatch::DispatchRegion &region,
                                    llvm::IRBuilder<> &builder,
                                    llvm::Function *fn,
                                    llvm::ArrayRef<llvm::Value *> lo,
                                    llvm::ArrayRef<llvm::Value *> hi,
                                    const TileHooks &hooks,
                                    const CodegenOptions &options);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_PACKED_GEMM_H_
