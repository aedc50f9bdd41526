// CPU target descriptions and TargetMachine creation.
#include "compiler/targets/llvm_cpu/target.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"

namespace osprey::compiler::llvm_cpu {

absl::StatusOr<CpuTarget> resolveCpuTarget(llvm::StringRef name,
                                           llvm::StringRef cpu) {
  CpuTarget t;
  t.name = name.str();
  if (name == "host") {
    llvm::Triple host(llvm::sys::getProcessTriple());
    if (host.getArch() != llvm::Triple::x86_64) {
      return absl::UnimplementedError(
          "target 'host' is only implemented on x86-64 hosts (this host is " +
          host.str() + ")");
    }
    t.triple = "x86_64-unknown-linux-gnu";
    t.cpu = llvm::sys::getHostCPUName().str();
    std::string features;
    for (const auto &f : llvm::sys::getHostCPUFeatures()) {
      features += (features.empty() ? "" : ",") +
                  std::string(f.second ? "+" : "-") + f.first().str();
    }
    t.features = features;
    t.elfFormat = "elf-x86_64";
  } else if (name == "x86_64") {
    // x86-64-v3: AVX2 and FMA.
    t.triple = "x86_64-unknown-linux-gnu";
    t.cpu = "x86-64-v3";
    t.elfFormat = "elf-x86_64";
  } else if (name == "armv7em") {
    t.triple = "thumbv7em-none-eabihf";
    t.cpu = "cortex-m4";
    t.features = "+vfp4d16sp,+thumb-mode";
    t.elfFormat = "elf-armv7em";
    t.embedded = true;
  } else if (name == "riscv32") {
    t.triple = "riscv32-unknown-elf";
    t.cpu = "generic-rv32";
    t.features = "+m,+f";
    t.abi = "ilp32f";
    t.elfFormat = "elf-riscv32";
    t.embedded = true;
  } else {
    return absl::InvalidArgumentError(
        "unknown target '" + name.str() +
        "' (expected host, x86_64, armv7em or riscv32)");
  }
  if (!cpu.empty()) {
    t.cpu = cpu.str();
  }
  if (name == "x86_64") {
    // The code generators choose kernels by feature (AVX-512, VNNI), so the
    // CPU's features are spelled out: --target-cpu=icelake-server gets the
    // same kernels as a host of that kind.
    if (!llvm::X86::parseArchX86(t.cpu, /*Only64Bit=*/true)) {
      return absl::InvalidArgumentError("unknown x86-64 CPU '" + t.cpu +
                                        "' (--target-cpu)");
    }
    llvm::SmallVector<llvm::StringRef, 64> features;
    llvm::X86::getFeaturesForCPU(t.cpu, features, /*NeedPlus=*/true);
    for (llvm::StringRef f : features) {
      t.features += (t.features.empty() ? "" : ",") + f.str();
    }
  }
  return t;
}

absl::StatusOr<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const CpuTarget &target, bool positionIndependent) {
  static bool initialized = [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
    return true;
  }();
  (void)initialized;
  std::string error;
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!llvmTarget) {
    return absl::UnavailableError("LLVM has no backend for '" + target.triple +
                                  "': " + error);
  }
  llvm::TargetOptions options;
  options.MCOptions.ABIName = target.abi;
  options.FloatABIType = llvm::FloatABI::Hard;
  std::unique_ptr<llvm::TargetMachine> tm(llvmTarget->createTargetMachine(
      target.triple, target.cpu, target.features, options,
      positionIndependent ? llvm::Reloc::PIC_ : llvm::Reloc::Static,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) {
    return absl::UnavailableError("cannot create a target machine for '" +
                                  target.triple + "' cpu '" + target.cpu + "'");
  }
  return tm;
}

} // namespace osprey::compiler::llvm_cpu
