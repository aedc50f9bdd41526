// Tuning of the LLVM CPU code generator. Each compilation passes its own
// options down (LibraryOptions::codegen), so two targets, or two
// compilations in one process, are configured independently; the defaults
// are the measured choices (docs/performance.md).
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_CODEGEN_OPTIONS_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_CODEGEN_OPTIONS_H_

#include "compiler/structured/fusion.h"

namespace osprey::compiler::llvm_cpu {

// The packed matrix-product path (packed_gemm.h).
struct GemmOptions {
  // Stack bytes per workgroup (0: the target's default).
  unsigned maxScratch = 0;
  // Vectorize along M when A is laid out with M innermost (as on scalar
  // targets when off).
  bool columnPanels = true;
  // Vectors of output channels per block of the transposed kernel on
  // AVX-512 targets (1-3; 0: chosen per tile).
  unsigned transposedVectors = 0;
};

// The depthwise convolution path (depthwise_conv.h).
struct DepthwiseOptions {
  // f32 lanes of the code (0: the target's; 1: scalar code as for embedded
  // targets).
  unsigned vectorWidth = 0;
  // Stack bytes per workgroup (0: the target's default).
  unsigned maxScratch = 0;
  // Most output rows per iteration of the row-by-row vector loop.
  unsigned maxRows = 4;
  // Stack bytes with a prologue on vector targets (0: 128 KiB).
  unsigned prologueMaxScratch = 0;
  // A prologue's reduction as a loop (else unrolled).
  bool prologueLoop = true;
  // Planes whose prologue rows are computed together (0: 8, or 4 with
  // 8-lane vectors).
  unsigned prologuePlanes = 0;
};

struct CodegenOptions {
  // Max pools through window-row maxima (pool_window.h).
  bool poolWindow = true;
  GemmOptions gemm;
  DepthwiseOptions depthwise;
  // The Winograd options the program was fused with: the code generator
  // derives each Winograd root's schedule again and must find the one its
  // weights were transformed for.
  structured::WinogradOptions winograd;
};

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_CODEGEN_OPTIONS_H_
