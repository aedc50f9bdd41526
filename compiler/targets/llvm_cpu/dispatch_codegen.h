// Generates one LLVM function per dispatch region with the fixed dispatch
// ABI of hal/local/executable_library.h.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_DISPATCH_CODEGEN_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_DISPATCH_CODEGEN_H_

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/codegen_options.h"
#include "llvm/IR/Module.h"

namespace osprey::compiler::llvm_cpu {

// The ABI structure types, laid out by |module|'s data layout exactly as the
// C structures of executable_library.h.
struct AbiTypes {
  explicit AbiTypes(llvm::Module &module);
  llvm::StructType *dispatchState;  // osprey_dispatch_state_v1_t
  llvm::StructType *workgroupState; // osprey_workgroup_state_v1_t
  llvm::StructType *dispatchAttrs;  // osprey_dispatch_attrs_v1_t
  llvm::StructType *header;         // osprey_executable_library_header_t
  llvm::StructType *library;        // osprey_executable_library_v1_t
  llvm::FunctionType *dispatchFn;   // osprey_dispatch_fn_t
};

// Emits `int region.name(env, dispatch_state, workgroup_state)` into
// |module| (whose data layout and triple are set). The function computes the
// workgroup's tile of the root's parallel loops (x, y, z as in
// DispatchRegion::tiledLoops), loops over it, runs reduction loops inside,
// applies the fused epilogue ops element by element and stores the result;
// binding i is region.bindings[i]. Returns 0. Convolution and contraction
// roots of matrix-product form (and depthwise convolutions with long rows)
// take the packed paths of packed_gemm.h instead of the generic loops,
// tuned by |options|.
// UNIMPLEMENTED naming the node for element types other than f32 and for
// scalar operations without an expansion.
absl::StatusOr<llvm::Function *>
emitDispatchFunction(const dispatch::DispatchProgram &program,
                     const dispatch::DispatchRegion &region,
                     llvm::Module &module, const CodegenOptions &options = {});

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_DISPATCH_CODEGEN_H_
