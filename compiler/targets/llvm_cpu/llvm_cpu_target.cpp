// The LLVM CPU target behind the target interface.
#include "compiler/targets/llvm_cpu/llvm_cpu_target.h"

#include "compiler/targets/llvm_cpu/library.h"
#include "compiler/targets/llvm_cpu/winograd_conv.h"

namespace osprey::compiler::llvm_cpu {

LlvmCpuTarget::LlvmCpuTarget(CpuTarget cpu, LlvmCpuTargetOptions options)
    : cpu_(std::move(cpu)), options_(std::move(options)) {
  options_.codegen.winograd = options_.fusion.winograd;
}

absl::StatusOr<std::unique_ptr<LlvmCpuTarget>>
LlvmCpuTarget::create(llvm::StringRef name, llvm::StringRef cpu,
                      LlvmCpuTargetOptions options) {
  absl::StatusOr<CpuTarget> resolved = resolveCpuTarget(name, cpu);
  if (!resolved.ok()) {
    return resolved.status();
  }
  return std::make_unique<LlvmCpuTarget>(std::move(*resolved),
                                         std::move(options));
}

std::string LlvmCpuTarget::executableFormat() const {
  return options_.staticLibrary ? "static" : cpu_.elfFormat;
}

structured::FusionOptions LlvmCpuTarget::fusionOptions() const {
  return fusionOptionsFor(cpu_, options_.fusion);
}

targets::BindingLayout LlvmCpuTarget::bindingLayout() const {
  return targets::BindingLayout{};
}

absl::StatusOr<targets::Executable>
LlvmCpuTarget::buildExecutable(const dispatch::DispatchProgram &program,
                               const targets::BuildOptions &options) {
  LibraryOptions library;
  library.name = options.name;
  library.llvmIr = options.irText;
  library.codegen = options_.codegen;
  targets::Executable executable;
  executable.format = executableFormat();
  if (options_.staticLibrary) {
    absl::StatusOr<StaticLibrary> built =
        buildStaticLibrary(program, cpu_, library);
    if (!built.ok()) {
      return built.status();
    }
    executable.data.assign(library.name.begin(), library.name.end());
    executable.files.push_back({"o", std::move(built->object)});
    executable.files.push_back(
        {"h", std::vector<uint8_t>(built->header.begin(), built->header.end())});
    return executable;
  }
  absl::StatusOr<std::vector<uint8_t>> built =
      buildExecutableLibrary(program, cpu_, library);
  if (!built.ok()) {
    return built.status();
  }
  executable.data = std::move(*built);
  return executable;
}

} // namespace osprey::compiler::llvm_cpu
