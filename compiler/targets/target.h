// The interface between the target-independent compiler and a code
// generator. Fusion, dispatch region formation, memory planning and the VM
// backend know a target only through it: the fusion decisions its code
// generator needs, how its dispatches take their operands, and how the
// executable of a dispatch program is produced and named. llvm_cpu/
// implements it for CPUs (ELF or static-library executables); a target for
// another device (an NPU emitting command streams) goes beside it in
// compiler/targets/<name>/.
#ifndef OSPREY_COMPILER_TARGETS_TARGET_H_
#define OSPREY_COMPILER_TARGETS_TARGET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/dispatch/dispatch_ir.h"
#include "compiler/structured/fusion.h"
#include "llvm/ADT/StringRef.h"

namespace osprey::compiler::targets {

// How a target's dispatches take their operands. Every target follows the
// dispatch ABI the VM backend emits calls for:
//  - one executable holds every region of the program, export i being
//    program.regions[i];
//  - a dispatch binds region.bindings in order (the reads, then the
//    writes) as buffer bindings, with no push constants;
//  - it runs region.workgroupCount workgroups (x, y, z).
// What varies per target is described here; memory planning reads it.
struct BindingLayout {
  // Most bindings one dispatch takes.
  unsigned maxBindings = dispatch::kMaxRegionBindings;
  // Constants of at most this many bytes may be embedded in the
  // executable; larger ones are bound from the module's rodata. -1: the
  // executable embeds none (every constant is bound).
  int64_t maxEmbeddedConstantBytes = dispatch::kMaxEmbeddedConstantBytes;
};

// An executable as the module records it, and the files a build writes
// beside the module.
struct Executable {
  // The runtime's executable format name (hal::ExecutableParams::format),
  // e.g. "elf-x86_64", "static" or "npu-v1".
  std::string format;
  // The executable's bytes as stored in the module (for "static", the name
  // of the library linked into the application).
  std::vector<uint8_t> data;
  // Written next to the module, named as the module with |extension|
  // (e.g. a static library's object "o" and C header "h").
  struct File {
    std::string extension;
    std::vector<uint8_t> bytes;
  };
  std::vector<File> files;
  // What the device that runs it must report through its queries
  // (hal::Device::QueryI64: |key| at least |minimum|), e.g. the NPU memory
  // the code was compiled for. A call checks them when it selects the
  // device, and fails naming |key|, both values and |advice|.
  struct Requirement {
    std::string key;
    int64_t minimum = 0;
    std::string advice;
  };
  std::vector<Requirement> requirements;
};

struct BuildOptions {
  // Name of the executable or library (a C identifier).
  std::string name;
  // If set, receives the target's textual IR of the build (llvm-cpu: the
  // optimized LLVM IR).
  std::string *irText = nullptr;
};

// A code generator. Implementations are configured when created (options
// structs, never global state), so several targets can exist in one
// process. Not thread-safe.
class Target {
public:
  virtual ~Target();

  // The target's name, e.g. "llvm-cpu".
  virtual llvm::StringRef name() const = 0;
  // The executable format buildExecutable produces.
  virtual std::string executableFormat() const = 0;
  // What structured::fuseAndTile needs to know of this code generator
  // (microkernel shape, target-dependent rewrites and their tuning).
  virtual structured::FusionOptions fusionOptions() const = 0;
  // How this target's dispatches take their operands.
  virtual BindingLayout bindingLayout() const = 0;
  // Builds the executable of every region of |program|, which was fused
  // with fusionOptions() and planned with planOptionsFor(*this) (or
  // options derived from them). Errors name the region's node where one
  // cannot be compiled.
  virtual absl::StatusOr<Executable>
  buildExecutable(const dispatch::DispatchProgram &program,
                  const BuildOptions &options) = 0;
};

// The memory planning options that match |target|'s binding layout.
dispatch::PlanOptions planOptionsFor(const Target &target);

// |program| with only |regions| (indices, in the order given), one dispatch
// command each: what one target builds when a program's regions run on
// several devices (export k then computes program.regions[regions[k]]).
dispatch::DispatchProgram regionSubset(const dispatch::DispatchProgram &program,
                                       const std::vector<unsigned> &regions);

} // namespace osprey::compiler::targets

#endif // OSPREY_COMPILER_TARGETS_TARGET_H_
