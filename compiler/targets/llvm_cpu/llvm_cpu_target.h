// The LLVM CPU target behind the target interface: executables are the
// fixed-ABI dispatch libraries of library.h, either embedded in the module
// as an ELF (format "elf-<arch>") or linked into the application as a static
// library (format "static", the module naming the library).
#ifndef OSPREY_COMPILER_TARGETS_LLVM_CPU_LLVM_CPU_TARGET_H_
#define OSPREY_COMPILER_TARGETS_LLVM_CPU_LLVM_CPU_TARGET_H_

#include <memory>

#include "compiler/targets/llvm_cpu/codegen_options.h"
#include "compiler/targets/llvm_cpu/target.h"
#include "compiler/targets/target.h"

namespace osprey::compiler::llvm_cpu {

struct LlvmCpuTargetOptions {
  // The library is a static library (an object and a C header written
  // beside the module) instead of an ELF embedded in the module.
  bool staticLibrary = false;
  // Fusion tuning; the microkernel fields come from the CPU.
  structured::FusionOptions fusion;
  // Code generator tuning; its Winograd options are replaced by
  // fusion.winograd (the code generator must see what fusion decided).
  CodegenOptions codegen;
};

class LlvmCpuTarget final : public targets::Target {
public:
  LlvmCpuTarget(CpuTarget cpu, LlvmCpuTargetOptions options);

  // The target for CPU |name| (resolveCpuTarget: host, x86_64, armv7em,
  // riscv32; |cpu| overrides the CPU). Its errors.
  static absl::StatusOr<std::unique_ptr<LlvmCpuTarget>>
  create(llvm::StringRef name, llvm::StringRef cpu,
         LlvmCpuTargetOptions options);

  const CpuTarget &cpu() const { return cpu_; }

  llvm::StringRef name() const override { return "llvm-cpu"; }
  // "static" for static libraries, else the CPU's ELF format.
  std::string executableFormat() const override;
  structured::FusionOptions fusionOptions() const override;
  // 32 bindings (the hal module's limit); constants up to 256 bytes stay
  // in the code, where LLVM folds them.
  targets::BindingLayout bindingLayout() const override;
  // An ELF library (buildExecutableLibrary) named |options.name|, or a
  // static library (buildStaticLibrary) whose object ("o") and header ("h")
  // are Executable::files and whose name is the executable's data. Errors
  // those of library.h.
  absl::StatusOr<targets::Executable>
  buildExecutable(const dispatch::DispatchProgram &program,
                  const targets::BuildOptions &options) override;

private:
  CpuTarget cpu_;
  LlvmCpuTargetOptions options_;
};

} // namespace osprey::compiler::llvm_cpu

#endif // OSPREY_COMPILER_TARGETS_LLVM_CPU_LLVM_CPU_TARGET_H_
