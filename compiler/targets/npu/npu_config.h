// The npu-v1 accelerator configuration the compiler targets, parsed from the
// --accelerator flag syntax: "npu-v1" or "npu-v1:key=value,...". The keys,
// ranges and defaults are the simulator's device parameters (docs/npu.md,
// section 5), so one compiled stream runs on a device created with the same
// values.
#ifndef OSPREY_COMPILER_TARGETS_NPU_NPU_CONFIG_H_
#define OSPREY_COMPILER_TARGETS_NPU_NPU_CONFIG_H_

#include "absl/strings/string_view.h"
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "drivers/npu/sim/simulator.h"

namespace osprey::compiler::npu {

enum class PeMapping : uint8_t {
  // Array rows take output pixels, columns output channels.
  OutputParallel,
  // Array rows take input channels, columns output channels.
  InputParallel,
};

struct NpuConfig {
  uint32_t peCount = 128;            // pes: 64, 128 or 256.
  uint64_t sramBytes = 512 * 1024;   // sram: 256 KiB .. 256 MiB.
  uint64_t poolBytes = 128 * 1024;   // pool: default sram / 4, < sram.
  uint64_t weightBytes = 256 * 1024; // wmem: 16 KiB .. 256 MiB.
  uint32_t dmaBytesPerCycle = 16;    // dma_bw: 1 .. 256.
  uint32_t dmaSetupCycles = 64;      // dma_setup: 0 .. 65536.
  PeMapping mapping = PeMapping::OutputParallel; // mode: output | input.

  // PE array rows x columns: 64 = 8x8, 128 = 8x16, 256 = 16x16.
  uint32_t arrayRows() const { return peCount == 256 ? 16 : 8; }
  uint32_t arrayCols() const { return peCount / arrayRows(); }
  // The SRAM a command stream may address: everything below the pool.
  uint64_t streamSramBytes() const { return sramBytes - poolBytes; }

  // The flag form of this configuration ("npu-v1:pes=64,sram=256KiB,...").
  std::string toString() const;
};

// Parses "npu-v1" or "npu-v1:key=value,...". Keys: pes, sram, pool, wmem
// (sizes as bytes or with a KiB/MiB suffix; whole KiB, as the device takes
// them), dma_bw, dma_setup, mode=output|input. INVALID_ARGUMENT naming the
// key for an unknown key, a repeated key, a malformed value or one out of
// range, and for an accelerator other than npu-v1.
absl::StatusOr<NpuConfig> parseNpuConfig(absl::string_view spec);

// The simulator's hardware description of |config| (tests, benchmarks).
drivers::npu::sim::HardwareConfig toSimConfig(const NpuConfig &config);

} // namespace osprey::compiler::npu

#endif // OSPREY_COMPILER_TARGETS_NPU_NPU_CONFIG_H_
