// CPU target descriptions for the LLVM CPU backend (triple, CPU, features,
// link flavour) and TargetMachine creation.
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_TARGET_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_TARGET_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "llvm/Target/TargetMachine.h"

namespace osprey::compiler::llvm_cpu {

struct CpuTarget {
  std::string name;      // host, x86_64, armv7em or riscv32
  std::string triple;
  std::string cpu;
  std::string features;
  std::string abi;       // target ABI name, empty for the default
  std::string elfFormat; // runtime executable format ("elf-x86_64", ...)
  bool embedded = false; // bare metal: -z norelro -z max-page-size=4096
};

// Resolves |name| (host, x86_64, armv7em, riscv32). |cpu| overrides the
// default CPU when not empty; "host" uses the CPU and features of this
// machine. INVALID_ARGUMENT for unknown names; UNIMPLEMENTED for a host
// that is not x86-64.
absl::StatusOr<CpuTarget> resolveCpuTarget(llvm::StringRef name,
                                           llvm::StringRef cpu = "");

// A TargetMachine for |target| at -O3: position-independent code when
// |positionIndependent|, otherwise the static relocation model.
absl::StatusOr<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const CpuTarget &target, bool positionIndependent = true);

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_TARGET_H_
