// Emission of npu-v1 command streams for one NPU layer or a chain of them.
//
// A chain runs in one stream. Its intermediate tensors (Operand::Resident)
// stay in SRAM when they fit beside the layers' working tiles, so only the
// network's inputs, outputs and the weights cross the DMA; those that do not
// fit go to a scratch binding. Every layer is tiled (tiling.h) and its steps
// are software-pipelined across the whole chain: the next step's loads and
// the previous step's stores are issued while the current step computes.
// SYNCs are placed by tracking what each engine touched since the last one,
// so a stream never reads data before it has landed, never overwrites data
// still being read, and never queues more than 16 DMA_READs.
//
// Weights and per-channel parameters are packed at compile time into one
// byte array (the contents of a read-only binding) in the order the stream
// loads them; weight memory holds every block at a fixed address when the
// whole chain fits, else blocks alternate between its two halves.
#ifndef OSPREY_COMPILER_TARGETS_NPU_STREAM_EMITTER_H_
#define OSPREY_COMPILER_TARGETS_NPU_STREAM_EMITTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/targets/npu/npu_config.h"
#include "compiler/targets/npu/npu_layer.h"
#include "compiler/targets/npu/tiling.h"
#include "drivers/npu/schema/npu_isa.h"

namespace osprey::compiler::npu {

struct NpuChain {
  // In execution order. Operands are bindings or chain tensors; a tensor is
  // produced by exactly one earlier layer.
  std::vector<NpuLayer> layers;
  // Read-only binding holding CompiledStream::weights (unused, and not
  // counted in the stream's bindings, when no layer has weights).
  uint32_t weightBinding = 0;
  // Binding for intermediates that do not stay in SRAM (written and read by
  // the stream; CompiledStream::scratchBytes long).
  uint32_t scratchBinding = 0;
};

struct EmitOptions {
  // SRAM the stream may use, from address 0 (0: all of
  // NpuConfig::streamSramBytes()).
  uint64_t sramBytes = 0;
  // Keep chain tensors in SRAM when they fit (false: spill all of them).
  bool keepResident = true;
};

struct LayerReport {
  std::string name;
  Tiling tiling;
  LayerCost estimate; // Alone, with the chain's residency.
  bool inputResident = false, outputResident = false;
};

struct CompiledStream {
  std::vector<uint32_t> words; // Ends with END.
  std::vector<npu_relocation_t> relocations;
  std::vector<uint8_t> weights; // Contents of the weight binding.
  uint64_t scratchBytes = 0;    // 0: the scratch binding is not used.
  uint32_t bindingCount = 0;
  uint32_t bindingWriteMask = 0;
  std::vector<LayerReport> layers;
  // SRAM kept for resident tensors, and cycles of the whole stream under the
  // cycle model (engines overlapped between SYNCs).
  uint64_t residentBytes = 0;
  uint64_t estimatedCycles = 0;
  uint32_t syncCount = 0;
};

// Compiles |chain| into one command stream. INVALID_ARGUMENT for an
// inconsistent chain (unknown tensor, binding collisions, more than 32
// bindings), UNIMPLEMENTED (naming the layer) for what npu-v1 or the tiler
// cannot do.
absl::StatusOr<CompiledStream> emitChain(const NpuChain &chain,
                                         const NpuConfig &config,
                                         const EmitOptions &options = {});

// One export of an npu-v1 executable.
struct BlobExportSpec {
  std::string name;
  const CompiledStream *stream = nullptr; // Borrowed for the call.
};

// Serializes exports into an npu-v1 blob (drivers/npu/builder does the
// byte layout). INVALID_ARGUMENT for an empty or duplicate name or no
// exports.
absl::StatusOr<std::vector<uint8_t>>
writeBlob(const std::vector<BlobExportSpec> &exports);

} // namespace osprey::compiler::npu

#endif // OSPREY_COMPILER_TARGETS_NPU_STREAM_EMITTER_H_
