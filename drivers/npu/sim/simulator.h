// Functional and cycle-level simulator of the npu-v1 NPU.
//
// Executes relocated command streams (see drivers/npu/schema/npu_isa.h)
// bit-exactly against the device's SRAM and weight memory, reaching system
// memory only through the windows the driver mapped (an IOMMU/MPU). Every
// instruction is validated before it runs; a violation stops the stream
// with a Fault that names the instruction, its opcode and what was wrong.
// No OS assumptions and no allocation after Create(): usable inline on bare
// metal or from the driver's device thread.
#ifndef OSPREY_DRIVERS_NPU_SIM_SIMULATOR_H_
#define OSPREY_DRIVERS_NPU_SIM_SIMULATOR_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "drivers/npu/schema/npu_isa.h"
#include "runtime/base/allocator.h"
#include "runtime/base/ref_ptr.h"
#include "runtime/base/status.h"

namespace osprey::drivers::npu::sim {

//===----------------------------------------------------------------------===//
// Hardware configuration
//===----------------------------------------------------------------------===//

// How the PE array is mapped onto a layer (see docs/npu.md, "Cycle model").
enum class ParallelMode : uint8_t {
  // Array columns take output channels, rows take output pixels.
  kOutputParallel = 0,
  // Array columns take output channels, rows take input channels (adder tree).
  kInputParallel = 1,
};

struct HardwareConfig {
  uint32_t pe_count = 128;                    // 64, 128 or 256 MAC units.
  uint64_t sram_bytes = 512 * 1024;           // 256 KiB .. 256 MiB.
  uint64_t weight_memory_bytes = 256 * 1024;  // 16 KiB .. 256 MiB.
  uint32_t dma_bytes_per_cycle = 16;          // 1 .. 256.
  uint32_t dma_setup_cycles = 64;             // Per DMA instruction, 0 .. 65536.
  ParallelMode mode = ParallelMode::kOutputParallel;

  // PE array rows x columns: 64 = 8x8, 128 = 8x16, 256 = 16x16.
  uint32_t array_rows() const { return pe_count == 64 ? 8 : pe_count == 128 ? 8 : 16; }
  uint32_t array_cols() const { return pe_count / array_rows(); }
};

// INVALID_ARGUMENT (naming the field and the allowed values) unless every
// field of |config| is in range.
Status ValidateHardwareConfig(const HardwareConfig& config);

// Fixed pipeline cost of every compute instruction (fill and drain).
inline constexpr uint64_t kComputeOverheadCycles = 16;
// DMA transfers the hardware queues between two SYNCs.
inline constexpr uint32_t kMaxOutstandingDma = 16;

//===----------------------------------------------------------------------===//
// System-memory windows (the device's IOMMU table)
//===----------------------------------------------------------------------===//

enum WindowAccess : uint8_t {
  kWindowRead = 1u << 0,   // DMA_READ may read it.
  kWindowWrite = 1u << 1,  // DMA_WRITE may write it.
};

// |length| bytes of host memory at |host| that the device sees at
// [device_address, device_address + length). |host| is borrowed for the
// duration of the Execute() call that receives it.
struct MemoryWindow {
  uint32_t device_address = 0;
  uint32_t length = 0;
  uint8_t* host = nullptr;
  uint8_t access = 0;  // WindowAccess bits.
};

//===----------------------------------------------------------------------===//
// Faults and counters
//===----------------------------------------------------------------------===//

enum class FaultKind : uint8_t {
  kNone = 0,
  kMalformedStream,    // Truncated, missing END, non-zero reserved bits.
  kBadOpcode,          // Opcode not in npu-v1.
  kBadRegister,        // SET_REG of a register index that does not exist.
  kRegisterValue,      // SET_REG value outside the register's range.
  kInvalidGeometry,    // Registers inconsistent for the instruction.
  kSramOutOfBounds,    // Access past the end of SRAM.
  kWeightOutOfBounds,  // Access past the end of weight memory.
  kUnmappedAccess,     // DMA to system memory with no window.
  kAccessViolation,    // DMA through a window lacking read/write access.
  kHazard,             // Data used before a SYNC made it valid.
  kParameterValue,     // A per-channel multiplier or shift outside its range.
};
const char* FaultKindName(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::kNone;
  uint32_t instruction_index = 0;  // 0-based, counting SET_REG as one.
  uint32_t word_offset = 0;        // Of the faulting instruction word.
  uint8_t opcode = 0;
  char message[224] = {};          // What was out of bounds, NUL-terminated.
};

// Index of an opcode in Counters::cycles_by_kind (kOpKindCount if unknown).
enum OpKind : uint8_t {
  kKindSetReg, kKindSync, kKindDmaRead, kKindDmaWrite, kKindConv, kKindConvRelu,
  kKindDepthConv, kKindMatMul, kKindRelu, kKindLeakyRelu, kKindPool, kKindAbs,
  kKindMin, kKindMax, kKindAdd, kKindAdd32, kOpKindCount
};
OpKind OpKindOf(uint32_t opcode);
// "CONV", "DMA_READ", ... ("?" for unknown opcodes).
const char* OpcodeName(uint32_t opcode);

struct Counters {
  uint64_t total_cycles = 0;    // Stream start to END, DMA and compute overlapped.
  uint64_t compute_cycles = 0;  // Busy cycles of the compute engine.
  uint64_t dma_cycles = 0;      // Busy cycles of the DMA engine.
  uint64_t mac_cycles = 0;      // Busy cycles of MAC instructions.
  uint64_t macs = 0;            // Useful multiply-accumulates.
  uint64_t dma_bytes_read = 0;  // System memory -> local.
  uint64_t dma_bytes_written = 0;
  uint64_t instructions = 0;
  uint64_t cycles_by_kind[kOpKindCount] = {};
  uint64_t count_by_kind[kOpKindCount] = {};

