// Test-only support for the LLVM CPU backend's tests: compiles graph text for
// a CPU target, loads the library with the runtime's ELF loader and runs every
// dispatch over f32 (or raw byte) buffers on this machine.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_TESTING_COMPILED_GRAPH_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_TESTING_COMPILED_GRAPH_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/structured/fusion.h"
#include "hal/local/loaders/elf/elf_loader.h"
#include "runtime/base/status.h"
#include "compiler/targets/llvm_cpu/codegen_options.h"
#include "llvm/ADT/StringRef.h"

namespace osprey::compiler::llvm_cpu::testing {

// Parses |text| and lowers it through lowerToStructured, fuseAndTile (with
// |fusion|: the default makes no target-dependent rewrites),
// formDispatchRegions and planMemory. |sourceName| names the text in
// diagnostics. Errors: those of the parser and of each pass.
absl::StatusOr<dispatch::DispatchProgram>
lowerGraphText(llvm::StringRef text, llvm::StringRef sourceName = "test",
               const structured::FusionOptions &fusion = {});

struct CompileOptions {
  // Target name for resolveCpuTarget ("host", "x86_64", "armv7em", ...).
  std::string target = "host";
  // CPU name overriding the target's (e.g. "skylake-avx512" for x86_64, to
  // inspect AVX-512 code on any host with load = false).
  std::string cpu;
  // Source name for the parser and library name reported by the query.
  std::string name = "test";
  // Fusion tuning (the microkernel fields come from the target) and code
  // generator tuning; the code generator gets fusion.winograd.
  structured::FusionOptions fusion;
  CodegenOptions codegen;
  // Load the library with the ELF loader (off for targets that cannot run
  // on this machine; run() and executable() then must not be called).
  bool load = true;
};

// A graph compiled for one target. Not thread-safe; one compile() per object.
class CompiledGraph {
public:
  // Lowers, builds and (unless options.load is off) loads |text|.
  // Errors: those of lowerGraphText, resolveCpuTarget and
  // buildExecutableLibrary; INTERNAL (with the loader's message) when
  // loading fails.
  absl::Status compile(llvm::StringRef text,
                       const CompileOptions &options = {});
  // compile() for |target| with the other options at their defaults.
  absl::Status compile(llvm::StringRef text, const char *target);

  const dispatch::DispatchProgram &program() const { return program_; }
  // Optimized LLVM IR of the library (for checks of the code path taken).
  const std::string &ir() const { return ir_; }
  // The linked library bytes.
  const std::vector<uint8_t> &library() const { return library_; }
  // The loaded executable; only after a successful compile() with load on.
  const hal::local::LocalExecutable &executable() const { return *executable_; }

  // Index of the tensor named |name|; a test failure and 0 when none is.
  unsigned tensor(llvm::StringRef name) const;

  // Runs all dispatches in order, every workgroup one after another, with
  // |inputs| in graph input order, constants from the program and transients
  // at their planned offsets in one NaN-filled arena. Returns the graph
  // outputs in order. A workgroup returning non-zero is a test failure.
  std::vector<std::vector<float>>
  run(const std::vector<std::vector<float>> &inputs);
  // run() on raw bytes: inputs and outputs of any element type, in their
  // little-endian storage.
  std::vector<std::vector<uint8_t>>
  runBytes(const std::vector<std::vector<uint8_t>> &inputs);

private:
  dispatch::DispatchProgram program_;
  std::string ir_;
  std::vector<uint8_t> library_;
  hal::local::loaders::elf::ElfLoader loader_;
  ref_ptr<hal::local::LocalExecutable> executable_;
};

// |n| values uniform in [lo, hi) from a generator seeded with |seed|.
std::vector<float> randomData(size_t n, float lo, float hi, unsigned seed);
// |n| values uniform in [-1, 1).
std::vector<float> randomData(size_t n, unsigned seed);

// |d| joined by 'x', the shape part of a tensor type ("1x3x8x8").
std::string dims(std::initializer_list<int> d);

// The runtime status as text.
std::string statusText(const osprey::Status &s);

} // namespace osprey::compiler::llvm_cpu::testing

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_TESTING_COMPILED_GRAPH_H_
