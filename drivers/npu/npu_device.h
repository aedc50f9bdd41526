// The npu device: a simulated int8 NPU behind the HAL.
//
// Memory: host buffers reach the device through per-job IOMMU windows with
// exactly the access each binding needs (read-only unless the export writes
// it); device-local buffers live in an SRAM pool the host cannot map. See
// NpuAllocator.
//
// Queue semantics. Submissions run in FIFO order on the device's queue
// thread, so QueueExecute returns before the work is done (asynchronous
// queue); submissions without signal semaphores, and every submission on
// builds without threads or with async=0, run inline after the queue drains
// so their errors can be returned. Each submission:
//   1. Wait semaphores are waited for, each until the wait timeout.
//   2. Command buffers run in order. Dispatches of "npu-v1" executables and
//      copy/update transfers become command streams (relocated, with their
//      windows) placed on the hardware's command ring; the driver rings the
//      doorbell and prepares the next job while the device runs, sleeping
//      on the completion interrupt only when the ring is full, before a
//      fill (written by the driver through its device mapping) and at the
//      end of each command buffer. The device runs jobs one at a time in
//      ring order, so barriers are satisfied by construction.
//   3. A device fault (bad stream, out-of-bounds SRAM, DMA outside a window
//      or through one without the needed access) halts the device: later
//      jobs are not run, and the submission fails with the fault's code and
//      description plus the export and command buffer index.
//      A job that does not complete within the job timeout resets the
//      device and fails with DEADLINE_EXCEEDED.
//   4. Signal semaphores are signalled on success and failed with the error
//      otherwise (with none, QueueExecute returns the error).
// Submissions are serialized by a device lock. Thread-safe.
#ifndef OSPREY_DRIVERS_NPU_NPU_DEVICE_H_
#define OSPREY_DRIVERS_NPU_NPU_DEVICE_H_

#include <cstdint>
#include <span>

#include "drivers/npu/npu_allocator.h"
#include "drivers/npu/npu_hardware.h"
#include "drivers/npu/sim/simulator.h"
#include "hal/device.h"
#include "runtime/base/arena.h"
#include "runtime/base/platform/platform.h"

namespace osprey::drivers::npu {

struct NpuDeviceOptions {
  sim::HardwareConfig hardware;
  // Top part of the SRAM reserved for device-local buffers; command streams
  // may address [0, sram_bytes - sram_pool_bytes) directly. Default: 1/4.
  uint64_t sram_pool_bytes = 128 * 1024;
  int64_t wait_timeout_ns = 10'000'000'000;  // Per wait semaphore.
  int64_t job_timeout_ns = 10'000'000'000;   // Watchdog per hardware job.
  NpuHardwareOptions hardware_options;
  // Run submissions with signal semaphores on a queue thread (ignored
  // without threads).
  bool async_queue = true;
};

// Device address of SRAM byte 0 in the device's address space (the SRAM
// aperture); host windows are placed below it.
inline constexpr uint32_t kSramAperture = 0xF0000000u;
inline constexpr uint32_t kHostWindowBase = 0x10000000u;

class NpuDevice final : public hal::Device {
 public:
  // |host_allocator| is borrowed for the device's lifetime. INVALID_ARGUMENT
  // for a bad hardware config or a pool larger than the SRAM.
  static StatusOr<ref_ptr<NpuDevice>> Create(const NpuDeviceOptions& options,
                                             osprey::Allocator* host_allocator);

  // Applies key=value |params| to |options|: pes (64|128|256), sram_kib,
  // weight_kib, dma_bytes_per_cycle, dma_setup_cycles, mode (output|input),
  // sram_pool_kib, wait_timeout_ms, job_timeout_ms, inline (0|1), async
  // (0|1). Unknown
  // keys and malformed values are INVALID_ARGUMENT.
  static Status ParseParams(std::span<const hal::DeviceParam> params, NpuDeviceOptions* options);

  ~NpuDevice() override;

  const char* id() const override { return "npu"; }
  hal::Allocator* allocator() const override { return allocator_.get(); }
  osprey::Allocator* host_allocator() const override { return host_allocator_; }

  StatusOr<ref_ptr<hal::CommandBuffer>> CreateCommandBuffer(hal::CommandBufferMode mode) override;
  StatusOr<ref_ptr<hal::Semaphore>> CreateSemaphore(uint64_t initial_value) override;
  StatusOr<ref_ptr<hal::ExecutableCache>> CreateExecutableCache() override;

  // See the file comment. INVALID_ARGUMENT for mismatched semaphore lists,
  // foreign command buffers or non-advancing signal values;
  // FAILED_PRECONDITION for command buffers not ended.
  Status QueueExecute(const hal::SemaphoreList& wait,
                      std::span<hal::CommandBuffer* const> command_buffers,
                      const hal::SemaphoreList& signal) override;

  // Counters of every job run so far (cycles, MACs, DMA bytes).
  sim::Counters counters();
  // Counters and configuration by key: "npu.total_cycles",
  // "npu.compute_cycles", "npu.dma_cycles", "npu.mac_cycles", "npu.macs",
  // "npu.dma_bytes_read", "npu.dma_bytes_written", "npu.instructions",
  // "npu.pes", "npu.sram_bytes", "npu.weight_memory_bytes".
  StatusOr<int64_t> QueryI64(const char* key) override;
  const NpuDeviceOptions& options() const { return options_; }
  // The hardware model (registers, simulator); borrowed.
  NpuHardware* hardware() const { return hardware_; }

 private:
  friend class osprey::Allocator;
  friend class NpuExecutor;
  NpuDevice(const NpuDeviceOptions& options, osprey::Allocator* host_allocator)
      : options_(options), host_allocator_(host_allocator), scratch_(host_allocator) {}

  struct Submission;

  Status Execute(const hal::SemaphoreList& wait,
                 std::span<hal::CommandBuffer* const> command_buffers);
  // Executes and then signals or fails |signal|; returns the execution
  // error when there is no signal semaphore to carry it.
  Status ExecuteAndSignal(const hal::SemaphoreList& wait,
                          std::span<hal::CommandBuffer* const> command_buffers,
                          const hal::SemaphoreList& signal);
  Status Enqueue(const hal::SemaphoreList& wait,
                 std::span<hal::CommandBuffer* const> command_buffers,
                 const hal::SemaphoreList& signal);
  void DrainQueue();
  static void QueueMain(void* arg);

  NpuDeviceOptions options_;
  osprey::Allocator* host_allocator_;
  NpuHardware* hardware_ = nullptr;
  ref_ptr<NpuAllocator> allocator_;
  platform::Mutex mutex_;  // Serializes submissions.
  Arena scratch_;          // Per-submission streams and windows.
  sim::Counters counters_;

  // The submission queue (FIFO), guarded by queue_mutex_.
  bool async_ = false;
  platform::Mutex queue_mutex_;
  platform::ConditionVariable queue_cv_;
  platform::Thread queue_thread_;
  Submission* queue_head_ = nullptr;
  Submission* queue_tail_ = nullptr;
  bool queue_busy_ = false;
  bool queue_shutdown_ = false;
};

}  // namespace osprey::drivers::npu

#endif  // OSPREY_DRIVERS_NPU_NPU_DEVICE_H_
