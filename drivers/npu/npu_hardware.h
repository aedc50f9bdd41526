// The NPU as the driver sees it: a register block, a command ring, a
// doorbell and a completion interrupt, with the simulator behind them.
//
// The driver writes a job descriptor into the next ring slot, advances
// RING_HEAD and rings the doorbell. The device consumes slots in order,
// runs each job's command stream on the simulator, stores the result in the
// descriptor, advances COMPLETED and raises the interrupt (JOB_DONE or
// FAULT in IRQ_STATUS). On hosted builds the device is its own thread; with
// OSPREY_HAVE_THREADS=0 (or NpuHardwareOptions::inline_execution) the
// doorbell runs the job before it returns, as a bare-metal polling driver
// would observe it.
//
// A fault halts the device: jobs still on the ring (and any submitted before
// the driver acknowledges the fault by writing FAULT to IRQ_STATUS) complete
// with ABORTED without running, so nothing runs on top of a failed result.
#ifndef OSPREY_DRIVERS_NPU_NPU_HARDWARE_H_
#define OSPREY_DRIVERS_NPU_NPU_HARDWARE_H_

#include <atomic>
#include <cstdint>
#include <span>

#include "drivers/npu/sim/simulator.h"
#include "runtime/base/allocator.h"
#include "runtime/base/platform/platform.h"
#include "runtime/base/status.h"

namespace osprey::drivers::npu {

// Register indices of the MMIO block (32-bit registers).
enum HwRegister : uint32_t {
  kHwRegId = 0,          // RO: 'N','P','U',version.
  kHwRegStatus = 1,      // RO: kHwStatus* bits.
  kHwRegRingHead = 2,    // RW (driver): next slot the driver fills.
  kHwRegRingTail = 3,    // RO: next slot the device consumes.
  kHwRegCompleted = 4,   // RO: sequence number of the last finished job.
  kHwRegIrqStatus = 5,   // RO, write 1 to clear: kHwIrq* bits.
  kHwRegFaultJob = 6,    // RO: sequence of the last faulting job.
  kHwRegFaultKind = 7,   // RO: sim::FaultKind of that fault.
  kHwRegDoorbell = 8,    // WO: any write starts the device on new slots.
  kHwRegisterCount = 9,
};
inline constexpr uint32_t kHwId = 0x4E505501;  // "NPU" v1
inline constexpr uint32_t kHwStatusBusy = 1u << 0;
inline constexpr uint32_t kHwStatusHung = 1u << 1;
inline constexpr uint32_t kHwStatusHalted = 1u << 2;  // After a fault, until acknowledged.
inline constexpr uint32_t kHwIrqJobDone = 1u << 0;
inline constexpr uint32_t kHwIrqFault = 1u << 1;

// One job: a relocated command stream and the IOMMU windows it may use.
// The descriptor and everything it points to are borrowed by the device
// from Submit() until the job completes (or Reset() returns).
struct HwJob {
  std::span<const uint32_t> words;
  std::span<const sim::MemoryWindow> windows;
  // Written by the device when the job finishes.
  Status status;
  sim::Counters counters;
  sim::Fault fault;
};

struct NpuHardwareOptions {
  // Run jobs inside the doorbell write instead of on a device thread.
  // Forced on in builds without threads.
  bool inline_execution = false;
  // Test hook: the device ignores the doorbell, as hung hardware would, so
  // the driver's timeout and reset paths can be exercised.
  bool simulate_hang = false;
};

// Thread-safe: one driver thread submits and waits; the device thread runs.
class NpuHardware {
 public:
  static constexpr uint32_t kRingSlots = 8;

  // Creates the device (and starts its thread). |allocator| is borrowed for
  // the lifetime of the hardware. Destroy with Destroy().
  static Status Create(const sim::HardwareConfig& config, const NpuHardwareOptions& options,
                       osprey::Allocator* allocator, NpuHardware** out_hardware);
  // Stops the device thread and frees everything.
  static void Destroy(NpuHardware* hardware);

  // MMIO access.
  uint32_t ReadRegister(HwRegister reg);
  void WriteRegister(HwRegister reg, uint32_t value);

  // Places |job| in the next ring slot and rings the doorbell. Returns the
  // job's sequence number (starting at 1). RESOURCE_EXHAUSTED if the ring is
  // full.
  StatusOr<uint32_t> Submit(HwJob* job);

  // Blocks until COMPLETED reaches |sequence| (the completion interrupt) or
  // |deadline_ns| passes: DEADLINE_EXCEEDED. Clears JOB_DONE; a FAULT stays
  // set (and the device halted) until acknowledged.
  Status WaitForCompletion(uint32_t sequence, int64_t deadline_ns);

  // Drops every queued job after waiting for the one in flight; the ring is
  // empty afterwards, and the hang hook and any fault halt are cleared.
  void Reset();

  // Borrowed; valid while the hardware lives. Only the device (thread) may
  // execute on it while jobs are queued.
  sim::Simulator* simulator() { return sim_.get(); }
  bool threaded() const { return threaded_; }

 private:
  NpuHardware(osprey::Allocator* allocator, const NpuHardwareOptions& options)
      : allocator_(allocator), options_(options) {}
  friend class osprey::Allocator;

  static void ThreadMain(void* arg);
  // Runs queued jobs until the ring is empty; called with |mutex_| held and
  // returns with it held.
  void DrainLocked();

  osprey::Allocator* allocator_;
  NpuHardwareOptions options_;
  ref_ptr<sim::Simulator> sim_;
  bool threaded_ = false;
  platform::Mutex mutex_;
  platform::ConditionVariable doorbell_;    // Driver -> device.
  platform::ConditionVariable interrupt_;   // Device -> driver.
  platform::Thread thread_;
  bool shutdown_ = false;
  bool busy_ = false;
  HwJob* ring_[kRingSlots] = {};
  uint32_t regs_[kHwRegisterCount] = {};
  uint32_t next_sequence_ = 1;
  uint32_t tail_sequence_ = 1;  // Sequence of the job in the tail slot.
};

}  // namespace osprey::drivers::npu

#endif  // OSPREY_DRIVERS_NPU_NPU_HARDWARE_H_
