#include "compiler/targets/npu/npu_target.h"

#include <deque>

#include "absl/strings/str_cat.h"
#include "compiler/graph/status.h"
#include "compiler/targets/npu/offload.h"
#include "drivers/npu/sim/command_stream.h"

namespace osprey::compiler::npu {

std::string NpuTarget::executableFormat() const { return kNpuFormat; }

targets::BindingLayout NpuTarget::bindingLayout() const {
  targets::BindingLayout layout;
  layout.maxBindings = NPU_MAX_BINDINGS;
  layout.maxEmbeddedConstantBytes = -1;
  return layout;
}

absl::StatusOr<targets::Executable>
NpuTarget::buildExecutable(const dispatch::DispatchProgram &program,
                           const targets::BuildOptions &options) {
  (void)options;
  std::deque<CompiledStream> streams;
  std::vector<BlobExportSpec> exports;
  for (const dispatch::DispatchRegion &r : program.regions) {
    const structured::StructuredOp &root = program.program.ops[r.ops[0]];
    if (r.ops.size() != 1 || !root.external ||
        root.external->format() != kNpuFormat) {
      return absl::InvalidArgumentError("node '" + r.loc +
                                        "': region " + r.name +
                                        " is not an npu-v1 chain");
    }
    const auto &kernel = static_cast<const NpuKernel &>(*root.external);
    auto bindingOf = [&](unsigned tensor, bool write) -> absl::StatusOr<uint32_t> {
      for (size_t b = 0; b < r.bindings.size(); ++b) {
        if (r.bindings[b].tensor == tensor && r.bindings[b].write == write) {
          return static_cast<uint32_t>(b);
        }
      }
      return absl::InternalError(
          "node '" + r.loc + "': tensor '" + program.program.tensors[tensor].name +
          "' is not bound by region " + r.name);
    };
    // Operand position -> binding.
    std::vector<uint32_t> binding(kernel.outputOperand() + 1, 0);
    for (unsigned k = 0; k < kernel.inputCount(); ++k) {
      COMPILER_ASSIGN_OR_RETURN(binding[k],
                                bindingOf(root.inputs[k].tensor, false));
    }
    const bool hasWeights = root.inputs.size() > kernel.inputCount();
    if (hasWeights) {
      COMPILER_ASSIGN_OR_RETURN(
          binding[kernel.weightOperand()],
          bindingOf(root.inputs[kernel.weightOperand()].tensor, false));
    }
    COMPILER_ASSIGN_OR_RETURN(binding[kernel.outputOperand()],
                              bindingOf(root.output.tensor, true));
    NpuChain chain = kernel.chain();
    for (NpuLayer &layer : chain.layers) {
      for (Operand *o : {&layer.in, &layer.in2, &layer.dst}) {
        if (o->kind == Operand::Kind::Binding) {
          o->binding = binding[o->binding];
        }
      }
    }
    chain.weightBinding = hasWeights ? binding[kernel.weightOperand()] : 0;
    chain.scratchBinding = static_cast<uint32_t>(r.bindings.size());
    absl::StatusOr<CompiledStream> stream = emitChain(chain, config_);
    if (!stream.ok()) {
      return absl::Status(stream.status().code(),
                          absl::StrCat("node '", r.loc, "': ",
                                       stream.status().message()));
    }
    if (stream->weights != kernel.trial().weights ||
        stream->scratchBytes != 0 ||
        stream->bindingCount > r.bindings.size()) {
      return absl::InternalError(
          "node '" + r.loc + "': the chain's stream changed when its "
          "bindings were placed");
    }
    streams.push_back(std::move(*stream));
    exports.push_back({r.name, &streams.back()});
  }
  COMPILER_ASSIGN_OR_RETURN(std::vector<uint8_t> blob, writeBlob(exports));
  // The driver's own checks, at compile time: a stream that would not load
  // is a compiler error, not a run-time one.
  drivers::npu::sim::BlobView view;
  if (osprey::Status s = drivers::npu::sim::BlobView::Parse(blob, &view); !s.ok()) {
    return absl::InternalError(absl::StrCat(
        "the npu-v1 executable does not verify: ",
        s.message() ? s.message() : ""));
  }
  targets::Executable executable;
  executable.format = kNpuFormat;
  executable.data = std::move(blob);
  // The streams address SRAM below the pool and weight memory up to the
  // configuration's sizes: a smaller device would fault.
  const std::string advice =
      "compile for the device (osprey-compile --accelerator=" +
      config_.toString() + " describes the one compiled for)";
  executable.requirements = {
      {"npu.stream_sram_bytes", int64_t(config_.streamSramBytes()), advice},
      {"npu.weight_memory_bytes", int64_t(config_.weightBytes), advice},
  };
  return executable;
}

} // namespace osprey::compiler::npu