  // macs / (pe_count * mac_cycles): how busy the PEs are while a MAC
  // instruction runs. 0 if no MAC instruction ran.
  double pe_utilization(uint32_t pe_count) const;
  void Accumulate(const Counters& other);
};

//===----------------------------------------------------------------------===//
// Simulator
//===----------------------------------------------------------------------===//

// One NPU: SRAM, weight memory, register file, cycle counters. Not
// thread-safe: one Execute() at a time (the driver's device thread).
class Simulator : public RefObject {
 public:
  // Creates a device with zeroed memories from |allocator| (borrowed; must
  // outlive the simulator). INVALID_ARGUMENT for a bad |config|,
  // RESOURCE_EXHAUSTED if the memories cannot be allocated.
  static StatusOr<ref_ptr<Simulator>> Create(const HardwareConfig& config,
                                             osprey::Allocator* allocator);

  // Runs the instruction words of one stream (relocations applied) from a
  // reset register file. |windows| is the IOMMU table for this run.
  // On a fault, execution stops: |out_fault| (optional) describes it and
  // the status carries the same text with code INVALID_ARGUMENT (malformed
  // stream, bad registers or geometry), OUT_OF_RANGE (local memory bounds),
  // PERMISSION_DENIED (unmapped or wrong access) or FAILED_PRECONDITION
  // (hazard). |out_counters| (optional) receives this run's counters even on
  // a fault (up to the faulting instruction).
  Status Execute(std::span<const uint32_t> words, std::span<const MemoryWindow> windows,
                 Counters* out_counters, Fault* out_fault);

  // Limits the SRAM addresses instructions may name directly (IFM/OFM,
  // DMA local addresses) to [0, |bytes|); the rest of the SRAM is reachable
  // only through the DMA windows the driver maps (device-local buffers).
  // Clamped to the SRAM size; the default is the whole SRAM.
  void set_stream_sram_bytes(uint64_t bytes) {
    stream_sram_bytes_ = bytes < config_.sram_bytes ? bytes : config_.sram_bytes;
  }
  uint64_t stream_sram_bytes() const { return stream_sram_bytes_; }

  const HardwareConfig& config() const { return config_; }
  // Device-local memories, for drivers moving data in and out of them
  // (device-local buffers) and for tests. Borrowed; live as long as this.
  std::span<uint8_t> sram() { return {sram_, static_cast<size_t>(config_.sram_bytes)}; }
  std::span<uint8_t> weight_memory() {
    return {weights_, static_cast<size_t>(config_.weight_memory_bytes)};
  }

  ~Simulator() override;

 private:
  friend class osprey::Allocator;  // Allocator::New constructs it for MakeRef.
  Simulator(const HardwareConfig& config, osprey::Allocator* allocator)
      : config_(config), allocator_(allocator), stream_sram_bytes_(config.sram_bytes) {}

  struct Run;

  HardwareConfig config_;
  osprey::Allocator* allocator_;
  uint64_t stream_sram_bytes_;
  uint8_t* sram_ = nullptr;
  uint8_t* weights_ = nullptr;
};

}  // namespace osprey::drivers::npu::sim

#endif  // OSPREY_DRIVERS_NPU_SIM_SIMULATOR_H_
