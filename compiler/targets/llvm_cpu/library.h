// Builds the fixed-ABI executable library of a dispatch program: one LLVM
// function per region, the export tables and the query function, optimized
// and compiled to an object. The object is either linked in-process with lld
// into an ET_DYN (embedded in the module, loaded by the ELF loader) or kept
// as a relocatable object plus a C header for linking into firmware (found by
// the static loader by name).
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_LIBRARY_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_LIBRARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/targets/llvm_cpu/codegen_options.h"
#include "compiler/targets/llvm_cpu/target.h"

namespace osprey::compiler::llvm_cpu {

struct LibraryOptions {
  std::string name;            // library name reported by the query
  std::string *llvmIr = nullptr; // if set, receives the optimized module text
  // Symbol of the query function; empty: osprey_executable_library_query,
  // the one symbol the ELF loader looks up.
  std::string queryName;
  // Tuning of the code generator.
  CodegenOptions codegen;
};

// Export i of the library is program.regions[i]; its attributes declare the
// region's bindings (the last one written) and a 1x1x1 workgroup size.
// Errors: those of emitDispatchFunction; INTERNAL when LLVM rejects the
// module or the object cannot be emitted; the linker's message when lld
// fails (e.g. an undefined symbol).
absl::StatusOr<std::vector<uint8_t>>
buildExecutableLibrary(const dispatch::DispatchProgram &program,
                       const CpuTarget &target, const LibraryOptions &options);

// The relocatable ELF object of the library, before linking. Position
// independent when |positionIndependent| (required for shared objects and
// for objects linked into PIE host programs); otherwise absolute code, as
// firmware is linked at fixed addresses. Errors as buildExecutableLibrary,
// minus linking.
absl::StatusOr<std::vector<uint8_t>>
buildExecutableObject(const dispatch::DispatchProgram &program,
                      const CpuTarget &target, const LibraryOptions &options,
                      bool positionIndependent);

// A library for the runtime's static loader: an object to link into the
// application and a C header declaring its query function.
struct StaticLibrary {
  std::string queryName;       // "<name>_library_query"
  std::vector<uint8_t> object; // relocatable ELF, defines only queryName
  std::string header;          // C99 header text
};

// Builds the static library named |options.name| (which must be a C
// identifier: it becomes part of the query symbol) for |target|. The object
// defines exactly one global symbol, the query function, and references no
// symbol outside itself. INVALID_ARGUMENT for a name that is not a C
// identifier; INTERNAL if the object would need an undefined symbol (naming
// it); otherwise the errors of buildExecutableObject.
absl::StatusOr<StaticLibrary>
buildStaticLibrary(const dispatch::DispatchProgram &program,
                   const CpuTarget &target, const LibraryOptions &options);

// Links |object| into a position-independent shared object with lld
// (-shared -nostdlib -Bsymbolic -z now --no-undefined, plus -z norelro
// -z max-page-size=4096 for embedded targets). Not thread-safe: lld keeps
// global state, so callers link one library at a time.
absl::StatusOr<std::vector<uint8_t>>
linkSharedLibrary(llvm::ArrayRef<char> object, const CpuTarget &target);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_LIBRARY_H_
