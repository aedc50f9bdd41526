// Builds the fixed-ABI executable library of a dispatch program: one LLVM
// function per region, the export tables and the query function, optimized,
// compiled to an object and linked in-process with lld into an ET_DYN.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_LIBRARY_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_LIBRARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/target.h"

namespace osprey::compiler::llvm_cpu {

struct LibraryOptions {
  std::string name;            // library name reported by the query
  std::string *llvmIr = nullptr; // if set, receives the optimized module text
};

// Export i of the library is program.regions[i]; its attributes declare the
// region's bindings (the last one written) and a 1x1x1 workgroup size.
// Errors: those of emitDispatchFunction; INTERNAL when LLVM rejects the
// module or the object cannot be emitted; the linker's message when lld
// fails (e.g. an undefined symbol).
absl::StatusOr<std::vector<uint8_t>>
buildExecutableLibrary(const dispatch::DispatchProgram &program,
                       const CpuTarget &target, const LibraryOptions &options);

// Links |object| into a position-independent shared object with lld
// (-shared -nostdlib -Bsymbolic -z now --no-undefined, plus -z norelro
// -z max-page-size=4096 for embedded targets). Not thread-safe: lld keeps
// global state, so callers link one library at a time.
absl::StatusOr<std::vector<uint8_t>>
linkSharedLibrary(llvm::ArrayRef<char> object, const CpuTarget &target);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_LIBRARY_H_
