// The npu-v1 code generator behind the target interface: it builds the
// dispatch regions of NPU chains (structured ops whose external kernel is an
// NpuKernel, see offload.h) into one npu-v1 executable, export i being the
// i-th region it is given.
#ifndef OSPREY_COMPILER_TARGETS_NPU_NPU_TARGET_H_
#define OSPREY_COMPILER_TARGETS_NPU_NPU_TARGET_H_

#include "compiler/targets/npu/npu_config.h"
#include "compiler/targets/target.h"

namespace osprey::compiler::npu {

class NpuTarget final : public targets::Target {
public:
  explicit NpuTarget(NpuConfig config) : config_(config) {}

  llvm::StringRef name() const override { return "npu"; }
  std::string executableFormat() const override;
  // The NPU takes no part in fusion: its regions are whole chains.
  structured::FusionOptions fusionOptions() const override { return {}; }
  // 32 bindings; every constant (the packed weights) is bound.
  targets::BindingLayout bindingLayout() const override;
  // Compiles each region's chain with the region's bindings: its
  // activations, the weight constant and its result where memory planning
  // put them. INVALID_ARGUMENT for a region that is not an NPU chain;
  // INTERNAL if the stream differs from the one checked when the chain was
  // formed (other weights) or the blob does not verify.
  absl::StatusOr<targets::Executable>
  buildExecutable(const dispatch::DispatchProgram &program,
                  const targets::BuildOptions &options) override;

private:
  NpuConfig config_;
};

} // namespace osprey::compiler::npu

#endif // OSPREY_COMPILER_TARGETS_NPU_NPU_TARGET_H_
