// Fusion and tiling decisions on structured ops.
#ifndef OSPREY_COMPILER_STRUCTURED_FUSION_H_
#define OSPREY_COMPILER_STRUCTURED_FUSION_H_

#include "absl/status/status.h"
#include "compiler/structured/structured_ir.h"

namespace osprey::compiler::structured {

// Makes fusion decisions from iterator types, indexing maps and body shape
// only (never from the graph op an op came from):
//  1. A pure copy with a permutation/broadcast read (transpose, expand) is
//     folded into its consumers by composing indexing maps, then removed.
//  2. An all-parallel op joins the group of the producer it reads through an
//     identity map when it is that value's only consumer: elementwise chains
//     fuse, and elementwise ops after a contraction, convolution or reduction
//     become its epilogue (bias, activation, residual add).
//  3. Each group gets tile sizes for the root's parallel loops (reduction
//     loops are not tiled), a 3-D workgroup grid, and a microkernel flag when
//     the root is a contraction.
// Fills |program.groups| and each op's FusionInfo. Views join no group.
absl::Status fuseAndTile(StructuredProgram &program);

} // namespace osprey::compiler::structured

#endif // OSPREY_COMPILER_STRUCTURED_FUSION_H_
