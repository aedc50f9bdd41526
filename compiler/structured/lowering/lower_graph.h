// Lowering of graph ops to structured ops: the entry point. Each op kind's
// lowering is looked up in a table (lower_graph.cpp) and lives in the file of
// its op family (families.h).
#ifndef OSPREY_COMPILER_STRUCTURED_LOWERING_LOWER_GRAPH_H_
#define OSPREY_COMPILER_STRUCTURED_LOWERING_LOWER_GRAPH_H_

#include <functional>

#include "absl/status/statusor.h"
#include "compiler/graph/ir.h"
#include "compiler/structured/lowering/lowering.h"
#include "compiler/structured/structured_ir.h"

namespace osprey::compiler::structured::lowering {

// Lowers every op of |graph| (static shapes required) to structured ops:
// elementwise and broadcast ops to all-parallel ops, Transpose/Slice/Pad to
// copies with affine reads, Concat to padded shifted reads summed, Split to
// one shifted copy per result, reductions, MatMul/Gemm to contractions, Conv
// and pools to windowed reductions with padded reads, ConvTranspose to a
// spreading copy (strides > 1) and a stride-1 windowed reduction, Gather with
// constant indices to summed padded reads (out-of-range indices are
// INVALID_ARGUMENT), Resize (nearest, linear) and edge/reflect Pad to one op
// per axis of affine, spreading or summed shifted reads; Softmax,
// LayerNormalization and ReduceMean decompose into several ops; reshapes become
// views. Bias, alpha/beta and averaging become separate elementwise ops that
// fusion puts back as epilogues. Returns UNIMPLEMENTED naming the node for what
// has no lowering yet (Gather with run-time indices, Resize's
// tf_crop_and_resize; Shape must have been constant-folded) and
// INVALID_ARGUMENT for dynamic shapes. An op kind without an entry in the table
// is UNIMPLEMENTED.
//
// |lowerOverride|, when given, sees every op first and returns true when it
// has lowered the op itself (an accelerator that takes chains of ops as
// external kernels lowers them, and skips the ops inside a chain).
using OpOverride =
    std::function<absl::StatusOr<bool>(LoweringContext &, const graph::Op &)>;
absl::StatusOr<StructuredProgram>
lowerToStructured(const graph::Graph &graph,
                  const OpOverride &lowerOverride = {});

} // namespace osprey::compiler::structured::lowering

#endif // OSPREY_COMPILER_STRUCTURED_LOWERING_LOWER_GRAPH_H_
